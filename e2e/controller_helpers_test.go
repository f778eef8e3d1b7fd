package e2e

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apogeemq/apogee/internal/testutil"
)

// freeLoopbackPorts reserves n loopback ports (closed again before use,
// for processes that must know their peers' ports in advance).
func freeLoopbackPorts(t testing.TB, n int) []string {
	t.Helper()
	var out []string
	var lns []net.Listener
	for range n {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		lns = append(lns, ln)
		out = append(out, ln.Addr().String())
	}
	for _, ln := range lns {
		ln.Close()
	}
	return out
}

// controllerGroup is n `apogee controller` processes of one raft group.
type controllerGroup struct {
	t        testing.TB
	bin      string
	raft     []string
	rpc      []string
	confs    []string
	procs    []*testutil.Child
	extraArg []string
}

// writeControllerConfs writes one controller.conf per node under dir.
func newControllerGroup(t testing.TB, bin string, n int, extra map[string]string) *controllerGroup {
	ports := freeLoopbackPorts(t, 2*n)
	g := &controllerGroup{t: t, bin: bin, raft: ports[:n], rpc: ports[n:], procs: make([]*testutil.Child, n)}
	dir := t.TempDir()
	for i := range n {
		var b strings.Builder
		fmt.Fprintf(&b, "controllerType=jRaft\njRaftGroupId=apogee-test\njRaftServerId=%s\njRaftInitConf=%s\njRaftControllerRPCAddr=%s\ncontrollerStorePath=%s\n",
			g.raft[i], strings.Join(g.raft, ","), strings.Join(g.rpc, ","), filepath.Join(dir, fmt.Sprintf("n%d", i)))
		b.WriteString("scanNotActiveBrokerInterval=200\nraftHeartbeatTimeout=300\nraftElectionTimeout=300\nraftLeaderLeaseTimeout=200\n")
		for k, v := range extra {
			fmt.Fprintf(&b, "%s=%s\n", k, v)
		}
		conf := filepath.Join(dir, fmt.Sprintf("controller%d.conf", i))
		if err := os.WriteFile(conf, []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
		g.confs = append(g.confs, conf)
	}
	return g
}

func (g *controllerGroup) start(i int) {
	g.t.Helper()
	g.procs[i] = startApogeeProcess(g.t, g.bin, listening, "controller", "-c", g.confs[i], "--log-level", "warn")
}

func (g *controllerGroup) startAll() {
	for i := range g.confs {
		g.start(i)
	}
}

// kill SIGKILLs node i.
func (g *controllerGroup) kill(i int) {
	if p := g.procs[i]; p != nil {
		p.Kill()
		g.procs[i] = nil
	}
}

// addrs is the controllerAddr value for brokers (';'-separated).
func (g *controllerGroup) addrs() string { return strings.Join(g.rpc, ";") }
