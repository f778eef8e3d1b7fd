package natsbench

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/apogeemq/apogee/internal/testutil"
)

// natsStream is the JetStream stream every case uses.
const natsStream = "NATSBENCH"

// natsSystem drives NATS JetStream through nats.go's jetstream package: one
// connection shared by every publishing goroutine (as the Apogee side
// shares one Producer), Publish for sync sends, PublishAsync with ack/error
// handlers for pipelined ones, and a pull consumer's Messages iterator for
// draining. The stream is the file-storage, one-replica, limits-retention
// default; no message ids (no de-duplication work), as Apogee does none.
type natsSystem struct {
	srv     *natsServer
	nc      *nats.Conn
	js      jetstream.JetStream
	subject string
	done    func(error) // beginAsync's callback; set before the async workers start
}

func newNATS(tb testing.TB, durable bool, window int) *natsSystem {
	tb.Helper()
	srv := startNATS(tb, durable)
	nc, err := nats.Connect(srv.url)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(nc.Close)
	s := &natsSystem{srv: srv, nc: nc, subject: strings.ToLower(benchTopic)}
	// The ack and error handlers run on nats.go's reply goroutine: they
	// only call done, which releases a window slot and counts. The library's
	// own pending limit is set above the benchmark's window so that only the
	// benchmark's window throttles, as on the Apogee side.
	s.js, err = jetstream.New(nc,
		jetstream.WithPublishAsyncMaxPending(2*window+16),
		jetstream.WithPublishAsyncAckHandler(func(jetstream.JetStream, *nats.Msg, *jetstream.PubAck) { s.done(nil) }),
		jetstream.WithPublishAsyncErrHandler(func(_ jetstream.JetStream, _ *nats.Msg, err error) { s.done(err) }))
	if err != nil {
		tb.Fatal(err)
	}
	ctx := testutil.Context(tb, 30*time.Second)
	if _, err := s.js.CreateStream(ctx, jetstream.StreamConfig{
		Name: natsStream, Subjects: []string{s.subject}, Storage: jetstream.FileStorage, Replicas: 1,
	}); err != nil {
		tb.Fatal(err)
	}
	return s
}

func (s *natsSystem) name() string  { return "nats" }
func (s *natsSystem) server() *proc { return s.srv.proc }

func (s *natsSystem) publish(ctx context.Context, b []byte) error {
	_, err := s.js.Publish(ctx, s.subject, b)
	return err
}

func (s *natsSystem) beginAsync(done func(error)) { s.done = done }

func (s *natsSystem) publishAsync(_ context.Context, b []byte) error {
	_, err := s.js.PublishAsync(s.subject, b)
	return err
}

func (s *natsSystem) stored(ctx context.Context) (int64, error) {
	st, err := s.js.Stream(ctx, natsStream)
	if err != nil {
		return 0, err
	}
	info, err := st.Info(ctx)
	if err != nil {
		return 0, err
	}
	return int64(info.State.Msgs), nil
}

// drain reads the stream from its first message with a new ephemeral pull
// consumer (AckNone: like Apogee's consumers, nothing is acknowledged per
// message) through the Messages iterator with its default prefetch, until n
// messages arrived; it returns the time from its start to the n-th message.
func (s *natsSystem) drain(ctx context.Context, n int64, seen func([]byte) error) (time.Duration, error) {
	start := time.Now()
	cons, err := s.js.CreateConsumer(ctx, natsStream, jetstream.ConsumerConfig{
		AckPolicy: jetstream.AckNonePolicy, DeliverPolicy: jetstream.DeliverAllPolicy,
	})
	if err != nil {
		return 0, err
	}
	defer func() {
		dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		defer cancel()
		_ = s.js.DeleteConsumer(dctx, natsStream, cons.CachedInfo().Name)
	}()
	it, err := cons.Messages()
	if err != nil {
		return 0, err
	}
	defer it.Stop()
	unblock := context.AfterFunc(ctx, it.Stop) // Next has no context
	defer unblock()
	var got int64
	for got < n {
		m, err := it.Next()
		if err != nil {
			if errors.Is(err, jetstream.ErrMsgIteratorClosed) && ctx.Err() != nil {
				err = ctx.Err()
			}
			return 0, fmt.Errorf("nats: next after %d of %d: %w", got, n, err)
		}
		if err := seen(m.Data()); err != nil {
			return 0, err
		}
		got++
	}
	return time.Since(start), nil
}
