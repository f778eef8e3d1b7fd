package proxy

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/types/known/timestamppb"

	sdk "github.com/apogeemq/apogee/client"
	"github.com/apogeemq/apogee/internal/broker"
	pb "github.com/apogeemq/apogee/internal/rmqpb"
	"github.com/apogeemq/apogee/internal/testutil"
	"github.com/apogeemq/apogee/internal/testutil/cluster"
)

// BenchmarkSendVsRemoting measures 1 KiB sends by 4 producers, each keeping
// 64 sends in flight, over gRPC through the local-mode endpoint and with
// the Apogee SDK over remoting, against one ASYNC_FLUSH broker in this
// process, alternating rounds in the same run. It reports both rates and
// x-remoting = gRPC / remoting (the goal is >= 0.7). The machine is shared:
// compare the ratio, not the rates. Run:
//
//	go test -run '^$' -bench SendVsRemoting -benchtime 1x ./internal/proxy
func BenchmarkSendVsRemoting(b *testing.B) {
	const (
		size      = 1024
		producers = 4
		inflight  = 64
		topic     = "BenchGrpcSend"
	)
	cl := cluster.Start(b, testutil.DiscardLogger(), func(cfg *broker.Config) {
		cfg.Store.MappedFileSizeCommitLog = 256 << 20
		cfg.Store.FlushDiskType = "ASYNC_FLUSH"
		cfg.SendMessageThreadPoolNums = 4
	})
	cl.CreateTopic(topic, 8)
	p, err := New(Config{ListenAddr: "127.0.0.1:0", BrokerName: cl.Cfg.BrokerName, BrokerAddr: cl.B.Addr(), Local: cl.B, Logger: testutil.DiscardLogger()})
	if err != nil {
		b.Fatal(err)
	}
	if err := p.Start(); err != nil {
		b.Fatal(err)
	}
	defer p.Close()
	body := make([]byte, size)
	for i := range body {
		body[i] = byte('a' + i%26)
	}

	// gRPC: one connection per producer, as each official client has.
	stubs := make([]pb.MessagingServiceClient, producers)
	for i := range stubs {
		cc, err := grpc.NewClient(p.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
		if err != nil {
			b.Fatal(err)
		}
		defer cc.Close()
		stubs[i] = pb.NewMessagingServiceClient(cc)
	}
	var seq atomic.Int64
	grpcSend := func(producer int, done func(error)) {
		ctx := withClient(context.Background(), "bench-"+strconv.Itoa(producer))
		id := fmt.Sprintf("01BENCH%027d", seq.Add(1))
		r, err := stubs[producer].SendMessage(ctx, &pb.SendMessageRequest{Messages: []*pb.Message{{
			Topic: &pb.Resource{Name: topic}, Body: body,
			SystemProperties: &pb.SystemProperties{MessageId: id, MessageType: pb.MessageType_NORMAL, BornTimestamp: timestamppb.Now()},
		}}})
		if err == nil && r.Status.Code != pb.Code_OK {
			err = fmt.Errorf("status %v", r.Status)
		}
		done(err)
	}
	// Remoting: the SDK's producers, async sends.
	producersSDK := make([]*sdk.Producer, producers)
	for i := range producersSDK {
		pr, err := sdk.NewProducer("bench_remoting", sdk.WithNameServers(cl.NSAddr), sdk.WithInstanceName("bench"+strconv.Itoa(i)))
		if err != nil {
			b.Fatal(err)
		}
		if err := pr.Start(); err != nil {
			b.Fatal(err)
		}
		defer pr.Close()
		producersSDK[i] = pr
	}
	remotingSend := func(producer int, done func(error)) {
		if err := producersSDK[producer].SendAsync(context.Background(), sdk.NewMessage(topic, body), func(_ *sdk.SendResult, err error) { done(err) }); err != nil {
			done(err)
		}
	}
	for _, send := range []func(int, func(error)){grpcSend, remotingSend} { // warm up
		for i := range 200 {
			send(i%producers, func(err error) {
				if err != nil {
					b.Fatal(err)
				}
			})
		}
	}
	var grpcTPS, remotingTPS, grpcCPU, remotingCPU float64
	for b.Loop() {
		grpcTPS, remotingTPS, grpcCPU, remotingCPU = 0, 0, 0, 0
		const rounds = 3
		for range rounds {
			tps, cpu := measure(b, "grpc", grpcSend, producers, inflight)
			grpcTPS, grpcCPU = grpcTPS+tps/rounds, grpcCPU+cpu/rounds
			tps, cpu = measure(b, "remoting", remotingSend, producers, inflight)
			remotingTPS, remotingCPU = remotingTPS+tps/rounds, remotingCPU+cpu/rounds
		}
	}
	b.ReportMetric(grpcTPS, "grpc-msg/s")
	b.ReportMetric(remotingTPS, "remoting-msg/s")
	b.ReportMetric(grpcTPS/remotingTPS, "x-remoting")
	// CPU per message of the whole process (client, endpoint and broker):
	// steadier than rates on a loaded machine.
	b.ReportMetric(grpcCPU, "grpc-cpu-us/msg")
	b.ReportMetric(remotingCPU, "remoting-cpu-us/msg")
}

// measure runs send from producers goroutines for 2 s, each keeping up to
// inflight sends outstanding (gRPC unary calls block, so each in-flight
// send has a goroutine), and returns completed sends per second and the
// process's CPU time per send in µs. A failed send fails the benchmark.
func measure(b *testing.B, who string, send func(int, func(error)), producers, inflight int) (float64, float64) {
	const round = 2 * time.Second
	var n atomic.Int64
	var firstErr atomic.Pointer[error]
	deadline := time.Now().Add(round)
	start := time.Now()
	cpu0 := processCPU()
	var wg sync.WaitGroup
	for p := range producers {
		for range inflight {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for time.Now().Before(deadline) {
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
	if e := firstErr.Load(); e != nil {
		b.Fatalf("%s send failed: %v", who, *e)
	}
	cpu := processCPU() - cpu0
	return float64(n.Load()) / time.Since(start).Seconds(), float64(cpu.Microseconds()) / float64(max(n.Load(), 1))
}

// processCPU is the user plus system CPU time this process used so far.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
