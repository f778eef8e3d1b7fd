// Package archtest holds tests that keep the package layout honest: who may
// import what (style.md, "Who may import what"). It has no non-test code.
package archtest
