package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
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
	// updateControllerConfig: a run-time key on two controllers, applied,
	// shown and written back to their files; a black-listed key refused.
	two := g.rpc[0] + ";" + g.rpc[1]
	out, _, code = runApogee(t, bin, "admin", "updateControllerConfig", "-a", two, "-k", "enableElectUncleanMaster", "-v", "true")
	if code != 0 {
		t.Fatalf("updateControllerConfig: %d %q", code, out)
	}
	for i := range 2 {
		out, _, code = runApogee(t, bin, "admin", "getControllerConfig", "-a", g.rpc[i])
		if code != 0 || !regexpLine(out, "enableElectUncleanMaster", "true") {
			t.Fatalf("getControllerConfig of %s after the update: %d %q", g.rpc[i], code, out)
		}
		if data, err := os.ReadFile(g.confs[i]); err != nil || !strings.Contains(string(data), "\nenableElectUncleanMaster=true\n") {
			t.Fatalf("%s was not written back: %v\n%s", g.confs[i], err, data)
		}
	}
	if out, _, _ = runApogee(t, bin, "admin", "getControllerConfig", "-a", g.rpc[2]); !regexpLine(out, "enableElectUncleanMaster", "false") {
		t.Fatalf("the third controller changed too: %q", out)
	}
	out, errOut, code := runApogee(t, bin, "admin", "updateControllerConfig", "-a", g.rpc[2], "-k", "configStorePath", "-v", "/tmp/x")
	if code == 0 || !strings.Contains(out+errOut, "Can not update config in black list.") {
		t.Fatalf("updateControllerConfig of a black-listed key: %d %q %q", code, out, errOut)
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

// TestControllerInNamesrv: enableControllerInNamesrv=true runs a controller
// inside `apogee namesrv` with the controller keys of namesrv.conf; a
// controller-mode broker pointed at it becomes master and registers with
// that name server as id 0.
func TestControllerInNamesrv(t *testing.T) {
	bin := buildApogee(t)
	ports := freeLoopbackPorts(t, 3)
	dir := t.TempDir()
	conf := filepath.Join(dir, "namesrv.conf")
	body := fmt.Sprintf("listenPort=%s\nenableControllerInNamesrv=true\njRaftGroupId=ns-ctl\njRaftServerId=%s\njRaftInitConf=%s\njRaftControllerRPCAddr=%s\ncontrollerStorePath=%s\nscanNotActiveBrokerInterval=200\n",
		ports[0][strings.LastIndex(ports[0], ":")+1:], ports[1], ports[1], ports[2], filepath.Join(dir, "ctl"))
	if err := os.WriteFile(conf, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	startApogeeProcess(t, bin, func(line string) bool { return strings.HasPrefix(line, "namesrv listening on") }, "namesrv", "-c", conf)
	g := &controllerGroup{t: t, bin: bin, rpc: []string{ports[2]}}
	b := newCtlBroker(t, bin, g, ports[0], "NsCtlCluster", "broker-n", nil)
	b.start()
	testutil.Eventually(t, 20*time.Second, func() bool {
		out, _, code := runApogee(t, bin, "admin", "clusterList", "-n", ports[0])
		return code == 0 && regexpLine(out, "broker-n", " 0 ", b.addr, "MASTER", "1")
	}, "the broker never registered as master through the embedded controller")
	out, _, code := runApogee(t, bin, "admin", "getControllerMetaData", "-a", ports[2], "--json")
	if code != 0 || !strings.Contains(out, `"group": "ns-ctl"`) || !strings.Contains(out, `"isLeader": true`) {
		t.Fatalf("getControllerMetaData (%d): %s", code, out)
	}
	// The embedded controller writes run-time updates back to namesrv.conf.
	if out, errOut, code := runApogee(t, bin, "admin", "updateControllerConfig", "-a", ports[2], "-k", "electMasterMaxRetryCount", "-v", "5"); code != 0 {
		t.Fatalf("updateControllerConfig (%d): %s %s", code, out, errOut)
	}
	if data, err := os.ReadFile(conf); err != nil || !strings.Contains(string(data), "\nelectMasterMaxRetryCount=5\n") || !strings.Contains(string(data), "jRaftGroupId=ns-ctl") {
		t.Fatalf("namesrv.conf after the update: %v\n%s", err, data)
	}
}
