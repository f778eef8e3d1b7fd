package grpce2e

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	rmq "github.com/apache/rocketmq-clients/golang/v5"
	pb "github.com/apache/rocketmq-clients/golang/v5/protocol/v2"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/types/known/timestamppb"

	sdk "github.com/apogeemq/apogee/client"
)

// BenchmarkSendProcesses measures 1 KiB sends by 4 producers, each keeping
// 64 sends in flight, against one `apogee standalone` process
// (ASYNC_FLUSH): the official v5.1.3 Producer over gRPC and the Apogee SDK
// over remoting, in alternating 3 s rounds of one run. The server runs in
// its own process, so the CPU each side spends per message is measured
// apart: the server from /proc/<pid>/stat, the client (this process) from
// getrusage; the server's idle CPU (background loops, measured for one
// round without traffic) is taken off its figures. It reports both rates, x-remoting = gRPC / remoting rate, and
// per side and protocol the CPU per message. A "stub-" round sends with a
// bare grpc-go client of the generated stubs instead of the official one.
// Two last rounds send over
// remoting paced to the official and the stub gRPC round's rates ("paced-",
// "stub-paced-"): at a low rate the
// store's per-batch costs weigh on each message, so the server's gRPC cost
// is that figure's difference. The machine is shared: compare within a
// run. Run:
//
//	cd e2e/grpc && go test -run '^$' -bench SendProcesses -benchtime 1x .
//
// APOGEE_BIN names another apogee binary to serve (an A/B of a build);
// APOGEE_BENCH_ARGS adds space-separated arguments to its command line
// (e.g. "--set metricsExporterType=PROM --set metricsPromExporterPort=9999
// --set metricsPprofEnable=true" to profile the server).
func BenchmarkSendProcesses(b *testing.B) {
	const (
		size      = 1024
		producers = 4
		inflight  = 64
		topic     = "BenchSendProcesses"
		round     = 3 * time.Second
	)
	args := append([]string{"--set", "flushDiskType=ASYNC_FLUSH", "--set", "sendMessageThreadPoolNums=4",
		"--set", "mappedFileSizeCommitLog=268435456",
		"--set", "waitTimeMillsInSendQueue=10000"}, // no flow control: the machine is loaded
		strings.Fields(os.Getenv("APOGEE_BENCH_ARGS"))...)
	s := startServer(b, "", args...)
	s.createTopic(b, topic, "", 8)
	pid := s.child.Pid()
	body := make([]byte, size)
	for i := range body {
		body[i] = byte('a' + i%26)
	}
	withSSL(b, false)
	v5 := make([]rmq.Producer, producers)
	for i := range v5 {
		v5[i] = newProducer(b, s.grpc, rmq.WithTopics(topic))
	}
	grpcSend := func(p int, done func(error)) {
		_, err := v5[p].Send(context.Background(), &rmq.Message{Topic: topic, Body: body})
		done(err)
	}
	// A bare grpc-go client of the official client's generated stubs (one connection per
	// producer): what the server costs at a rate the official client does
	// not reach.
	stubs := make([]pb.MessagingServiceClient, producers)
	for i := range stubs {
		cc, err := grpc.NewClient(s.grpc, grpc.WithTransportCredentials(insecure.NewCredentials()))
		if err != nil {
			b.Fatal(err)
		}
		defer cc.Close()
		stubs[i] = pb.NewMessagingServiceClient(cc)
	}
	var seq atomic.Int64
	stubSend := func(p int, done func(error)) {
		ctx := metadata.AppendToOutgoingContext(context.Background(), "x-mq-client-id", "bench-stub-"+strconv.Itoa(p), "x-mq-language", "GO")
		r, err := stubs[p].SendMessage(ctx, &pb.SendMessageRequest{Messages: []*pb.Message{{
			Topic: &pb.Resource{Name: topic}, Body: body,
			SystemProperties: &pb.SystemProperties{MessageId: fmt.Sprintf("01BENCH%027d", seq.Add(1)),
				MessageType: pb.MessageType_NORMAL, BornTimestamp: timestamppb.Now()},
		}}})
		if err == nil && r.GetStatus().GetCode() != pb.Code_OK {
			err = fmt.Errorf("status %v", r.GetStatus())
		}
		done(err)
	}
	rp := make([]*sdk.Producer, producers)
	for i := range rp {
		pr, err := sdk.NewProducer("bench_remoting", sdk.WithNameServers(s.namesrv), sdk.WithInstanceName("bench"+strconv.Itoa(i)))
		if err != nil {
			b.Fatal(err)
		}
		if err := pr.Start(); err != nil {
			b.Fatal(err)
		}
		defer pr.Close()
		rp[i] = pr
	}
	remotingSend := func(p int, done func(error)) {
		if err := rp[p].SendAsync(context.Background(), sdk.NewMessage(topic, body), func(_ *sdk.SendResult, err error) { done(err) }); err != nil {
			done(err)
		}
	}
	// figures of one round: sends per second and CPU µs per send, the
	// server's with its idle CPU (measured apart) taken off.
	type figures struct{ rate, server, client float64 }
	var idle float64 // the server's CPU seconds per second with no traffic
	// run sends for a round; pace > 0 holds the rate to pace msg/s.
	run := func(send func(int, func(error)), pace float64) figures {
		var n, started atomic.Int64
		var firstErr atomic.Pointer[error]
		deadline := time.Now().Add(round)
		sv0, cl0, t0 := procCPU(b, pid), selfCPU(), time.Now()
		var wg sync.WaitGroup
		for p := range producers {
			for range inflight {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for time.Now().Before(deadline) && firstErr.Load() == nil {
						if pace > 0 {
							at := t0.Add(time.Duration(float64(started.Add(1)) / pace * float64(time.Second)))
							time.Sleep(time.Until(at))
						}
						ch := make(chan error, 1)
						send(p, func(err error) { ch <- err })
						if err := <-ch; err != nil {
							firstErr.CompareAndSwap(nil, &err)
							return
						}
						n.Add(1)
					}
				}()
			}
		}
		wg.Wait()
		el := time.Since(t0)
		if e := firstErr.Load(); e != nil {
			b.Fatalf("send: %v", *e)
		}
		k := float64(n.Load())
		return figures{rate: k / el.Seconds(), server: ((procCPU(b, pid) - sv0).Seconds() - idle*el.Seconds()) * 1e6 / k,
			client: (selfCPU() - cl0).Seconds() * 1e6 / k}
	}
	for _, send := range []func(int, func(error)){grpcSend, stubSend, remotingSend} { // warm up
		for range 3 {
			run(send, 0)
		}
	}
	sv0, t0 := procCPU(b, pid), time.Now()
	time.Sleep(round)
	idle = (procCPU(b, pid) - sv0).Seconds() / time.Since(t0).Seconds()
	var g, st, r, paced, stubPaced figures
	add := func(sum *figures, f figures, k float64) {
		*sum = figures{sum.rate + f.rate/k, sum.server + f.server/k, sum.client + f.client/k}
	}
	for b.Loop() {
		g, st, r, paced, stubPaced = figures{}, figures{}, figures{}, figures{}, figures{}
		const rounds = 3
		for range rounds {
			x := run(grpcSend, 0)
			add(&g, x, rounds)
			y := run(stubSend, 0)
			add(&st, y, rounds)
			add(&r, run(remotingSend, 0), rounds)
			// Remoting at the gRPC rounds' rates: the store's per-batch
			// costs are then spread over as few messages as gRPC's.
			add(&paced, run(remotingSend, x.rate), rounds)
			add(&stubPaced, run(remotingSend, y.rate), rounds)
		}
	}
	b.ReportMetric(idle*100, "server-idle-cpu-%")
	b.ReportMetric(g.rate, "grpc-msg/s")
	b.ReportMetric(r.rate, "remoting-msg/s")
	b.ReportMetric(st.rate, "stub-msg/s")
	b.ReportMetric(st.server, "stub-server-us/msg")
	b.ReportMetric(st.client, "stub-client-us/msg")
	b.ReportMetric(g.rate/r.rate, "x-remoting")
	b.ReportMetric(g.server, "grpc-server-us/msg")
	b.ReportMetric(r.server, "remoting-server-us/msg")
	b.ReportMetric(g.client, "grpc-client-us/msg")
	b.ReportMetric(r.client, "remoting-client-us/msg")
	b.ReportMetric(paced.rate, "paced-remoting-msg/s")
	b.ReportMetric(paced.server, "paced-remoting-server-us/msg")
	b.ReportMetric(paced.client, "paced-remoting-client-us/msg")
	b.ReportMetric(stubPaced.rate, "stub-paced-remoting-msg/s")
	b.ReportMetric(stubPaced.server, "stub-paced-remoting-server-us/msg")
	// The server's messages per CPU-second over gRPC as a fraction of
	// remoting's (issue 11's goal: >= 0.7): against unpaced remoting
	// (its best rate) and against remoting paced to the same client's
	// rate (the same rate, so the same per-batch costs).
	b.ReportMetric(r.server/st.server, "stub-server-msg-per-cpu-s-x-remoting")
	b.ReportMetric(stubPaced.server/st.server, "stub-server-msg-per-cpu-s-x-paced-remoting")
	b.ReportMetric(r.server/g.server, "grpc-server-msg-per-cpu-s-x-remoting")
	b.ReportMetric(paced.server/g.server, "grpc-server-msg-per-cpu-s-x-paced-remoting")
}

// procCPU is the user+system CPU time of process pid so far.
func procCPU(b *testing.B, pid int) time.Duration {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		b.Fatal(err)
	}
	// Fields after the command name (which may hold spaces) in ")".
	f := strings.Fields(string(raw[strings.LastIndexByte(string(raw), ')')+1:]))
	ut, _ := strconv.ParseInt(f[11], 10, 64)
	st, _ := strconv.ParseInt(f[12], 10, 64)
	const ticks = 100 // USER_HZ on Linux
	return time.Duration(ut+st) * time.Second / ticks
}

// selfCPU is this process's user+system CPU time so far.
func selfCPU() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
