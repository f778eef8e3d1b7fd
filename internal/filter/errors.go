package filter

import (
	"errors"
	"fmt"
	"strings"
)

// ParseError is a compile failure; Pos is the 0-based byte offset in the
// expression where it was detected. Its text names the position so that a
// SUBSCRIPTION_PARSE_FAILED remark points at the error.
type ParseError struct {
	Expr string // the whole expression (filled by Compile)
	Pos  int
	Msg  string
}

func (e *ParseError) Error() string {
	line, col := 1, 1
	for i := 0; i < e.Pos && i < len(e.Expr); i++ {
		if e.Expr[i] == '\n' {
			line++
			col = 1
		} else {
			col++
		}
	}
	return fmt.Sprintf("filter: %s at position %d (line %d, column %d)%s", e.Msg, e.Pos, line, col, e.context())
}

// context quotes a short excerpt around the error with a marker.
func (e *ParseError) context() string {
	if e.Expr == "" {
		return ""
	}
	from := max(0, e.Pos-20)
	to := min(len(e.Expr), e.Pos+20)
	pos := min(e.Pos, len(e.Expr))
	ex := e.Expr[from:pos] + ">>>" + e.Expr[pos:to]
	ex = strings.NewReplacer("\n", " ", "\r", " ", "\t", " ").Replace(ex)
	return ": " + ex
}

// errEval is an evaluation failure (a value that cannot be converted, an
// ordering of strings); it makes the whole expression "no match".
var errEval = errors.New("filter: evaluation error")
