package filter

import (
	"fmt"
	"strings"
)

// tokenKind classifies a lexer token.
type tokenKind uint8

const (
	tokEOF tokenKind = iota
	tokIdent
	tokString
	tokLong
	tokDouble
	tokKeyword // text holds the upper-cased keyword
	tokOp      // text holds the operator: = <> > >= < <= ( ) , + -
)

func (k tokenKind) String() string {
	switch k {
	case tokEOF:
		return "end of expression"
	case tokIdent:
		return "identifier"
	case tokString:
		return "string"
	case tokLong, tokDouble:
		return "number"
	case tokKeyword:
		return "keyword"
	default:
		return "operator"
	}
}

type token struct {
	kind tokenKind
	text string // identifier name, unescaped string, number text, keyword, operator
	pos  int    // byte offset of the token's first character
}

func (t token) describe() string {
	switch t.kind {
	case tokEOF:
		return "end of expression"
	case tokString:
		return fmt.Sprintf("'%s'", t.text)
	default:
		return fmt.Sprintf("%q", t.text)
	}
}

var keywords = map[string]bool{
	"AND": true, "OR": true, "NOT": true, "BETWEEN": true, "IN": true, "IS": true,
	"NULL": true, "TRUE": true, "FALSE": true, "CONTAINS": true, "STARTSWITH": true, "ENDSWITH": true,
}

// lexer splits an expression into tokens on demand.
type lexer struct {
	src string
	pos int
}

func isIdentStart(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '_' || c == '$'
}

func isIdentPart(c byte) bool { return isIdentStart(c) || c >= '0' && c <= '9' }

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

// skip moves past white space and comments.
func (l *lexer) skip() error {
	for l.pos < len(l.src) {
		c := l.src[l.pos]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f':
			l.pos++
		case c == '-' && strings.HasPrefix(l.src[l.pos:], "--"):
			end := strings.IndexAny(l.src[l.pos:], "\n\r")
			if end < 0 {
				l.pos = len(l.src)
			} else {
				l.pos += end
			}
		case c == '/' && strings.HasPrefix(l.src[l.pos:], "/*"):
			end := strings.Index(l.src[l.pos+2:], "*/")
			if end < 0 {
				return &ParseError{Pos: l.pos, Msg: "unterminated comment"}
			}
			l.pos += 2 + end + 2
		default:
			return nil
		}
	}
	return nil
}

// next returns the next token.
func (l *lexer) next() (token, error) {
	if err := l.skip(); err != nil {
		return token{}, err
	}
	start := l.pos
	if l.pos >= len(l.src) {
		return token{kind: tokEOF, pos: start}, nil
	}
	c := l.src[l.pos]
	switch {
	case isIdentStart(c):
		for l.pos < len(l.src) && isIdentPart(l.src[l.pos]) {
			l.pos++
		}
		word := l.src[start:l.pos]
		if up := strings.ToUpper(word); keywords[up] {
			return token{kind: tokKeyword, text: up, pos: start}, nil
		}
		return token{kind: tokIdent, text: word, pos: start}, nil
	case c == '\'':
		return l.lexString()
	case isDigit(c) || c == '.' && l.pos+1 < len(l.src) && isDigit(l.src[l.pos+1]):
		return l.lexNumber()
	}
	two := ""
	if l.pos+1 < len(l.src) {
		two = l.src[l.pos : l.pos+2]
	}
	switch two {
	case "<>", ">=", "<=":
		l.pos += 2
		return token{kind: tokOp, text: two, pos: start}, nil
	}
	switch c {
	case '=', '>', '<', '(', ')', ',', '+', '-':
		l.pos++
		return token{kind: tokOp, text: string(c), pos: start}, nil
	}
	return token{}, &ParseError{Pos: start, Msg: fmt.Sprintf("unexpected character %q", rune(c))}
}

func (l *lexer) lexString() (token, error) {
	start := l.pos
	l.pos++ // opening quote
	var b strings.Builder
	for l.pos < len(l.src) {
		c := l.src[l.pos]
		if c == '\'' {
			if l.pos+1 < len(l.src) && l.src[l.pos+1] == '\'' {
				b.WriteByte('\'')
				l.pos += 2
				continue
			}
			l.pos++
			return token{kind: tokString, text: b.String(), pos: start}, nil
		}
		b.WriteByte(c)
		l.pos++
	}
	return token{}, &ParseError{Pos: start, Msg: "unterminated string literal"}
}

func (l *lexer) lexNumber() (token, error) {
	start := l.pos
	src := l.src
	if src[l.pos] == '0' && l.pos+1 < len(src) && (src[l.pos+1] == 'x' || src[l.pos+1] == 'X') {
		l.pos += 2
		digits := l.pos
		for l.pos < len(src) && (isDigit(src[l.pos]) || src[l.pos] >= 'a' && src[l.pos] <= 'f' || src[l.pos] >= 'A' && src[l.pos] <= 'F') {
			l.pos++
		}
		if l.pos == digits {
			return token{}, &ParseError{Pos: start, Msg: "hexadecimal literal without digits"}
		}
		text := src[start:l.pos]
		if l.pos < len(src) && (src[l.pos] == 'l' || src[l.pos] == 'L') {
			l.pos++
		}
		return l.numberEnd(token{kind: tokLong, text: text, pos: start})
	}
	for l.pos < len(src) && isDigit(src[l.pos]) {
		l.pos++
	}
	kind := tokLong
	if l.pos < len(src) && src[l.pos] == '.' {
		kind = tokDouble
		l.pos++
		for l.pos < len(src) && isDigit(src[l.pos]) {
			l.pos++
		}
	}
	if l.pos < len(src) && (src[l.pos] == 'e' || src[l.pos] == 'E') {
		kind = tokDouble
		l.pos++
		if l.pos < len(src) && (src[l.pos] == '+' || src[l.pos] == '-') {
			l.pos++
		}
		digits := l.pos
		for l.pos < len(src) && isDigit(src[l.pos]) {
			l.pos++
		}
		if l.pos == digits {
			return token{}, &ParseError{Pos: start, Msg: "exponent without digits"}
		}
	}
	text := src[start:l.pos]
	if l.pos < len(src) {
		switch src[l.pos] {
		case 'l', 'L':
			if kind == tokLong {
				l.pos++
			}
		case 'd', 'D', 'f', 'F':
			kind = tokDouble
			l.pos++
		}
	}
	return l.numberEnd(token{kind: kind, text: text, pos: start})
}

// numberEnd refuses a number glued to an identifier ("12abc").
func (l *lexer) numberEnd(t token) (token, error) {
	if l.pos < len(l.src) && (isIdentPart(l.src[l.pos]) || l.src[l.pos] == '.') {
		return token{}, &ParseError{Pos: t.pos, Msg: fmt.Sprintf("malformed number %q", l.src[t.pos:l.pos+1])}
	}
	return t, nil
}
