//go:build !race

package e2e

import (
	"context"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2/primitive"

	"github.com/apogeemq/apogee/client/admin"
	"github.com/apogeemq/apogee/internal/testutil"
)

// TestRuntimeInfoPutTpsMatchesLoad runs a steady load with the official Go
// client for 11 s and reads GET_BROKER_RUNTIME_INFO while it still runs:
// putTps's 10-second figure is within 20 % of the rate the producers saw
// acknowledged over the same 10 s. Not under -race (the load would measure
// the race detector).
func TestRuntimeInfoPutTpsMatchesLoad(t *testing.T) {
	c := startCluster(t, nil)
	topic := uniqueName(t, "T")
	c.createTopic(topic, 4)
	p := newProducer(t, c.nsAddr)
	adm, err := admin.New(admin.WithNameServers(c.nsAddr))
	if err != nil {
		t.Fatal(err)
	}
	if err := adm.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { adm.Close() })

	ctx, cancel := context.WithCancel(testutil.Context(t, time.Minute))
	var mu sync.Mutex
	var acks []time.Time // guarded by mu
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				if _, err := p.SendSync(ctx, primitive.NewMessage(topic, []byte("load"))); err == nil {
					mu.Lock()
					acks = append(acks, time.Now())
					mu.Unlock()
				}
				time.Sleep(2 * time.Millisecond) // a steady, modest rate
			}
		}()
	}
	time.Sleep(11 * time.Second)
	info, err := adm.BrokerRuntimeInfo(ctx, c.b.Addr())
	queried := time.Now()
	cancel()
	wg.Wait()
	if err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	n := 0
	for _, a := range acks {
		if a.After(queried.Add(-10*time.Second)) && !a.After(queried) {
			n++
		}
	}
	mu.Unlock()
	measured := float64(n) / 10
	figures := strings.Fields(info["putTps"])
	if len(figures) != 3 {
		t.Fatalf("putTps = %q", info["putTps"])
	}
	got, err := strconv.ParseFloat(figures[0], 64)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("putTps %q, producers measured %.1f msg/s over the last 10 s", info["putTps"], measured)
	if measured < 10 || got < measured*0.8 || got > measured*1.2 {
		t.Fatalf("putTps 10 s = %.1f, producers measured %.1f msg/s (want within 20%%)", got, measured)
	}
}
