package filter

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// MaxLength is the longest expression Compile accepts, in bytes.
const MaxLength = 64 << 10

// MaxDepth bounds the nesting of parentheses, NOT and unary signs.
const MaxDepth = 100

// Expression is a compiled SQL92 selector. It is immutable and safe for
// concurrent use.
type Expression struct {
	src  string
	root node
}

// String returns the source text.
func (e *Expression) String() string { return e.src }

// Compile parses a SQL92 selector. Errors are *ParseError and name the
// position of the problem.
func Compile(src string) (*Expression, error) {
	if len(src) > MaxLength {
		return nil, &ParseError{Expr: src[:64], Pos: MaxLength, Msg: fmt.Sprintf("expression longer than %d bytes", MaxLength)}
	}
	p := &parser{lex: lexer{src: src}}
	root, err := p.parse()
	if err != nil {
		if pe, ok := err.(*ParseError); ok {
			pe.Expr = src
		}
		return nil, err
	}
	return &Expression{src: src, root: root}, nil
}

type parser struct {
	lex    lexer
	tok    token // current token
	peeked bool
	depth  int
}

func (p *parser) parse() (node, error) {
	if err := p.advance(); err != nil {
		return nil, err
	}
	if p.tok.kind == tokEOF {
		return nil, &ParseError{Pos: 0, Msg: "empty expression"}
	}
	start := p.tok.pos
	n, err := p.orExpr()
	if err != nil {
		return nil, err
	}
	if p.tok.kind != tokEOF {
		return nil, p.unexpected("AND, OR or the end of the expression")
	}
	if !n.boolean() {
		return nil, &ParseError{Pos: start, Msg: "expression will not result in a boolean value"}
	}
	return n, nil
}

func (p *parser) advance() error {
	t, err := p.lex.next()
	if err != nil {
		return err
	}
	p.tok = t
	return nil
}

func (p *parser) unexpected(want string) error {
	return &ParseError{Pos: p.tok.pos, Msg: fmt.Sprintf("unexpected %s, expected %s", p.tok.describe(), want)}
}

func (p *parser) isKeyword(k string) bool { return p.tok.kind == tokKeyword && p.tok.text == k }

func (p *parser) isOp(op string) bool { return p.tok.kind == tokOp && p.tok.text == op }

func (p *parser) enter() error {
	p.depth++
	if p.depth > MaxDepth {
		return &ParseError{Pos: p.tok.pos, Msg: fmt.Sprintf("expression nested deeper than %d", MaxDepth)}
	}
	return nil
}

func (p *parser) leave() { p.depth-- }

func (p *parser) orExpr() (node, error) {
	return p.boolChain("OR", p.andExpr, func(l, r node) node { return &orNode{l, r} })
}

func (p *parser) andExpr() (node, error) {
	return p.boolChain("AND", p.notExpr, func(l, r node) node { return &andNode{l, r} })
}

// boolChain parses operand (keyword operand)* left-associatively; both
// operands of each keyword must be boolean, and errors point at the
// keyword.
func (p *parser) boolChain(keyword string, operand func() (node, error), join func(l, r node) node) (node, error) {
	left, err := operand()
	if err != nil {
		return nil, err
	}
	for p.isKeyword(keyword) {
		pos := p.tok.pos
		if err := p.advance(); err != nil {
			return nil, err
		}
		right, err := operand()
		if err != nil {
			return nil, err
		}
		if err := needBool(left, pos, keyword); err != nil {
			return nil, err
		}
		if err := needBool(right, pos, keyword); err != nil {
			return nil, err
		}
		left = join(left, right)
	}
	return left, nil
}

func needBool(n node, pos int, op string) error {
	if !n.boolean() {
		return &ParseError{Pos: pos, Msg: fmt.Sprintf("operand of %s is not a boolean expression", op)}
	}
	return nil
}

func (p *parser) notExpr() (node, error) {
	if !p.isKeyword("NOT") {
		return p.predicate()
	}
	pos := p.tok.pos
	if err := p.enter(); err != nil {
		return nil, err
	}
	defer p.leave()
	if err := p.advance(); err != nil {
		return nil, err
	}
	inner, err := p.notExpr()
	if err != nil {
		return nil, err
	}
	if err := needBool(inner, pos, "NOT"); err != nil {
		return nil, err
	}
	return &notNode{inner}, nil
}

var compareOps = map[string]cmpOp{"=": opEq, "<>": opNe, ">": opGt, ">=": opGe, "<": opLt, "<=": opLe}

func (p *parser) predicate() (node, error) {
	left, err := p.value()
	if err != nil {
		return nil, err
	}
	if p.tok.kind == tokOp {
		if op, ok := compareOps[p.tok.text]; ok {
			pos := p.tok.pos
			if err := p.advance(); err != nil {
				return nil, err
			}
			right, err := p.value()
			if err != nil {
				return nil, err
			}
			if err := checkCompare(left, right, op, pos); err != nil {
				return nil, err
			}
			return &cmpNode{op: op, left: left, right: right}, nil
		}
	}
	if p.tok.kind != tokKeyword {
		return left, nil
	}
	pos := p.tok.pos
	negate := false
	if p.isKeyword("NOT") {
		negate = true
		if err := p.advance(); err != nil {
			return nil, err
		}
		if p.tok.kind != tokKeyword {
			return nil, p.unexpected("BETWEEN, IN, CONTAINS, STARTSWITH or ENDSWITH after NOT")
		}
	}
	switch p.tok.text {
	case "BETWEEN":
		return p.between(left, negate, pos)
	case "IN":
		return p.in(left, negate, pos)
	case "CONTAINS", "STARTSWITH", "ENDSWITH":
		return p.stringMatch(left, negate, pos)
	case "IS":
		if negate {
			return nil, p.unexpected("BETWEEN, IN, CONTAINS, STARTSWITH or ENDSWITH after NOT")
		}
		if err := p.advance(); err != nil {
			return nil, err
		}
		if p.isKeyword("NOT") {
			negate = true
			if err := p.advance(); err != nil {
				return nil, err
			}
		}
		if !p.isKeyword("NULL") {
			return nil, p.unexpected("NULL")
		}
		if err := p.advance(); err != nil {
			return nil, err
		}
		if err := needValue(left, pos, "IS NULL"); err != nil {
			return nil, err
		}
		return &isNullNode{operand: left, not: negate}, nil
	}
	if negate {
		return nil, p.unexpected("BETWEEN, IN, CONTAINS, STARTSWITH or ENDSWITH after NOT")
	}
	return left, nil
}

func isParen(n node) bool { _, ok := n.(*parenNode); return ok }

// needValue refuses a bare boolean expression (a comparison, AND, ...) as
// the left operand of op; a parenthesized one is a value.
func needValue(left node, pos int, op string) error {
	if left.boolean() && !isParen(left) {
		return &ParseError{Pos: pos, Msg: op + " needs a value on its left"}
	}
	return nil
}

// checkCompare applies RocketMQ's compile-time operand checks: booleans
// only with = and <>, and string literals never with an ordering.
func checkCompare(left, right node, op cmpOp, pos int) error {
	for _, n := range []node{left, right} {
		if n.boolean() && !isBoolLiteral(n) && !isParen(n) {
			return &ParseError{Pos: pos, Msg: fmt.Sprintf("%s cannot compare a boolean expression", op)}
		}
		if op == opEq || op == opNe {
			continue
		}
		if c, ok := n.(*constNode); ok && c.v.kind != kindLong && c.v.kind != kindDouble {
			return &ParseError{Pos: pos, Msg: fmt.Sprintf("value %s cannot be compared with %s", c.v, op)}
		}
		if isBoolLiteral(n) {
			return &ParseError{Pos: pos, Msg: fmt.Sprintf("a boolean cannot be compared with %s", op)}
		}
	}
	return nil
}

func isBoolLiteral(n node) bool {
	c, ok := n.(*constNode)
	return ok && c.v.kind == kindBool
}

func (p *parser) between(left node, negate bool, pos int) (node, error) {
	if err := p.advance(); err != nil {
		return nil, err
	}
	low, err := p.value()
	if err != nil {
		return nil, err
	}
	if !p.isKeyword("AND") {
		return nil, p.unexpected("AND of BETWEEN")
	}
	if err := p.advance(); err != nil {
		return nil, err
	}
	high, err := p.value()
	if err != nil {
		return nil, err
	}
	for _, n := range []node{left, low, high} {
		if n.boolean() && !isParen(n) {
			return nil, &ParseError{Pos: pos, Msg: "BETWEEN needs values, not boolean expressions"}
		}
		if c, ok := n.(*constNode); ok && c.v.kind != kindLong && c.v.kind != kindDouble {
			return nil, &ParseError{Pos: pos, Msg: fmt.Sprintf("value %s cannot be used with BETWEEN", c.v)}
		}
	}
	lc, lok := low.(*constNode)
	hc, hok := high.(*constNode)
	if lok && hok {
		if c, err := compareNumbers(lc.v, hc.v); err == nil && c > 0 {
			return nil, &ParseError{Pos: pos, Msg: fmt.Sprintf("illegal BETWEEN: lower bound %s is greater than upper bound %s", lc.v, hc.v)}
		}
	}
	return &betweenNode{operand: left, low: low, high: high, not: negate}, nil
}

func (p *parser) in(left node, negate bool, pos int) (node, error) {
	if err := p.advance(); err != nil {
		return nil, err
	}
	if !p.isOp("(") {
		return nil, p.unexpected("( after IN")
	}
	set := map[string]struct{}{}
	for {
		if err := p.advance(); err != nil {
			return nil, err
		}
		if p.tok.kind != tokString {
			return nil, p.unexpected("a string literal in the IN list")
		}
		set[p.tok.text] = struct{}{}
		if err := p.advance(); err != nil {
			return nil, err
		}
		if p.isOp(")") {
			break
		}
		if !p.isOp(",") {
			return nil, p.unexpected(", or ) in the IN list")
		}
	}
	if err := p.advance(); err != nil {
		return nil, err
	}
	if err := needValue(left, pos, "IN"); err != nil {
		return nil, err
	}
	return &inNode{operand: left, set: set, not: negate}, nil
}

func (p *parser) stringMatch(left node, negate bool, pos int) (node, error) {
	kind := p.tok.text
	if err := p.advance(); err != nil {
		return nil, err
	}
	if p.tok.kind != tokString {
		return nil, p.unexpected("a string literal after " + kind)
	}
	pattern := p.tok.text
	if err := p.advance(); err != nil {
		return nil, err
	}
	if err := needValue(left, pos, kind); err != nil {
		return nil, err
	}
	var f func(s, sub string) bool
	switch kind {
	case "CONTAINS":
		f = strings.Contains
	case "STARTSWITH":
		f = strings.HasPrefix
	default:
		f = strings.HasSuffix
	}
	return &stringMatchNode{operand: left, pattern: pattern, name: kind, match: f, not: negate}, nil
}

// value := ( + | - ) value | primary
func (p *parser) value() (node, error) {
	if p.isOp("+") || p.isOp("-") {
		neg := p.tok.text == "-"
		pos := p.tok.pos
		if err := p.enter(); err != nil {
			return nil, err
		}
		defer p.leave()
		if err := p.advance(); err != nil {
			return nil, err
		}
		// A minus directly before a number literal is part of the literal,
		// so that -9223372036854775808 is representable.
		if neg && (p.tok.kind == tokLong || p.tok.kind == tokDouble) {
			n, err := p.number(true)
			if err != nil {
				return nil, err
			}
			return n, nil
		}
		inner, err := p.value()
		if err != nil {
			return nil, err
		}
		if inner.boolean() && !isParen(inner) {
			return nil, &ParseError{Pos: pos, Msg: "a sign cannot apply to a boolean expression"}
		}
		if c, ok := inner.(*constNode); ok && c.v.kind != kindLong && c.v.kind != kindDouble {
			return nil, &ParseError{Pos: pos, Msg: fmt.Sprintf("a sign cannot apply to %s", c.v)}
		}
		if !neg {
			return inner, nil
		}
		return &negNode{inner}, nil
	}
	return p.primary()
}

func (p *parser) primary() (node, error) {
	switch p.tok.kind {
	case tokIdent:
		n := &propNode{name: p.tok.text}
		return n, p.advance()
	case tokString:
		n := &constNode{v: value{kind: kindString, s: p.tok.text}}
		return n, p.advance()
	case tokLong, tokDouble:
		return p.number(false)
	case tokKeyword:
		switch p.tok.text {
		case "TRUE", "FALSE":
			n := &constNode{v: value{kind: kindBool, b: p.tok.text == "TRUE"}}
			return n, p.advance()
		case "NULL":
			n := &constNode{v: value{kind: kindNull}}
			return n, p.advance()
		}
	case tokOp:
		if p.tok.text == "(" {
			if err := p.enter(); err != nil {
				return nil, err
			}
			defer p.leave()
			if err := p.advance(); err != nil {
				return nil, err
			}
			inner, err := p.orExpr()
			if err != nil {
				return nil, err
			}
			if !p.isOp(")") {
				return nil, p.unexpected(")")
			}
			return &parenNode{inner}, p.advance()
		}
	}
	return nil, p.unexpected("a value, an identifier or (")
}

// number converts the current number token.
func (p *parser) number(negative bool) (node, error) {
	t := p.tok
	text := t.text
	if negative {
		text = "-" + text
	}
	var v value
	if t.kind == tokLong {
		var (
			n   int64
			err error
		)
		if strings.HasPrefix(t.text, "0x") || strings.HasPrefix(t.text, "0X") {
			var u uint64
			u, err = strconv.ParseUint(t.text[2:], 16, 64)
			if err == nil && u > math.MaxInt64 && !(negative && u == 1<<63) {
				err = strconv.ErrRange
			}
			n = int64(u)
			if negative {
				n = -n
			}
		} else {
			n, err = strconv.ParseInt(text, 10, 64)
		}
		if err != nil {
			return nil, &ParseError{Pos: t.pos, Msg: fmt.Sprintf("integer literal %s out of range", text)}
		}
		v = value{kind: kindLong, i: n}
	} else {
		f, err := strconv.ParseFloat(text, 64)
		if err != nil || math.IsInf(f, 0) {
			return nil, &ParseError{Pos: t.pos, Msg: fmt.Sprintf("decimal literal %s out of range", text)}
		}
		v = value{kind: kindDouble, f: f}
	}
	return &constNode{v: v}, p.advance()
}
