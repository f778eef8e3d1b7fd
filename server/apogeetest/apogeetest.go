// Package apogeetest starts an in-process Apogee server for a test and
// stops it when the test ends.
package apogeetest

import (
	"testing"

	"github.com/apogeemq/apogee/server"
)

// Start starts a name server and a broker on free loopback ports with a
// temporary data directory (opts may change any of server.Options) and
// registers their shutdown with t.Cleanup. It fails the test if they do
// not start.
func Start(t testing.TB, opts ...func(*server.Options)) *server.Server {
	t.Helper()
	var o server.Options
	for _, f := range opts {
		f(&o)
	}
	s, err := server.Start(o)
	if err != nil {
		t.Fatalf("apogeetest: %v", err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("apogeetest: close: %v", err)
		}
	})
	return s
}
