package client

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package's tests if any goroutine outlives them: every
// goroutine the SDK starts must stop on Close (CONTRIBUTING.md, "How we write Go").
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
