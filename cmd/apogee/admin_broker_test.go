package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apogeemq/apogee/client"
	"github.com/apogeemq/apogee/internal/broker"
	"github.com/apogeemq/apogee/internal/testutil"
	"github.com/apogeemq/apogee/internal/testutil/cluster"
)

// adminCluster is an in-process name server and broker on ephemeral ports;
// the broker was started with a broker.conf (confFile).
type adminCluster struct {
	nsAddr   string
	b        *broker.Broker
	confFile string
}

func startAdminCluster(t *testing.T) *adminCluster {
	t.Helper()
	cl := cluster.New(t, testutil.Logger(t), func(cfg *broker.Config) {
		cfg.Store.MappedFileSizeCommitLog = 4 << 20
		cfg.Store.MappedFileSizeConsumeQueue = 20 * 1000
		cfg.Store.MaxMessageSize = 64 << 10
		cfg.Store.MessageIndexEnable = false
		cfg.PullMessageThreadPoolNums = 4
		cfg.TimerPrecisionMs = 100
		cfg.MappedFileSizeTimerLog = 64 << 10
	})
	c := &adminCluster{nsAddr: cl.NSAddr, confFile: filepath.Join(t.TempDir(), "broker.conf")}
	if err := os.WriteFile(c.confFile, []byte("# keep this comment\nbrokerName=broker-a\nbrokerPermission=6\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cl.BeforeStart = func(b *broker.Broker) { b.SetConfigFile(c.confFile) }
	cl.StartBroker()
	c.b = cl.B
	cl.CreateTopic("AdminT", 2)
	return c
}

// admin runs `apogee admin <args> --json` and decodes its output into out.
func (c *adminCluster) admin(t *testing.T, out any, args ...string) error {
	t.Helper()
	root := newRootCmd()
	var stdout bytes.Buffer
	root.SetOut(&stdout)
	root.SetErr(io.Discard)
	root.SetArgs(append([]string{"--log-level", "error", "admin", "-n", c.nsAddr, "--timeout", "5s", "--json"}, args...))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := root.ExecuteContext(ctx); err != nil {
		return err
	}
	if out != nil {
		if err := json.Unmarshal(stdout.Bytes(), out); err != nil {
			return fmt.Errorf("decode %q: %w", stdout.String(), err)
		}
	}
	return nil
}

// TestAdminBrokerCommands drives the broker-level admin commands against
// an in-process cluster with a live producer and push consumer (our SDK
// answers GET_CONSUMER_STATUS_FROM_CLIENT).
func TestAdminBrokerCommands(t *testing.T) {
	c := startAdminCluster(t)
	addr := c.b.Addr()

	p, err := client.NewProducer("admin-pg", client.WithNameServers(c.nsAddr), client.WithLogger(testutil.Logger(t)))
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for i := range 6 {
		if _, err := p.Send(ctx, client.NewMessage("AdminT", []byte(fmt.Sprint("m", i))).WithTag("a")); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := p.Send(ctx, client.NewMessage("AdminLater", []byte("later")).WithDelay(time.Hour)); err != nil {
		t.Fatal(err)
	}
	var consumed atomic.Int32
	pc, err := client.NewPushConsumer("admin-cg", client.WithNameServers(c.nsAddr), client.WithLogger(testutil.Logger(t)),
		client.WithConsumeFromWhere(client.ConsumeFromFirstOffset), client.WithPersistConsumerOffsetInterval(100*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	if err := pc.Subscribe("AdminT", client.TagSelector("a"), func(_ context.Context, msgs []*client.MessageExt) (client.ConsumeResult, error) {
		consumed.Add(int32(len(msgs)))
		return client.ConsumeSuccess, nil
	}); err != nil {
		t.Fatal(err)
	}
	if err := pc.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pc.Close() })
	testutil.Eventually(t, 15*time.Second, func() bool { return consumed.Load() >= 6 }, "consumed %d of 6", consumed.Load())

	t.Run("getConsumerStatus", func(t *testing.T) {
		var rows []struct {
			ClientID string `json:"clientId"`
			Offset   int64  `json:"offset"`
		}
		testutil.Eventually(t, 10*time.Second, func() bool {
			rows = nil
			if err := c.admin(t, &rows, "getConsumerStatus", "-g", "admin-cg", "-t", "AdminT"); err != nil {
				t.Logf("getConsumerStatus: %v", err)
				return false
			}
			var sum int64
			for _, r := range rows {
				sum += r.Offset
			}
			return len(rows) == 2 && rows[0].ClientID != "" && sum == 6
		}, "consumer status rows %+v", rows)
	})

	t.Run("statsAll and queryCorrectionOffset", func(t *testing.T) {
		var rows []struct {
			Topic        string `json:"topic"`
			Group        string `json:"group"`
			Accumulation int64  `json:"accumulation"`
		}
		testutil.Eventually(t, 10*time.Second, func() bool {
			rows = nil
			if err := c.admin(t, &rows, "statsAll", "-t", "AdminT"); err != nil {
				t.Logf("statsAll: %v", err)
				return false
			}
			return len(rows) == 1 && rows[0].Group == "admin-cg" && rows[0].Accumulation == 0
		}, "statsAll rows %+v", rows)
		var corr []struct {
			QueueID int   `json:"QueueID"`
			Offset  int64 `json:"offset"`
		}
		if err := c.admin(t, &corr, "queryCorrectionOffset", "-t", "AdminT", "-g", "admin-cg"); err != nil {
			t.Fatal(err)
		}
		var sum int64
		for _, x := range corr {
			sum += x.Offset
		}
		if len(corr) != 2 || sum != 6 {
			t.Fatalf("correction offsets %+v, want the group's own offsets (sum 6)", corr)
		}
	})

	t.Run("queryCq", func(t *testing.T) {
		var cq struct {
			MaxQueueIndex int64
			Subscription  *struct{ Expression string }
			Units         []struct {
				Index        int64
				PhysicOffset int64
				PhysicSize   int32
				Eval         bool
			}
		}
		if err := c.admin(t, &cq, "queryCq", "-t", "AdminT", "-q", "0", "-i", "0", "-c", "10", "-g", "admin-cg"); err != nil {
			t.Fatal(err)
		}
		if cq.MaxQueueIndex != 3 || len(cq.Units) != 3 || cq.Subscription == nil || cq.Subscription.Expression != "a" {
			t.Fatalf("queryCq = %+v", cq)
		}
		for i, u := range cq.Units {
			if u.Index != int64(i) || u.PhysicSize <= 0 || !u.Eval {
				t.Fatalf("unit %d = %+v", i, u)
			}
		}
		if err := c.admin(t, nil, "queryCq", "-t", "NoSuchTopic", "-q", "0", "-i", "0"); err == nil {
			t.Fatal("queryCq of an unknown topic succeeded")
		}
	})

	t.Run("broker config persists", func(t *testing.T) {
		if err := c.admin(t, nil, "updateBrokerConfig", "-b", addr, "-k", "brokerPermission", "-v", "4"); err != nil {
			t.Fatal(err)
		}
		data, err := os.ReadFile(c.confFile)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(data), "# keep this comment\n") || !strings.Contains(string(data), "brokerPermission=4\n") ||
			strings.Contains(string(data), "brokerPermission=6") {
			t.Fatalf("broker.conf after update:\n%s", data)
		}
		var conf map[string]string
		if err := c.admin(t, &conf, "getBrokerConfig", "-b", addr); err != nil {
			t.Fatal(err)
		}
		if conf["brokerPermission"] != "4" || conf["brokerName"] != "broker-a" {
			t.Fatalf("getBrokerConfig: perm %q name %q", conf["brokerPermission"], conf["brokerName"])
		}
		err = c.admin(t, nil, "updateBrokerConfig", "-b", addr, "-k", "listenPort", "-v", "1")
		if err == nil || !strings.Contains(err.Error(), "listenPort") {
			t.Fatalf("a key that cannot change: err = %v", err)
		}
		if err := c.admin(t, nil, "updateBrokerConfig", "-c", "DefaultCluster", "-k", "brokerPermission", "-v", "6"); err != nil {
			t.Fatal(err)
		}
	})

	t.Run("timer", func(t *testing.T) {
		var metrics map[string]map[string]struct{ Count int64 }
		testutil.Eventually(t, 10*time.Second, func() bool {
			metrics = nil
			return c.admin(t, &metrics, "getTimerMetrics", "-b", addr) == nil && metrics[addr]["AdminLater"].Count == 1
		}, "timer metrics %+v", metrics)
		var cps map[string]struct {
			LastTimerQueueOffset int64
			LastReadTime         time.Time
		}
		if err := c.admin(t, &cps, "getTimerCheckPoint", "-c", "DefaultCluster"); err != nil {
			t.Fatal(err)
		}
		if cp, ok := cps[addr]; !ok || cp.LastTimerQueueOffset != 1 || cp.LastReadTime.IsZero() {
			t.Fatalf("checkpoints %+v", cps)
		}
	})
}
