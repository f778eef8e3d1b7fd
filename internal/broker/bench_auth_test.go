package broker

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/apogeemq/apogee/internal/auth"
	"github.com/apogeemq/apogee/internal/names"
	"github.com/apogeemq/apogee/internal/protocol"
	"github.com/apogeemq/apogee/internal/remoting"
	"github.com/apogeemq/apogee/internal/testutil"
)

// BenchmarkSendAuthOnOff compares sends to a broker with
// authenticationEnabled and authorizationEnabled (a Normal user with Pub on
// the topic, every request signed as the Go v2 client signs) and to one
// with both off (unsigned requests), in one run: two ASYNC_FLUSH brokers in
// this process, SEND_MESSAGE_V2 of 1 KiB, phases alternating between them.
// sync: one sender, one request at a time (latency); pipelined: 32 senders.
// stateless verifies every signature (the default); stateful
// (authenticationStrategy=Stateful) verifies a connection's first one.
// x-auth-* is throughput on / off (target >= 0.9); cpu-x-auth is CPU per
// send off / on, which includes the client's signing in this process.
//
//	go test -run='^$' -bench=SendAuthOnOff -benchtime=10x -count=3 ./internal/broker
func BenchmarkSendAuthOnOff(b *testing.B) {
	off := benchBroker(b, "ASYNC_FLUSH", 256<<20)
	withAuth := func(strategy string) *Broker {
		br := benchBrokerWith(b, func(c *Config) {
			c.BrokerName = "bench-" + strategy
			c.AuthenticationEnabled, c.AuthorizationEnabled = true, true
			c.AuthenticationStrategy = strategy
		})
		if err := br.Auth().CreateUser(auth.User{Username: "bench", Password: "bench-secret"}); err != nil {
			b.Fatal(err)
		}
		acl, err := auth.ACLInfo{Subject: "User:bench", Policies: []auth.PolicyInfo{{Entries: []auth.EntryInfo{
			{Resource: "Topic:BenchAuth", Actions: []string{"Pub"}, Decision: "Allow"}}}}}.ACL()
		if err != nil {
			b.Fatal(err)
		}
		if err := br.Auth().PutACL(acl); err != nil {
			b.Fatal(err)
		}
		return br
	}
	brokersOn := map[string]*Broker{"stateless": withAuth("Stateless"), "stateful": withAuth("Stateful")}
	// Each sender signs its request once and resends it: the broker
	// verifies the full signature every time (nothing caches it), and the
	// client's signing, which runs on the client's machine in production,
	// stays out of the broker's figures (BenchmarkSign in internal/auth
	// measures it).
	signer := &auth.Signer{AccessKey: "bench", SecretKey: "bench-secret"}
	signed := remoting.NewClient(remoting.ClientConfig{Logger: testutil.DiscardLogger()})
	plain := remoting.NewClient(remoting.ClientConfig{Logger: testutil.DiscardLogger()})
	for _, c := range []*remoting.Client{signed, plain} {
		if err := c.Start(); err != nil {
			b.Fatal(err)
		}
		defer c.Close()
	}
	body := make([]byte, 1024)
	h := protocol.SendMessageRequestHeader{ProducerGroup: "pg", Topic: "BenchAuth", DefaultTopic: names.TopicAutoCreate,
		DefaultTopicQueueNums: 4, QueueID: -1, BornTimestamp: time.Now().UnixMilli(),
		Properties: "TAGS\x01t\x02UNIQ_KEY\x01AC1100010000000000000000000000\x02WAIT\x01true\x02"}
	newReq := func(c *remoting.Client) *protocol.Command {
		req := protocol.NewRequestList(protocol.SendMessageV2, protocol.AppendHeader(nil, &h, true), body)
		req.SerializeType = protocol.SerializeRocketMQ
		if c == signed {
			signer.Sign(req)
		}
		return req
	}
	send := func(c *remoting.Client, addr string, req *protocol.Command) {
		for attempt := 0; attempt < 4; attempt++ {
			resp, err := c.InvokeSync(context.Background(), addr, req)
			if err != nil {
				b.Error(err)
				return
			}
			if resp.Code == int32(protocol.Success) {
				return
			}
			if resp.Code != int32(protocol.SystemBusy) {
				b.Errorf("send to %s: code %d %s", addr, resp.Code, resp.Remark)
				return
			}
		}
	}
	// phase sends n messages from senders goroutines; it returns the wall
	// time and the process CPU it took.
	phase := func(c *remoting.Client, addr string, senders, n int) (time.Duration, time.Duration) {
		cpu, start := processCPU(), time.Now()
		var wg sync.WaitGroup
		for range senders {
			wg.Add(1)
			go func() {
				defer wg.Done()
				req := newReq(c)
				for range n / senders {
					send(c, addr, req)
				}
			}()
		}
		wg.Wait()
		return time.Since(start), processCPU() - cpu
	}
	for _, on := range brokersOn {
		phase(signed, on.Addr(), 4, 200) // create the topic, warm connections
	}
	phase(plain, off.Addr(), 4, 200)
	for _, mode := range []struct {
		name    string
		senders int
		n       int
	}{{"sync", 1, 500}, {"pipelined", 32, 2000}} {
		for _, strategy := range []string{"stateless", "stateful"} {
			on := brokersOn[strategy]
			b.Run(mode.name+"/"+strategy, func(b *testing.B) {
				var wallOn, wallOff, cpuOn, cpuOff time.Duration
				round := 0
				for b.Loop() {
					runOn := func() { w, c := phase(signed, on.Addr(), mode.senders, mode.n); wallOn += w; cpuOn += c }
					runOff := func() { w, c := phase(plain, off.Addr(), mode.senders, mode.n); wallOff += w; cpuOff += c }
					if round%2 == 0 {
						runOn()
						runOff()
					} else {
						runOff()
						runOn()
					}
					round++
				}
				sends := float64(round * mode.n)
				b.ReportMetric(float64(wallOn)/sends, "ns/send-on")
				b.ReportMetric(float64(wallOff)/sends, "ns/send-off")
				b.ReportMetric(float64(wallOff)/float64(wallOn), fmt.Sprintf("x-auth-%s", mode.name))
				b.ReportMetric(float64(cpuOff)/float64(cpuOn), "cpu-x-auth")
			})
		}
	}
}
