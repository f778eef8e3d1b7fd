// Package filter is RocketMQ's SQL92 message selector: a lexer, a
// recursive-descent parser producing an expression tree, and an evaluator
// that runs the tree against a message's properties
// (docs/broker.md §1.13).
//
// It is pure: no I/O, no goroutines, stdlib only. The broker compiles a
// subscription's expression once (Compile) and calls Match for every
// message a pull scans.
//
// Grammar (keywords are case-insensitive, identifiers are not):
//
//	expr       := and { OR and }
//	and        := not { AND not }
//	not        := NOT not | predicate
//	predicate  := value [ ( = | <> | > | >= | < | <= ) value
//	                    | [NOT] BETWEEN value AND value
//	                    | [NOT] IN '(' string { , string } ')'
//	                    | IS [NOT] NULL
//	                    | [NOT] ( CONTAINS | STARTSWITH | ENDSWITH ) string ]
//	value      := ( + | - ) value | primary
//	primary    := literal | identifier | '(' expr ')'
//	literal    := 'string' ('' escapes a quote) | 123 | 123L | 0x1F
//	              | 1.5 | 1e3 | .5 | TRUE | FALSE | NULL
//	identifier := [a-zA-Z_$][a-zA-Z0-9_$]*
//
// "--" line comments and "/* */" block comments are skipped. The whole
// expression must be boolean: a bare identifier or literal is refused.
//
// Evaluation follows SQL's three-valued logic: a missing property is NULL,
// any comparison with NULL is NULL (not true), NOT NULL is NULL, AND is
// false if either side is false, OR is true if either side is true.
// Property values are strings; compared with a number they are converted to
// the number's type (long or double), compared with TRUE/FALSE they are
// parsed as Java's Boolean.valueOf does. A value that cannot be converted,
// or an ordering (<, >, ...) of two strings, is an evaluation error, and an
// error anywhere makes the whole expression "no match". Match is true only
// when the expression evaluates to TRUE.
//
// Limits: expressions longer than MaxLength bytes or nested deeper than
// MaxDepth are refused at Compile, so hostile subscriptions cost bounded
// time and stack.
package filter
