package ha

import (
	"encoding/binary"
	"io"
	"net"
	"testing"
	"time"

	"github.com/apogeemq/apogee/internal/store"
	"github.com/apogeemq/apogee/internal/testutil"
)

// 9.1: the slave's commit log becomes byte-identical to the master's, and
// its dispatch builds consume queues from the replicated records.
func TestReplicationBytesIdentical(t *testing.T) {
	master := openStore(t, t.TempDir(), store.RoleAsyncMaster)
	slave := openStore(t, t.TempDir(), store.RoleSlave)
	srv := startServer(t, testServerConfig(), master)
	startClient(t, testClientConfig(srv.Addr().String()), slave)

	// The slave is empty: it gets the master's last file onwards, so let it
	// start while the master is still in its first file.
	putN(t, master, "TopicA", 0, 1)
	waitIdentical(t, master, slave, 0)
	const n = 400 // ~0.5 KiB each: several 64 KiB files
	putN(t, master, "TopicA", 1, n-1)
	srv.Notify()
	waitIdentical(t, master, slave, 0)
	if master.MaxPhyOffset() < 3*testFileSize {
		t.Fatalf("test wants several files, master max offset %d", master.MaxPhyOffset())
	}
	for q := int32(0); q < 2; q++ {
		testutil.Eventually(t, 5*time.Second, func() bool {
			return slave.MaxOffsetInQueue("TopicA", q) == master.MaxOffsetInQueue("TopicA", q)
		}, "slave queue %d has %d of %d", q, slave.MaxOffsetInQueue("TopicA", q), master.MaxOffsetInQueue("TopicA", q))
	}
	testutil.Eventually(t, 5*time.Second, func() bool {
		st := srv.Stats()
		return len(st.Slaves) == 1 && st.Slaves[0].AckOffset == master.MaxPhyOffset() && st.Slaves[0].InSync
	}, "master never saw the slave's ack: %+v", srv.Stats())
}

// 9.1: an empty slave (report 0) gets no history, only the master's last
// commit-log file onwards.
func TestEmptySlaveStartsAtLastFile(t *testing.T) {
	master := openStore(t, t.TempDir(), store.RoleAsyncMaster)
	putN(t, master, "TopicA", 0, 400)
	maxOff := master.MaxPhyOffset()
	lastFile := maxOff - maxOff%testFileSize
	if lastFile == 0 {
		t.Fatal("test wants several files")
	}
	slave := openStore(t, t.TempDir(), store.RoleSlave)
	srv := startServer(t, testServerConfig(), master)
	startClient(t, testClientConfig(srv.Addr().String()), slave)
	waitIdentical(t, master, slave, lastFile)
	if got := slave.MinPhyOffset(); got != lastFile {
		t.Fatalf("slave min offset %d, want the master's last file start %d", got, lastFile)
	}
	putN(t, master, "TopicA", 400, 50)
	waitIdentical(t, master, slave, lastFile)
}

// 9.1: a restarted slave reports its max offset and the master continues
// from there: nothing is sent twice.
func TestSlaveRestartResumesAtItsOffset(t *testing.T) {
	master := openStore(t, t.TempDir(), store.RoleAsyncMaster)
	srv := startServer(t, testServerConfig(), master)
	slaveDir := t.TempDir()

	slave, err := store.New(storeConfig(slaveDir, store.RoleSlave), testutil.Logger(t))
	if err != nil {
		t.Fatal(err)
	}
	if err := slave.Start(); err != nil {
		t.Fatal(err)
	}
	c1, err := NewClient(testClientConfig(srv.Addr().String()), slave, testutil.Logger(t))
	if err != nil {
		t.Fatal(err)
	}
	if err := c1.Start(); err != nil {
		t.Fatal(err)
	}
	putN(t, master, "TopicA", 0, 100)
	waitIdentical(t, master, slave, 0)
	if err := c1.Close(); err != nil {
		t.Fatal(err)
	}
	if err := c1.Close(); err != nil { // idempotent
		t.Fatal(err)
	}
	if err := slave.Close(); err != nil {
		t.Fatal(err)
	}
	resumeAt := master.MaxPhyOffset()

	putN(t, master, "TopicA", 100, 200)
	slave2 := openStore(t, slaveDir, store.RoleSlave)
	if got := slave2.MaxPhyOffset(); got != resumeAt {
		t.Fatalf("reopened slave max offset %d, want %d", got, resumeAt)
	}
	c2 := startClient(t, testClientConfig(srv.Addr().String()), slave2)
	waitIdentical(t, master, slave2, 0)
	if st := c2.Stats(); st.Bytes != master.MaxPhyOffset()-resumeAt || st.Mismatches != 0 {
		t.Fatalf("restarted slave received %d bytes (want %d), %d mismatches", st.Bytes, master.MaxPhyOffset()-resumeAt, st.Mismatches)
	}
}

// 9.1: a slave whose log is ahead of the master's (it diverged) is streamed
// from its own reported offset: the master sends nothing until it has data
// there, and never rewrites the slave's bytes.
func TestSlaveAheadOfMasterIsNotRewritten(t *testing.T) {
	slaveDir := t.TempDir()
	{ // give the slave a history of its own
		other := openStore(t, slaveDir, store.RoleAsyncMaster)
		putN(t, other, "Other", 0, 50)
		if err := other.Close(); err != nil {
			t.Fatal(err)
		}
	}
	slave := openStore(t, slaveDir, store.RoleSlave)
	before := readAll(t, slave, 0, slave.MaxPhyOffset())
	master := openStore(t, t.TempDir(), store.RoleAsyncMaster)
	putN(t, master, "TopicA", 0, 10) // master behind the slave
	srv := startServer(t, testServerConfig(), master)
	c := startClient(t, testClientConfig(srv.Addr().String()), slave)
	testutil.Eventually(t, 5*time.Second, func() bool {
		st := srv.Stats()
		return len(st.Slaves) == 1 && st.Slaves[0].AckOffset == int64(len(before))
	}, "master never saw the slave's report")
	// Heartbeats flow (HeartbeatInterval 200 ms) and carry the slave's offset:
	// no mismatch, no data.
	testutil.Eventually(t, 5*time.Second, func() bool { return c.Stats().LastReported == int64(len(before)) })
	putN(t, master, "TopicA", 10, 10)
	if got := readAll(t, slave, 0, slave.MaxPhyOffset()); string(got) != string(before) {
		t.Fatal("slave's own data was rewritten")
	}
	if st := c.Stats(); st.Bytes != 0 || st.Mismatches != 0 {
		t.Fatalf("slave received %d bytes, %d mismatches; want none", st.Bytes, st.Mismatches)
	}
}

// fakeMaster accepts HA connections and lets the test drive them.
type fakeMaster struct {
	ln    net.Listener
	conns chan net.Conn
}

func newFakeMaster(t *testing.T) *fakeMaster {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	f := &fakeMaster{ln: ln, conns: make(chan net.Conn, 16)}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			f.conns <- c
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		<-done
		close(f.conns)
		for c := range f.conns {
			c.Close()
		}
	})
	return f
}

func (f *fakeMaster) accept(t *testing.T) (net.Conn, int64) {
	t.Helper()
	select {
	case c := <-f.conns:
		t.Cleanup(func() { c.Close() })
		c.SetReadDeadline(time.Now().Add(5 * time.Second))
		var b [reportSize]byte
		off, err := readReport(c, &b)
		if err != nil {
			t.Fatalf("first report: %v", err)
		}
		return c, off
	case <-time.After(5 * time.Second):
		t.Fatal("slave did not connect")
	}
	return nil, 0
}

// 9.1: a transfer frame whose offset is not the slave's max offset closes
// the connection; the slave reconnects, reports again, and its log is
// untouched.
func TestSlaveClosesOnOffsetMismatchAndReconnects(t *testing.T) {
	slave := openStore(t, t.TempDir(), store.RoleAsyncMaster)
	putN(t, slave, "Own", 0, 5) // a non-empty log (role only matters for puts)
	own := slave.MaxPhyOffset()
	fm := newFakeMaster(t)
	c := startClient(t, testClientConfig(fm.ln.Addr().String()), slave)

	conn, off := fm.accept(t)
	if off != own {
		t.Fatalf("first report %d, want %d", off, own)
	}
	var h [transferHeaderSize]byte
	putTransferHeader(h[:], own+100, 4)
	if _, err := conn.Write(append(h[:], "junk"...)); err != nil {
		t.Fatal(err)
	}
	// The slave hangs up ...
	conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := io.Copy(io.Discard, conn); err != nil {
		t.Fatalf("slave did not close the connection: %v", err)
	}
	// ... and comes back with the same offset.
	_, off2 := fm.accept(t)
	if off2 != own || slave.MaxPhyOffset() != own {
		t.Fatalf("after reconnect: report %d, log end %d, want %d", off2, slave.MaxPhyOffset(), own)
	}
	if st := c.Stats(); st.Mismatches != 1 || st.Connects < 2 {
		t.Fatalf("stats %+v: want 1 mismatch, 2 connects", st)
	}
}

// 9.1 housekeeping: the slave drops a master silent for
// haHousekeepingInterval; the master drops a slave that never reports.
func TestHousekeepingClosesSilentPeers(t *testing.T) {
	t.Run("slave side", func(t *testing.T) {
		slave := openStore(t, t.TempDir(), store.RoleSlave)
		fm := newFakeMaster(t)
		cfg := testClientConfig(fm.ln.Addr().String())
		cfg.HousekeepingInterval = 300 * time.Millisecond
		startClient(t, cfg, slave)
		conn, _ := fm.accept(t)
		conn.SetReadDeadline(time.Now().Add(5 * time.Second))
		start := time.Now()
		io.Copy(io.Discard, conn) // reports until the slave closes
		if d := time.Since(start); d > 4*time.Second {
			t.Fatalf("slave kept a silent master for %v", d)
		}
		fm.accept(t) // and reconnects
	})
	t.Run("master side", func(t *testing.T) {
		master := openStore(t, t.TempDir(), store.RoleAsyncMaster)
		cfg := testServerConfig()
		cfg.HousekeepingInterval = 300 * time.Millisecond
		srv := startServer(t, cfg, master)
		conn, err := net.Dial("tcp", srv.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		testutil.Eventually(t, 5*time.Second, func() bool { return len(srv.Stats().Slaves) == 1 })
		testutil.Eventually(t, 5*time.Second, func() bool { return len(srv.Stats().Slaves) == 0 },
			"master kept a slave that never reported")
	})
}

// 9.1 heartbeats: an idle master sends header-only frames carrying the
// next offset.
func TestMasterSendsHeartbeats(t *testing.T) {
	master := openStore(t, t.TempDir(), store.RoleAsyncMaster)
	putN(t, master, "TopicA", 0, 3)
	srv := startServer(t, testServerConfig(), master)
	conn, err := net.Dial("tcp", srv.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	end := master.MaxPhyOffset()
	if _, err := conn.Write(appendReport(nil, end)); err != nil {
		t.Fatal(err)
	}
	conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	var h [transferHeaderSize]byte
	if _, err := io.ReadFull(conn, h[:]); err != nil {
		t.Fatal(err)
	}
	if off, size := int64(binary.BigEndian.Uint64(h[:8])), binary.BigEndian.Uint32(h[8:]); off != end || size != 0 {
		t.Fatalf("heartbeat offset %d size %d, want %d 0", off, size, end)
	}
}

// 9.1 sync replication: with inSyncReplicas=2 a put waits for the slave's
// ack (PUT_OK, already on the slave), and times out with
// FLUSH_SLAVE_TIMEOUT when no slave acknowledges.
func TestSyncMasterWaitsForSlave(t *testing.T) {
	master := openStore(t, t.TempDir(), store.RoleSyncMaster)
	slave := openStore(t, t.TempDir(), store.RoleSlave)
	cfg := testServerConfig()
	cfg.InSyncReplicas = 2
	cfg.SlaveTimeout = 300 * time.Millisecond
	cfg.IdleWait = time.Second // acks must come from the Notify wake-up, not polling
	srv := startServer(t, cfg, master)
	master.SetReplicator(srv.Replicator())

	c, err := NewClient(testClientConfig(srv.Addr().String()), slave, testutil.Logger(t))
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	testutil.Eventually(t, 5*time.Second, func() bool { return len(srv.Stats().Slaves) == 1 && srv.Stats().Slaves[0].AckOffset >= 0 })
	for i := range 20 {
		start := time.Now()
		r := put(t, master, newMsg("TopicA", i, true))
		if r.Status != store.PutOK {
			t.Fatalf("put %d: %v", i, r.Status)
		}
		if end := r.WroteOffset + int64(r.WroteBytes); slave.MaxPhyOffset() < end {
			t.Fatalf("put %d acknowledged before the slave had it: slave %d < %d", i, slave.MaxPhyOffset(), end)
		}
		if d := time.Since(start); d > 250*time.Millisecond {
			t.Fatalf("put %d took %v: the writer was not woken", i, d)
		}
	}
	// A put without WAIT does not wait.
	if r := put(t, master, newMsg("TopicA", 99, false)); r.Status != store.PutOK {
		t.Fatalf("no-wait put: %v", r.Status)
	}
	c.Close()
	testutil.Eventually(t, 5*time.Second, func() bool { return len(srv.Stats().Slaves) == 0 })
	start := time.Now()
	r := put(t, master, newMsg("TopicA", 100, true))
	if r.Status != store.FlushSlaveTimeout {
		t.Fatalf("put without slave: %v, want FLUSH_SLAVE_TIMEOUT", r.Status)
	}
	if d := time.Since(start); d < cfg.SlaveTimeout {
		t.Fatalf("timed out after %v, before slaveTimeout %v", d, cfg.SlaveTimeout)
	}
	if srv.Transfer().Waiting() != 0 {
		t.Fatal("waiter left behind")
	}
}

func TestServerCloseIdempotentAndReleasesWaiters(t *testing.T) {
	master := openStore(t, t.TempDir(), store.RoleSyncMaster)
	cfg := testServerConfig()
	cfg.InSyncReplicas = 2
	cfg.SlaveTimeout = time.Hour
	srv, err := NewServer(cfg, master, testutil.Logger(t))
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	got := make(chan store.PutStatus, 1)
	srv.Replicator().AwaitReplicated(1, func(st store.PutStatus) { got <- st })
	if err := srv.Close(); err != nil {
		t.Fatal(err)
	}
	if err := srv.Close(); err != nil {
		t.Fatal(err)
	}
	if st := <-got; st != store.FlushSlaveTimeout {
		t.Fatalf("waiter released with %v", st)
	}
	if err := srv.Start(); err == nil {
		t.Fatal("Start after Close succeeded")
	}
	never, _ := NewServer(cfg, master, nil)
	if err := never.Close(); err != nil {
		t.Fatal(err)
	}
}
