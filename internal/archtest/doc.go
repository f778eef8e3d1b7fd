// Package archtest holds tests that keep the package layout honest: who may
// import what (CONTRIBUTING.md, "How we write Go"), and that the repository
// stands alone: comments cite the project's docs/, never documents outside
// it, and every cited docs/ section exists. It has no non-test code.
package archtest
