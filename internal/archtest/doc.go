// Package archtest holds tests that keep the package layout honest: who may
// import what (CONTRIBUTING.md, "How we write Go"). It has no non-test code.
package archtest
