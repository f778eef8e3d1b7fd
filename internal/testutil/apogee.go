package testutil

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
)

// FreePort returns a loopback TCP port that was free a moment ago, for a
// child process that must be told its port (a restart keeps it).
func FreePort(tb testing.TB) int {
	tb.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// ApogeeBinary builds cmd/apogee once, on first use, for the test binary
// that owns it (a package-level value of the test package); TestMain calls
// Remove after the tests.
type ApogeeBinary struct {
	once sync.Once
	path string
	err  error
}

// Path builds the binary if it has not been built yet and returns its path.
func (b *ApogeeBinary) Path(tb testing.TB) string {
	tb.Helper()
	b.once.Do(func() {
		dir, err := os.MkdirTemp("", "apogee-bin")
		if err != nil {
			b.err = err
			return
		}
		b.path = filepath.Join(dir, "apogee")
		if out, err := exec.Command("go", "build", "-o", b.path, "github.com/apogeemq/apogee/cmd/apogee").CombinedOutput(); err != nil {
			b.err = fmt.Errorf("build apogee: %v\n%s", err, out)
		}
	})
	if b.err != nil {
		tb.Fatal(b.err)
	}
	return b.path
}

// Remove deletes the built binary, if any.
func (b *ApogeeBinary) Remove() {
	if b.path != "" {
		os.RemoveAll(filepath.Dir(b.path))
	}
}
