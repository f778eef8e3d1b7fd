package filter

import (
	"strconv"
	"strings"
)

// kind is a runtime value's type.
type kind uint8

const (
	kindNull kind = iota
	kindBool
	kindLong
	kindDouble
	kindString
)

// value is one runtime value; the zero value is NULL.
type value struct {
	kind kind
	b    bool
	i    int64
	f    float64
	s    string
}

func (v value) String() string {
	switch v.kind {
	case kindBool:
		return strings.ToUpper(strconv.FormatBool(v.b))
	case kindLong:
		return strconv.FormatInt(v.i, 10)
	case kindDouble:
		return strconv.FormatFloat(v.f, 'g', -1, 64)
	case kindString:
		return "'" + strings.ReplaceAll(v.s, "'", "''") + "'"
	default:
		return "NULL"
	}
}

var (
	vNull  = value{}
	vTrue  = value{kind: kindBool, b: true}
	vFalse = value{kind: kindBool}
)

func boolValue(b bool) value {
	if b {
		return vTrue
	}
	return vFalse
}

// Properties looks a property up by name; ok is false when it is absent
// (NULL). A plain map[string]string works through MapProperties.
type Properties interface {
	Get(name string) (string, bool)
}

// MapProperties adapts a map to Properties.
type MapProperties map[string]string

// Get implements Properties.
func (m MapProperties) Get(name string) (string, bool) {
	v, ok := m[name]
	return v, ok
}

// Match evaluates the expression against a message's properties and
// reports whether it is TRUE (NULL, FALSE and evaluation errors are no
// match). A nil map matches as if every property were absent.
func (e *Expression) Match(props map[string]string) bool {
	return e.MatchProperties(MapProperties(props))
}

// MatchProperties is Match over any property source.
func (e *Expression) MatchProperties(props Properties) bool {
	v, err := e.root.eval(props)
	return err == nil && v.kind == kindBool && v.b
}

// Evaluate returns the three-valued result: (true|false, true) or
// (false, false) for NULL; err reports an evaluation error.
func (e *Expression) Evaluate(props map[string]string) (result bool, known bool, err error) {
	v, err := e.root.eval(MapProperties(props))
	if err != nil {
		return false, false, err
	}
	if v.kind != kindBool {
		return false, false, nil
	}
	return v.b, true, nil
}

// node is one expression tree node.
type node interface {
	eval(p Properties) (value, error)
	// boolean reports whether the node yields a boolean (a predicate or
	// a logical operator), which the grammar needs to tell apart.
	boolean() bool
}

type constNode struct{ v value }

func (n *constNode) eval(Properties) (value, error) { return n.v, nil }
func (n *constNode) boolean() bool                  { return n.v.kind == kindBool }

type propNode struct{ name string }

func (n *propNode) eval(p Properties) (value, error) {
	if p == nil {
		return vNull, nil
	}
	s, ok := p.Get(n.name)
	if !ok {
		return vNull, nil
	}
	return value{kind: kindString, s: s}, nil
}
func (n *propNode) boolean() bool { return false }

type parenNode struct{ inner node }

func (n *parenNode) eval(p Properties) (value, error) { return n.inner.eval(p) }
func (n *parenNode) boolean() bool                    { return n.inner.boolean() }

// negNode is unary minus over a non-literal (literals are folded).
type negNode struct{ inner node }

func (n *negNode) eval(p Properties) (value, error) {
	v, err := n.inner.eval(p)
	if err != nil || v.kind == kindNull {
		return v, err
	}
	v, err = toNumber(v)
	if err != nil {
		return vNull, err
	}
	if v.kind == kindLong {
		v.i = -v.i
	} else {
		v.f = -v.f
	}
	return v, nil
}
func (n *negNode) boolean() bool { return false }

// toNumber converts a string property to a long if it is one, else to a
// double.
func toNumber(v value) (value, error) {
	switch v.kind {
	case kindLong, kindDouble:
		return v, nil
	case kindString:
		s := strings.TrimSpace(v.s)
		if i, err := strconv.ParseInt(s, 10, 64); err == nil {
			return value{kind: kindLong, i: i}, nil
		}
		if f, err := strconv.ParseFloat(s, 64); err == nil {
			return value{kind: kindDouble, f: f}, nil
		}
	}
	return vNull, errEval
}

type andNode struct{ left, right node }

func (n *andNode) eval(p Properties) (value, error) {
	l, err := n.left.eval(p)
	if err != nil {
		return vNull, err
	}
	if l.kind == kindBool && !l.b {
		return vFalse, nil
	}
	r, err := n.right.eval(p)
	if err != nil {
		return vNull, err
	}
	if r.kind == kindBool && !r.b {
		return vFalse, nil
	}
	if l.kind == kindBool && r.kind == kindBool {
		return vTrue, nil
	}
	return vNull, nil
}
func (n *andNode) boolean() bool { return true }

type orNode struct{ left, right node }

func (n *orNode) eval(p Properties) (value, error) {
	l, err := n.left.eval(p)
	if err != nil {
		return vNull, err
	}
	if l.kind == kindBool && l.b {
		return vTrue, nil
	}
	r, err := n.right.eval(p)
	if err != nil {
		return vNull, err
	}
	if r.kind == kindBool && r.b {
		return vTrue, nil
	}
	if l.kind == kindBool && r.kind == kindBool {
		return vFalse, nil
	}
	return vNull, nil
}
func (n *orNode) boolean() bool { return true }

type notNode struct{ inner node }

func (n *notNode) eval(p Properties) (value, error) {
	v, err := n.inner.eval(p)
	if err != nil || v.kind != kindBool {
		return vNull, err
	}
	return boolValue(!v.b), nil
}
func (n *notNode) boolean() bool { return true }

type cmpOp uint8

const (
	opEq cmpOp = iota
	opNe
	opGt
	opGe
	opLt
	opLe
)

func (o cmpOp) String() string {
	return [...]string{"=", "<>", ">", ">=", "<", "<="}[o]
}

type cmpNode struct {
	op          cmpOp
	left, right node
}

func (n *cmpNode) eval(p Properties) (value, error) {
	l, err := n.left.eval(p)
	if err != nil {
		return vNull, err
	}
	r, err := n.right.eval(p)
	if err != nil {
		return vNull, err
	}
	return compare(n.op, l, r)
}
func (n *cmpNode) boolean() bool { return true }

// compare applies op to two values with RocketMQ's conversions.
func compare(op cmpOp, l, r value) (value, error) {
	if l.kind == kindNull || r.kind == kindNull {
		return vNull, nil
	}
	var c int
	switch {
	case l.kind == kindString && r.kind == kindString:
		if op != opEq && op != opNe {
			return vNull, errEval
		}
		return boolValue((l.s == r.s) == (op == opEq)), nil
	case l.kind == kindBool || r.kind == kindBool:
		lb, err := toBool(l)
		if err != nil {
			return vNull, err
		}
		rb, err := toBool(r)
		if err != nil {
			return vNull, err
		}
		if op != opEq && op != opNe {
			return vNull, errEval
		}
		return boolValue((lb == rb) == (op == opEq)), nil
	default:
		var err error
		if l.kind == kindString {
			if l, err = convertTo(l, r.kind); err != nil {
				return vNull, err
			}
		}
		if r.kind == kindString {
			if r, err = convertTo(r, l.kind); err != nil {
				return vNull, err
			}
		}
		if c, err = compareNumbers(l, r); err != nil {
			return vNull, err
		}
	}
	switch op {
	case opEq:
		return boolValue(c == 0), nil
	case opNe:
		return boolValue(c != 0), nil
	case opGt:
		return boolValue(c > 0), nil
	case opGe:
		return boolValue(c >= 0), nil
	case opLt:
		return boolValue(c < 0), nil
	default:
		return boolValue(c <= 0), nil
	}
}

// convertTo converts a string property to the numeric type it is compared
// with, as RocketMQ does (Long.valueOf / Double.valueOf).
func convertTo(v value, k kind) (value, error) {
	s := strings.TrimSpace(v.s)
	switch k {
	case kindLong:
		i, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return vNull, errEval
		}
		return value{kind: kindLong, i: i}, nil
	case kindDouble:
		f, err := strconv.ParseFloat(s, 64)
		if err != nil {
			return vNull, errEval
		}
		return value{kind: kindDouble, f: f}, nil
	}
	return vNull, errEval
}

// toBool converts for a boolean comparison: Java Boolean.valueOf semantics
// for strings; numbers cannot be booleans.
func toBool(v value) (bool, error) {
	switch v.kind {
	case kindBool:
		return v.b, nil
	case kindString:
		return strings.EqualFold(v.s, "true"), nil
	}
	return false, errEval
}

// compareNumbers compares two numeric values (long with long exactly,
// otherwise as doubles).
func compareNumbers(l, r value) (int, error) {
	if l.kind == kindLong && r.kind == kindLong {
		switch {
		case l.i < r.i:
			return -1, nil
		case l.i > r.i:
			return 1, nil
		}
		return 0, nil
	}
	lf, lok := asFloat(l)
	rf, rok := asFloat(r)
	if !lok || !rok || lf != lf || rf != rf { // NaN never compares
		return 0, errEval
	}
	switch {
	case lf < rf:
		return -1, nil
	case lf > rf:
		return 1, nil
	}
	return 0, nil
}

func asFloat(v value) (float64, bool) {
	switch v.kind {
	case kindLong:
		return float64(v.i), true
	case kindDouble:
		return v.f, true
	}
	return 0, false
}

type betweenNode struct {
	operand, low, high node
	not                bool
}

func (n *betweenNode) eval(p Properties) (value, error) {
	v, err := n.operand.eval(p)
	if err != nil {
		return vNull, err
	}
	lo, err := n.low.eval(p)
	if err != nil {
		return vNull, err
	}
	hi, err := n.high.eval(p)
	if err != nil {
		return vNull, err
	}
	if n.not {
		a, err := compare(opLt, v, lo)
		if err != nil {
			return vNull, err
		}
		b, err := compare(opGt, v, hi)
		if err != nil {
			return vNull, err
		}
		return or3(a, b), nil
	}
	a, err := compare(opGe, v, lo)
	if err != nil {
		return vNull, err
	}
	b, err := compare(opLe, v, hi)
	if err != nil {
		return vNull, err
	}
	return and3(a, b), nil
}
func (n *betweenNode) boolean() bool { return true }

func and3(a, b value) value {
	if a.kind == kindBool && !a.b || b.kind == kindBool && !b.b {
		return vFalse
	}
	if a.kind == kindBool && b.kind == kindBool {
		return vTrue
	}
	return vNull
}

func or3(a, b value) value {
	if a.kind == kindBool && a.b || b.kind == kindBool && b.b {
		return vTrue
	}
	if a.kind == kindBool && b.kind == kindBool {
		return vFalse
	}
	return vNull
}

type inNode struct {
	operand node
	set     map[string]struct{}
	not     bool
}

func (n *inNode) eval(p Properties) (value, error) {
	v, err := n.operand.eval(p)
	if err != nil || v.kind == kindNull {
		return vNull, err
	}
	if v.kind != kindString {
		return vNull, errEval
	}
	_, ok := n.set[v.s]
	return boolValue(ok != n.not), nil
}
func (n *inNode) boolean() bool { return true }

type isNullNode struct {
	operand node
	not     bool
}

func (n *isNullNode) eval(p Properties) (value, error) {
	v, err := n.operand.eval(p)
	if err != nil {
		return vNull, err
	}
	return boolValue((v.kind == kindNull) != n.not), nil
}
func (n *isNullNode) boolean() bool { return true }

type stringMatchNode struct {
	operand node
	pattern string
	name    string
	match   func(s, sub string) bool
	not     bool
}

func (n *stringMatchNode) eval(p Properties) (value, error) {
	v, err := n.operand.eval(p)
	if err != nil || v.kind == kindNull {
		return vNull, err
	}
	if v.kind != kindString {
		return vNull, errEval
	}
	return boolValue(n.match(v.s, n.pattern) != n.not), nil
}
func (n *stringMatchNode) boolean() bool { return true }
