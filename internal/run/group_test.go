package run

import (
	"context"
	"runtime/pprof"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestGroupLifecycle(t *testing.T) {
	tests := []struct {
		name      string
		stop      func(g *Group) // how closing begins
		wantFirst bool           // what a later Stop reports
	}{
		{"Close", func(g *Group) { g.Close() }, false},
		{"Stop then Wait", func(g *Group) { g.Stop(); g.Wait() }, false},
		{"Close twice", func(g *Group) { g.Close(); g.Close() }, false},
		{"cancelled parent does not close", nil, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			parent, cancelParent := context.WithCancel(context.Background())
			defer cancelParent()
			g := NewGroupContext(parent, "test")
			var returned atomic.Int32
			started := make(chan struct{})
			if !g.Go("worker", func(ctx context.Context) {
				close(started)
				<-ctx.Done()
				returned.Add(1)
			}) {
				t.Fatal("Go on an open group refused")
			}
			<-started
			if tc.stop == nil {
				cancelParent()
				<-g.Done()
				if g.Closing() {
					t.Fatal("cancelled parent closed the group")
				}
				if !g.Go("after-parent", func(context.Context) {}) {
					t.Fatal("Go refused after the parent was cancelled")
				}
				if first := g.Stop(); first != tc.wantFirst {
					t.Fatalf("Stop reported first=%v, want %v", first, tc.wantFirst)
				}
				g.Wait()
			} else {
				tc.stop(g)
				if first := g.Stop(); first != tc.wantFirst {
					t.Fatalf("Stop reported first=%v, want %v", first, tc.wantFirst)
				}
			}
			if got := returned.Load(); got != 1 {
				t.Fatalf("worker returned %d times before Wait returned, want 1", got)
			}
			if !g.Closing() {
				t.Fatal("Closing false after Stop")
			}
			select {
			case <-g.Done():
			default:
				t.Fatal("Done not closed after Stop")
			}
			if g.Go("late", func(context.Context) { t.Error("late goroutine ran") }) {
				t.Fatal("Go after Stop started a goroutine")
			}
			if g.Every("late-tick", time.Millisecond, func(context.Context) { t.Error("late ticker ran") }) {
				t.Fatal("Every after Stop started a goroutine")
			}
		})
	}
}

// TestGroupGoRacesClose starts goroutines from many goroutines (and from
// inside the group) while Close runs. Under -race this checks that no
// wg.Add races wg.Wait; in any mode it checks that every goroutine Go
// reported as started has returned when Close returns and that none runs
// after it.
func TestGroupGoRacesClose(t *testing.T) {
	for range 50 {
		g := NewGroup("test")
		var started, finished atomic.Int64
		var closed atomic.Bool
		var callers sync.WaitGroup
		for range 8 {
			callers.Add(1)
			go func() {
				defer callers.Done()
				for range 20 {
					ok := g.Go("child", func(ctx context.Context) {
						if closed.Load() {
							t.Error("a group goroutine ran after Close returned")
						}
						// Nested Go from inside the group.
						if g.Go("grandchild", func(context.Context) { finished.Add(1) }) {
							started.Add(1)
						}
						finished.Add(1)
					})
					if ok {
						started.Add(1)
					}
				}
			}()
		}
		g.Close()
		if s, f := started.Load(), finished.Load(); s != f {
			t.Fatalf("Close returned with %d started but %d finished", s, f)
		}
		closed.Store(true)
		callers.Wait()
		if s, f := started.Load(), finished.Load(); s != f {
			t.Fatalf("after Close: %d started but %d finished", s, f)
		}
	}
}

func TestGroupStopFromInside(t *testing.T) {
	g := NewGroup("test")
	g.Go("stopper", func(ctx context.Context) {
		g.Stop()
		<-ctx.Done()
	})
	<-g.Done()
	g.Wait()
	if !g.Closing() {
		t.Fatal("Stop from inside the group did not close it")
	}
}

func TestGroupPprofLabel(t *testing.T) {
	g := NewGroup("component")
	defer g.Close()
	got := make(chan string, 1)
	g.Go("loop", func(ctx context.Context) {
		v, _ := pprof.Label(ctx, "component")
		got <- v
	})
	if v := <-got; v != "loop" {
		t.Fatalf("pprof label component=%q, want loop", v)
	}
}

func TestEvery(t *testing.T) {
	tests := []struct {
		name      string
		period    time.Duration
		run       time.Duration // how long before Close
		work      time.Duration // time each call takes
		wantCalls int
	}{
		{"no call before the first period", 10 * time.Millisecond, 9 * time.Millisecond, 0, 0},
		{"one call per period", 10 * time.Millisecond, 55 * time.Millisecond, 0, 5},
		{"overrun drops ticks", 10 * time.Millisecond, 55 * time.Millisecond, 25 * time.Millisecond, 2},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				g := NewGroup("test")
				var calls atomic.Int32
				var running atomic.Bool
				if !g.Every("tick", tc.period, func(ctx context.Context) {
					if !running.CompareAndSwap(false, true) {
						t.Error("f ran concurrently with itself")
					}
					calls.Add(1)
					time.Sleep(tc.work)
					running.Store(false)
				}) {
					t.Fatal("Every on an open group refused")
				}
				time.Sleep(tc.run)
				g.Close()
				after := calls.Load()
				if int(after) != tc.wantCalls {
					t.Fatalf("f ran %d times in %v, want %d", after, tc.run, tc.wantCalls)
				}
				time.Sleep(10 * tc.period)
				if calls.Load() != after {
					t.Fatal("f ran after Close returned")
				}
			})
		})
	}
}

func TestEveryStopsOnContext(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		var calls atomic.Int32
		go func() {
			defer close(done)
			Every(ctx, time.Second, func(context.Context) { calls.Add(1) })
		}()
		time.Sleep(3500 * time.Millisecond)
		cancel()
		<-done
		if got := calls.Load(); got != 3 {
			t.Fatalf("f ran %d times in 3.5 periods, want 3", got)
		}
	})
}
