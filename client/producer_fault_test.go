package client

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/apogeemq/apogee/internal/protocol"
	"github.com/apogeemq/apogee/internal/testutil"
	"github.com/apogeemq/apogee/internal/testutil/fakebroker"
)

// attemptCounter is a send hook counting attempts and failures per broker.
type attemptCounter struct {
	mu       sync.Mutex
	attempts map[string]int
	failures map[string]int
}

func newAttemptCounter() *attemptCounter {
	return &attemptCounter{attempts: map[string]int{}, failures: map[string]int{}}
}

func (a *attemptCounter) OnAfterSend(_ context.Context, sc *SendContext) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.attempts[sc.Queue.BrokerName]++
	if sc.Err != nil {
		a.failures[sc.Queue.BrokerName]++
	}
}

func (a *attemptCounter) get(broker string) (attempts, failures int) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.attempts[broker], a.failures[broker]
}

// delaySends injects latency d into every send broker b answers.
func delaySends(b *fakebroker.Broker, d time.Duration) {
	for _, c := range []protocol.RequestCode{protocol.SendMessage, protocol.SendMessageV2, protocol.SendBatchMessage} {
		b.Delay(c, d)
	}
}

// TestFaultStrategyIsolatesBrokerByLatency: with sendLatencyFaultEnable, a
// broker whose answers are slow is isolated after its first attempt
// (docs/broker.md §4.2) and every later send goes to the other broker. The
// latency is injected by the fake broker, so the healthy broker answers in
// microseconds and the test never depends on how loaded the machine is:
//   - silent: answers delayed past the send timeout; the failed attempt
//     counts as 30 s latency (600 s isolation) and the send fails once;
//   - slow: answers take 600 ms, within the timeout; the send succeeds and
//     the latency (>= 550 ms) isolates the broker for 30 s.
func TestFaultStrategyIsolatesBrokerByLatency(t *testing.T) {
	for _, tc := range []struct {
		name       string
		delay      time.Duration
		wantFailed int // sends that fail (the silent broker's one attempt)
	}{
		{"silent", 5 * time.Second, 1},
		{"slow", 600 * time.Millisecond, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := newFakeBroker(t, "broker-a")
			b := newFakeBroker(t, "broker-b")
			a.Serve("T", a, b)
			delaySends(b, tc.delay)
			counter := newAttemptCounter()
			p := startProducer(t, a.Addr(), WithSendLatencyFaultEnable(true), WithSendTimeout(time.Second),
				WithHooks(counter))
			ctx := testutil.Context(t, 60*time.Second)

			const n = 40
			failed := 0
			for i := range n {
				res, err := p.Send(ctx, NewMessage("T", []byte("fault")))
				if err != nil {
					if !errors.Is(err, ErrTimeout) {
						t.Fatalf("send %d: unexpected error %v", i, err)
					}
					failed++
					continue
				}
				if res.Queue.BrokerName == "broker-b" && tc.wantFailed > 0 {
					t.Fatalf("send %d stored on the silent broker", i)
				}
			}
			attemptsB, failuresB := counter.get("broker-b")
			attemptsA, _ := counter.get("broker-a")
			if attemptsB > 1 || failed > tc.wantFailed {
				t.Fatalf("broker-b got %d attempts (%d failed), %d sends failed; want at most 1 attempt (isolated after the first) and %d failed sends",
					attemptsB, failuresB, failed, tc.wantFailed)
			}
			if attemptsA < n-1 {
				t.Fatalf("broker-a got %d attempts, want >= %d", attemptsA, n-1)
			}
			if attemptsB == 1 {
				if st := p.Stats(); len(st.Isolated) != 1 || st.Isolated[0] != "broker-b" {
					t.Fatalf("isolated brokers %v, want [broker-b]", st.Isolated)
				}
			}
		})
	}
}

// TestFaultDetectorBringsBrokerBack: with RocketMQ 5's detector on, a
// broker marked unreachable by a failed send is probed (GET_MAX_OFFSET of a
// published topic) and marked reachable again once it answers, while its
// 5.x isolation (10 s for a failure) still runs.
func TestFaultDetectorBringsBrokerBack(t *testing.T) {
	a := newFakeBroker(t, "broker-a")
	a.Serve("T", a)
	p := startProducer(t, a.Addr(), WithSendLatencyFaultEnable(true), WithLatencyFaultTable(FaultTable5x()),
		WithStartDetectorEnable(true), WithDetectInterval(10*time.Millisecond), WithDetectTimeout(2*time.Second),
		withDetectTick(20*time.Millisecond))
	ctx := testutil.Context(t, 30*time.Second)
	if _, err := p.Send(ctx, NewMessage("T", []byte("route"))); err != nil {
		t.Fatal(err)
	}
	p.fault.update("broker-a", 0, true, true) // as after a connection failure
	if p.fault.reachable("broker-a") || p.fault.available("broker-a") {
		t.Fatal("the failure did not mark broker-a unreachable and isolated")
	}
	testutil.Eventually(t, 20*time.Second, func() bool { return p.fault.reachable("broker-a") },
		"the detector never found broker-a reachable")
}
