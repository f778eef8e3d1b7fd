package e2e

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/apogeemq/apogee/internal/testutil"
)

// TestControllerCLI: three `apogee controller -c FILE` processes elect a
// raft leader; `apogee admin getControllerMetaData` names it from any node
// and `getControllerConfig` shows the file's keys; killing the leader lets
// the other two elect a new one.
func TestControllerCLI(t *testing.T) {
	bin := buildApogee(t)
	g := newControllerGroup(t, bin, 3, map[string]string{"someUnknownKey": "1"})
	g.startAll()
	leaderOf := func(addr string) (string, bool) {
		out, _, code := runApogee(t, bin, "admin", "getControllerMetaData", "-a", addr, "--json", "--timeout", "2s")
		if code != 0 {
			return "", false
		}
		var md struct {
			Group                   string `json:"group"`
			ControllerLeaderAddress string `json:"controllerLeaderAddress"`
			IsLeader                bool   `json:"isLeader"`
		}
		if err := json.Unmarshal([]byte(out), &md); err != nil || md.Group != "apogee-test" {
			t.Fatalf("metadata %q: %v", out, err)
		}
		return md.ControllerLeaderAddress, md.ControllerLeaderAddress != ""
	}
	var leader string
	testutil.Eventually(t, 15*time.Second, func() bool {
		l, ok := leaderOf(g.rpc[0])
		leader = l
		return ok
	}, "no leader reported")
	for _, a := range g.rpc {
		if l, _ := leaderOf(a); l != leader {
			t.Fatalf("%s reports leader %q, %s reports %q", a, l, g.rpc[0], leader)
		}
	}
	out, _, code := runApogee(t, bin, "admin", "getControllerConfig", "-a", g.rpc[1])
	if code != 0 || !strings.Contains(out, "jRaftGroupId") || !strings.Contains(out, "apogee-test") {
		t.Fatalf("getControllerConfig: %d %q", code, out)
	}
	out, _, code = runApogee(t, bin, "admin", "getSyncStateSet", "-a", g.rpc[2], "--json")
	if code != 0 || !strings.Contains(out, "replicasInfoTable") {
		t.Fatalf("getSyncStateSet: %d %q", code, out)
	}

	idx := -1
	for i, a := range g.rpc {
		if a == leader {
			idx = i
		}
	}
	g.kill(idx)
	other := g.rpc[(idx+1)%3]
	testutil.Eventually(t, 15*time.Second, func() bool {
		l, ok := leaderOf(other)
		return ok && l != leader
	}, "no new leader after killing %s", leader)
}
