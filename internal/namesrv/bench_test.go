package namesrv

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/apogeemq/apogee/internal/protocol"
	"github.com/apogeemq/apogee/internal/remoting"
	"github.com/apogeemq/apogee/internal/testutil"
)

// benchRegistry registers 8 broker groups (master + slave) serving 1000
// topics each.
func benchRegistry(b *testing.B, m *RouteInfoManager) {
	b.Helper()
	qs := make(map[string]int32, 1000)
	for i := range 1000 {
		qs[fmt.Sprintf("topic-%d", i)] = 8
	}
	w := topics(1, qs)
	for g := range 8 {
		for id := range int64(2) {
			r := reg("C", fmt.Sprintf("broker-%d", g), id, fmt.Sprintf("10.0.%d.%d:10911", g, id), w)
			if _, err := m.RegisterBroker(r); err != nil {
				b.Fatal(err)
			}
		}
	}
}

func BenchmarkPickupTopicRouteData(b *testing.B) {
	m := NewRouteInfoManager(RouteOptions{}, nil, nil)
	benchRegistry(b, m)
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		i := 0
		for pb.Next() {
			if m.PickupTopicRouteData(fmt.Sprintf("topic-%d", i%1000)) == nil {
				b.Fatal("no route")
			}
			i++
		}
	})
}

func BenchmarkRegisterBroker1000Topics(b *testing.B) {
	m := NewRouteInfoManager(RouteOptions{}, nil, nil)
	benchRegistry(b, m)
	qs := make(map[string]int32, 1000)
	for i := range 1000 {
		qs[fmt.Sprintf("topic-%d", i)] = 8
	}
	w := topics(1, qs)
	b.ReportAllocs()
	var counter int64 = 1
	for b.Loop() {
		counter++ // a new data version: every topic is re-read
		w.DataVersion.Counter = counter
		if _, err := m.RegisterBroker(reg("C", "broker-0", 0, "10.0.0.0:10911", w)); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkGetRouteInfoWire measures GET_ROUTEINFO_BY_TOPIC round trips over
// loopback, one connection, callers in parallel.
func BenchmarkGetRouteInfoWire(b *testing.B) {
	cfg := DefaultConfig()
	cfg.ListenPort, cfg.BindAddress = 0, "127.0.0.1"
	cfg.KVConfigPath = filepath.Join(b.TempDir(), "kv.json")
	s := New(cfg, testutil.DiscardLogger())
	benchRegistry(b, s.Routes())
	if err := s.Start(); err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	c := remoting.NewClient(remoting.ClientConfig{Logger: testutil.DiscardLogger()})
	if err := c.Start(); err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	addr := s.Addr().String()
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		i := 0
		for pb.Next() {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			req := protocol.NewRequest(protocol.GetRouteInfoByTopic, map[string]string{"topic": fmt.Sprintf("topic-%d", i%1000)}, nil)
			resp, err := c.InvokeSync(ctx, addr, req)
			cancel()
			if err != nil || resp.Code != 0 {
				b.Fatalf("%v %+v", err, resp)
			}
			i++
		}
	})
}
