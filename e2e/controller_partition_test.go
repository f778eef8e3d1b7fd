package e2e

import (
	"bytes"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apogeemq/apogee/client/admin"
	"github.com/apogeemq/apogee/internal/protocol"
	"github.com/apogeemq/apogee/internal/testutil"
)

// blackholeProxy forwards TCP to target until cut: from then on it
// discards every byte both ways without closing anything (a partition, not
// a crash: no side sees a closed connection), until heal.
type blackholeProxy struct {
	ln     net.Listener
	target string
	cut    atomic.Bool
	mu     sync.Mutex
	conns  []net.Conn
	wg     sync.WaitGroup
}

func newBlackholeProxy(t testing.TB, target string) *blackholeProxy {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &blackholeProxy{ln: ln, target: target}
	p.wg.Add(1)
	go p.accept()
	t.Cleanup(p.close)
	return p
}

func (p *blackholeProxy) addr() string { return p.ln.Addr().String() }

func (p *blackholeProxy) accept() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		u, err := net.Dial("tcp", p.target)
		if err != nil {
			c.Close()
			continue
		}
		p.mu.Lock()
		p.conns = append(p.conns, c, u)
		p.mu.Unlock()
		p.wg.Add(2)
		go p.pipe(u, c)
		go p.pipe(c, u)
	}
}

func (p *blackholeProxy) pipe(dst, src net.Conn) {
	defer p.wg.Done()
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 && !p.cut.Load() {
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			if err != io.EOF {
				return
			}
			dst.Close()
			return
		}
	}
}

// heal lets traffic through again. Connections that lost bytes during the
// partition are reset (as TCP would after its retransmissions gave up);
// new ones work.
func (p *blackholeProxy) heal() {
	p.mu.Lock()
	for _, c := range p.conns {
		c.Close()
	}
	p.conns = nil
	p.mu.Unlock()
	p.cut.Store(false)
}

func (p *blackholeProxy) close() {
	p.ln.Close()
	p.mu.Lock()
	for _, c := range p.conns {
		c.Close()
	}
	p.mu.Unlock()
	p.wg.Wait()
}

// TestControllerPartitionedMaster: the master reaches the controllers only
// through proxies, which then drop all traffic (no closed socket). Its
// lease runs out and it refuses writes before the controllers, seeing its
// heartbeats stop, elect the slave; when the partition heals it learns the
// new master, is replaced by a slave instance and converges
// byte-identically. Nothing it acknowledged is missing on the new master.
func TestControllerPartitionedMaster(t *testing.T) {
	e := newFailoverEnv(t)
	var proxies []*blackholeProxy
	var via []string
	for _, a := range e.ctl.rpc {
		p := newBlackholeProxy(t, a)
		proxies = append(proxies, p)
		via = append(via, p.addr())
	}
	const cluster, name = "PartitionCluster", "broker-p"
	b1 := newCtlBroker(t, e.bin, e.ctl, e.nsAddr, cluster, name, map[string]string{"controllerAddr": strings.Join(via, ";")})
	b2 := newCtlBroker(t, e.bin, e.ctl, e.nsAddr, cluster, name, nil)
	b1.start()
	e.waitMaster(name, b1.addr, 1, 20*time.Second)
	b2.start()
	ri := e.waitMaster(name, b1.addr, 2, 20*time.Second)
	topic := uniqueName(t, "Part")
	ctx := testutil.Context(t, 10*time.Second)
	if err := e.admin.CreateTopic(ctx, admin.TopicConfig{Topic: topic, ReadQueues: 4, WriteQueues: 4}, admin.Target{Cluster: cluster}); err != nil {
		t.Fatal(err)
	}
	acked := sendAcked(t, e.nsAddr, topic, "a", 50, 20*time.Second)

	// Partition the master from every controller; keep probing it.
	for _, p := range proxies {
		p.cut.Store(true)
	}
	cut := time.Now()
	raw := newRawSender(t, b1.addr)
	var fencedAt time.Duration
	var ackedDuring []string
	for i := 0; fencedAt == 0 && time.Since(cut) < 10*time.Second; i++ {
		body := fmt.Sprintf("p-%d", i)
		if code := raw.sendBody(topic, body); code == int32(protocol.Success) {
			ackedDuring = append(ackedDuring, body)
		} else {
			fencedAt = time.Since(cut)
		}
		time.Sleep(20 * time.Millisecond)
	}
	ri2 := e.waitMaster(name, b2.addr, 1, 15*time.Second)
	elected := time.Since(cut)
	if fencedAt == 0 || fencedAt >= elected {
		t.Fatalf("the partitioned master refused writes at %v, the slave was elected at %v: fence must come first", fencedAt, elected)
	}
	if code := raw.sendBody(topic, "after-election"); code == int32(protocol.Success) {
		t.Fatal("the partitioned master acknowledged a send after the election")
	}
	t.Logf("partition: old master fenced %v after the cut, slave elected %v after it (epoch %d -> %d); %d sends acknowledged before the fence",
		fencedAt.Round(time.Millisecond), elected.Round(time.Millisecond), ri.MasterEpoch, ri2.MasterEpoch, len(ackedDuring))

	// Heal: the old master rejoins as a slave.
	healed := time.Now()
	for _, p := range proxies {
		p.heal()
	}
	e.waitMaster(name, b2.addr, 2, 30*time.Second)
	var want int64
	testutil.Eventually(t, 15*time.Second, func() bool {
		want = e.maxOffset(b2.addr)
		return want > 0 && e.maxOffset(b1.addr) == want
	}, "old master never converged after the partition healed")
	if !bytes.Equal(b1.commitLog(want), b2.commitLog(want)) {
		t.Fatal("old master's commit log differs from the new master's")
	}
	t.Logf("partition healed: old master rejoined as a slave %v later", time.Since(healed).Round(time.Millisecond))
	e.waitRoute(topic, name, b2.addr)
	acked = append(acked, sendAcked(t, e.nsAddr, topic, "b", 10, 20*time.Second)...)
	e.requireReadable(b2.addr, topic, name, 4, append(acked, ackedDuring...))
}
