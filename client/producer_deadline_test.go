package client

import (
	"context"
	"errors"
	"testing"
	"time"
)

// valueCtx is a context type that == cannot compare (it holds a slice).
type valueCtx struct {
	context.Context
	tags []string
}

func TestSendDeadlines(t *testing.T) {
	// Millisecond-aligned, so d+250µs is in the same millisecond.
	d := time.UnixMilli(time.Now().Add(time.Hour).UnixMilli())
	wantAt := d

	t.Run("same parent and millisecond share", func(t *testing.T) {
		var s sendDeadlines
		defer s.close()
		parent := context.Background()
		c1, at, _ := s.with(parent, d)
		c2, _, _ := s.with(parent, d)
		c3, _, _ := s.with(parent, d.Add(250*time.Microsecond))
		if !at.Equal(wantAt) {
			t.Fatalf("deadline %v, want %v", at, wantAt)
		}
		if dl, ok := c1.Deadline(); !ok || !dl.Equal(wantAt) {
			t.Fatalf("ctx deadline %v %v", dl, ok)
		}
		if c2 != c3 {
			t.Fatal("second and third send in the same millisecond got different contexts")
		}
		c4, _, _ := s.with(parent, d.Add(time.Millisecond))
		if c4 == c3 {
			t.Fatal("a later millisecond reused the context")
		}
		_ = c1
	})

	t.Run("coarser step for long timeouts", func(t *testing.T) {
		s := sendDeadlines{stepMs: deadlineStepMs(10 * time.Second)}
		defer s.close()
		if s.stepMs != 4 {
			t.Fatalf("step %d ms for a 10 s timeout, want 4", s.stepMs)
		}
		d := time.UnixMilli(d.UnixMilli() - d.UnixMilli()%4) // step-aligned
		parent := context.Background()
		s.with(parent, d)
		c1, at, _ := s.with(parent, d.Add(time.Millisecond))
		c2, _, _ := s.with(parent, d.Add(3*time.Millisecond))
		if !at.Equal(d) || c1 != c2 {
			t.Fatalf("deadline %v (want %v), shared %v", at, d, c1 == c2)
		}
		c3, at3, _ := s.with(parent, d.Add(4*time.Millisecond))
		if c3 == c2 || !at3.Equal(d.Add(4*time.Millisecond)) {
			t.Fatalf("next step: deadline %v, reused %v", at3, c3 == c2)
		}
		if deadlineStepMs(3*time.Second) != 1 {
			t.Fatal("the default 3 s timeout no longer rounds to the millisecond")
		}
	})

	t.Run("new parent per send is not shared", func(t *testing.T) {
		var s sendDeadlines
		defer s.close()
		var ctxs []context.Context
		for range 3 {
			parent, pcancel := context.WithCancel(context.Background())
			defer pcancel()
			c, _, cancel := s.with(parent, d)
			ctxs = append(ctxs, c)
			cancel()
			if !errors.Is(c.Err(), context.Canceled) {
				t.Fatalf("own context not cancelled by its cancel: %v", c.Err())
			}
		}
		if ctxs[0] == ctxs[1] || ctxs[1] == ctxs[2] {
			t.Fatal("distinct parents shared a context")
		}
	})

	t.Run("parent cancellation reaches shared context", func(t *testing.T) {
		var s sendDeadlines
		defer s.close()
		parent, pcancel := context.WithCancel(context.Background())
		s.with(parent, d)
		c, _, cancel := s.with(parent, d)
		cancel() // a no-op for a shared context
		if c.Err() != nil {
			t.Fatalf("shared context ended by one send's cancel: %v", c.Err())
		}
		pcancel()
		if !errors.Is(c.Err(), context.Canceled) {
			t.Fatalf("err %v after the parent was cancelled", c.Err())
		}
	})

	t.Run("deadline passes", func(t *testing.T) {
		var s sendDeadlines
		defer s.close()
		s.with(context.Background(), time.Now())
		c, _, _ := s.with(context.Background(), time.Now().Add(20*time.Millisecond))
		select {
		case <-c.Done():
		case <-time.After(5 * time.Second):
			t.Fatal("deadline did not end the context")
		}
		if !errors.Is(c.Err(), context.DeadlineExceeded) {
			t.Fatalf("err %v", c.Err())
		}
	})

	t.Run("uncomparable parent", func(t *testing.T) {
		var s sendDeadlines
		defer s.close()
		parent := valueCtx{Context: context.Background(), tags: []string{"x"}}
		for range 3 {
			c, _, cancel := s.with(parent, d)
			cancel()
			if c.Err() == nil {
				t.Fatal("context of an uncomparable parent was shared")
			}
		}
	})

	t.Run("close cancels live shared contexts", func(t *testing.T) {
		var s sendDeadlines
		s.with(context.Background(), d)
		c, _, _ := s.with(context.Background(), d)
		s.close()
		if !errors.Is(c.Err(), context.Canceled) {
			t.Fatalf("err %v after close", c.Err())
		}
		c2, _, cancel := s.with(context.Background(), d)
		c3, _, cancel3 := s.with(context.Background(), d)
		defer cancel()
		defer cancel3()
		if c2 == c3 || c2.Err() != nil {
			t.Fatal("shared after close")
		}
	})
}

// FuzzSendDeadlinesMatchPlain holds the shared deadline contexts to the
// plain path (context.WithDeadline per send): for any sequence of sends
// from a few parents (some cancelled on the way) and deadlines, the
// context a send gets ends when the plain one would (the parent's
// cancellation; never a sibling send's cancel), carries the parent's
// values, and has the plain deadline rounded down to the millisecond.
func FuzzSendDeadlinesMatchPlain(f *testing.F) {
	f.Add([]byte{0, 0, 0, 1, 1, 1})
	f.Add([]byte{0x10, 0x10, 0x21, 0x32, 0x83, 0x10})
	f.Add([]byte{0xff, 0x00, 0x7f, 0x80, 0x01, 0x02, 0x03})
	type key struct{}
	f.Fuzz(func(t *testing.T, ops []byte) {
		var s sendDeadlines
		defer s.close()
		base := time.UnixMilli(time.Now().Add(time.Hour).UnixMilli())
		parents := make([]context.Context, 4)
		cancels := make([]context.CancelFunc, 4)
		for i := range parents {
			parents[i], cancels[i] = context.WithCancel(context.WithValue(context.Background(), key{}, i))
		}
		defer func() {
			for _, c := range cancels {
				c()
			}
		}()
		type send struct {
			ctx, plain context.Context
			finished   bool
		}
		var sends []send
		for _, op := range ops {
			p := int(op & 3)
			if op&0x80 != 0 {
				cancels[p]() // the application cancels one parent
				continue
			}
			d := base.Add(time.Duration(op>>2&0x1f) * 300 * time.Microsecond)
			ctx, at, done := s.with(parents[p], d)
			plain, pcancel := context.WithDeadline(parents[p], d)
			defer pcancel()
			if want := time.UnixMilli(d.UnixMilli()); !at.Equal(want) {
				t.Fatalf("deadline %v, want %v (d rounded down)", at, want)
			}
			if dl, ok := ctx.Deadline(); !ok || !dl.Equal(at) {
				t.Fatalf("ctx deadline %v %v, want %v", dl, ok, at)
			}
			if ctx.Value(key{}) != plain.Value(key{}) {
				t.Fatalf("value %v, want the parent's %v", ctx.Value(key{}), plain.Value(key{}))
			}
			finished := op&0x40 != 0
			if finished {
				done() // this send is over: its own context may end, a shared one must not
			}
			sends = append(sends, send{ctx, plain, finished})
		}
		for i, sd := range sends {
			if sd.plain.Err() != nil && sd.ctx.Err() == nil {
				t.Fatalf("send %d: plain context ended (%v) but the send's did not", i, sd.plain.Err())
			}
			if !sd.finished && sd.ctx.Err() != nil && sd.plain.Err() == nil {
				t.Fatalf("send %d: context ended (%v) by another send's cancel", i, sd.ctx.Err())
			}
		}
	})
}
