package e2e

import (
	"encoding/json"
	"testing"

	"github.com/apogeemq/apogee/client/admin"
)

// adminCLI runs `apogee admin` as the real binary against one name
// server, beside a started admin client for checking what it did.
type adminCLI struct {
	t      *testing.T
	bin    string
	nsAddr string
	a      *admin.Admin
}

func newAdminCLI(t *testing.T, nsAddr string) *adminCLI {
	t.Helper()
	a, err := admin.New(admin.WithNameServers(nsAddr))
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close() })
	return &adminCLI{t: t, bin: buildApogee(t), nsAddr: nsAddr, a: a}
}

// try runs `apogee admin args... -n nsAddr` and returns its output and
// exit code.
func (c *adminCLI) try(args ...string) (stdout, stderr string, code int) {
	c.t.Helper()
	return runApogee(c.t, c.bin, append(append([]string{"admin"}, args...), "-n", c.nsAddr)...)
}

// run is try that fails the test on a non-zero exit.
func (c *adminCLI) run(args ...string) string {
	c.t.Helper()
	out, errOut, code := c.try(args...)
	if code != 0 {
		c.t.Fatalf("apogee admin %v: exit %d: %s", args, code, errOut)
	}
	return out
}

// jsonOf runs the command with --json and decodes its output into v.
func (c *adminCLI) jsonOf(v any, args ...string) {
	c.t.Helper()
	out := c.run(append(args, "--json")...)
	if err := json.Unmarshal([]byte(out), v); err != nil {
		c.t.Fatalf("apogee admin %v --json: %v\n%s", args, err, out)
	}
}
