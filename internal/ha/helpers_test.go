package ha

import (
	"bytes"
	"fmt"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/apogeemq/apogee/internal/message"
	"github.com/apogeemq/apogee/internal/store"
	"github.com/apogeemq/apogee/internal/testutil"
)

const testFileSize = 64 << 10

func storeConfig(dir, role string) store.Config {
	cfg := store.DefaultConfig()
	cfg.StorePathRootDir = dir
	cfg.MappedFileSizeCommitLog = testFileSize
	cfg.MappedFileSizeConsumeQueue = 1000 * store.CQUnitSize
	cfg.MaxMessageSize = 8 << 10
	cfg.MaxHashSlotNum = 64
	cfg.MaxIndexNum = 256
	cfg.FlushIntervalCommitLog = 10 * time.Millisecond
	cfg.FlushIntervalConsumeQueue = 20 * time.Millisecond
	cfg.CleanupInitialDelay = time.Hour
	cfg.BrokerRole = role
	cfg.StoreHost = netip.MustParseAddrPort("127.0.0.1:10911")
	return cfg
}

func openStore(t testing.TB, dir, role string) *store.Store {
	t.Helper()
	s, err := store.New(storeConfig(dir, role), testutil.Logger(t))
	if err != nil {
		t.Fatalf("store.New: %v", err)
	}
	if err := s.Start(); err != nil {
		t.Fatalf("store.Start: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func testServerConfig() ServerConfig {
	cfg := DefaultServerConfig()
	cfg.ListenAddr = "127.0.0.1:0"
	cfg.CommitLogFileSize = testFileSize
	cfg.TransferBatchSize = 4 << 10 // several frames per file
	cfg.IdleWait = 20 * time.Millisecond
	cfg.HeartbeatInterval = 200 * time.Millisecond
	return cfg
}

func testClientConfig(addr string) ClientConfig {
	cfg := DefaultClientConfig()
	cfg.MasterAddress = addr
	cfg.ReconnectInterval = 50 * time.Millisecond
	cfg.HeartbeatInterval = 200 * time.Millisecond
	return cfg
}

func startServer(t testing.TB, cfg ServerConfig, log CommitLogReader) *Server {
	t.Helper()
	s, err := NewServer(cfg, log, testutil.Logger(t))
	if err != nil {
		t.Fatalf("NewServer: %v", err)
	}
	if err := s.Start(); err != nil {
		t.Fatalf("Server.Start: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func startClient(t testing.TB, cfg ClientConfig, log CommitLogAppender) *Client {
	t.Helper()
	c, err := NewClient(cfg, log, testutil.Logger(t))
	if err != nil {
		t.Fatalf("NewClient: %v", err)
	}
	if err := c.Start(); err != nil {
		t.Fatalf("Client.Start: %v", err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func newMsg(topic string, i int, wait bool) *message.Ext {
	m := &message.Ext{QueueID: int32(i % 2), BornTimestamp: time.Now().UnixMilli(),
		BornHost: netip.MustParseAddrPort("127.0.0.2:5555")}
	m.Topic = topic
	m.Body = []byte(fmt.Sprintf("message-%d-%s", i, strings.Repeat("x", 400)))
	m.Properties = map[string]string{"KEYS": fmt.Sprintf("k%d", i)}
	m.SetWaitStoreMsgOK(wait)
	return m
}

func put(t testing.TB, s *store.Store, m *message.Ext) store.PutResult {
	t.Helper()
	ch := make(chan store.PutResult, 1)
	s.PutMessage(m, func(r store.PutResult) { ch <- r })
	select {
	case r := <-ch:
		return r
	case <-time.After(10 * time.Second):
		t.Fatal("put: no completion")
	}
	return store.PutResult{}
}

func putN(t testing.TB, s *store.Store, topic string, from, n int) {
	t.Helper()
	for i := from; i < from+n; i++ {
		if r := put(t, s, newMsg(topic, i, true)); r.Status != store.PutOK {
			t.Fatalf("put %d: %v", i, r.Status)
		}
	}
}

// readAll returns the commit log bytes [from, to).
func readAll(t testing.TB, s *store.Store, from, to int64) []byte {
	t.Helper()
	var out []byte
	for off := from; off < to; {
		b, err := s.ReadCommitLog(off, int(to-off))
		if err != nil || len(b) == 0 {
			t.Fatalf("ReadCommitLog(%d): %d bytes, %v", off, len(b), err)
		}
		out = append(out, b...)
		off += int64(len(b))
	}
	return out
}

// waitIdentical waits until the slave holds the master's log up to the
// master's max offset, then compares [from, max) byte for byte.
func waitIdentical(t testing.TB, master, slave *store.Store, from int64) {
	t.Helper()
	want := master.MaxPhyOffset()
	testutil.Eventually(t, 10*time.Second, func() bool { return slave.MaxPhyOffset() >= want },
		"slave max offset %d never reached master's %d", slave.MaxPhyOffset(), want)
	if got := slave.MaxPhyOffset(); got != want {
		t.Fatalf("slave max offset %d, master %d", got, want)
	}
	if !bytes.Equal(readAll(t, master, from, want), readAll(t, slave, from, want)) {
		t.Fatalf("commit logs differ in [%d, %d)", from, want)
	}
}
