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
