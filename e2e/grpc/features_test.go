package grpce2e

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	v2 "github.com/apache/rocketmq-client-go/v2"
	"github.com/apache/rocketmq-client-go/v2/consumer"
	"github.com/apache/rocketmq-client-go/v2/primitive"
	rmq "github.com/apache/rocketmq-clients/golang/v5"
)

func newProducer(t testing.TB, endpoint string, opts ...rmq.ProducerOption) rmq.Producer {
	t.Helper()
	p, err := rmq.NewProducer(clientConfig(endpoint, ""), opts...)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Start(); err != nil {
		t.Fatalf("producer start: %v", err)
	}
	t.Cleanup(func() { p.GracefulStop() })
	return p
}

// remotingConsumer collects every message of topic with a v2 push consumer.
type remotingConsumer struct {
	mu   sync.Mutex
	msgs map[string]*primitive.MessageExt
	at   map[string]time.Time
}

func consumeRemoting(t *testing.T, namesrv, group, topic string) *remotingConsumer {
	t.Helper()
	rc := &remotingConsumer{msgs: map[string]*primitive.MessageExt{}, at: map[string]time.Time{}}
	c, err := v2.NewPushConsumer(consumer.WithGroupName(group), consumer.WithNameServer([]string{namesrv}),
		consumer.WithConsumeFromWhere(consumer.ConsumeFromFirstOffset))
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Subscribe(topic, consumer.MessageSelector{}, func(_ context.Context, msgs ...*primitive.MessageExt) (consumer.ConsumeResult, error) {
		rc.mu.Lock()
		defer rc.mu.Unlock()
		for _, m := range msgs {
			if _, ok := rc.msgs[m.MsgId]; !ok {
				rc.msgs[m.MsgId] = m
				rc.at[m.MsgId] = time.Now()
			}
		}
		return consumer.ConsumeSuccess, nil
	}); err != nil {
		t.Fatal(err)
	}
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Shutdown() })
	return rc
}

func (rc *remotingConsumer) get(id string) (*primitive.MessageExt, time.Time, bool) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	m, ok := rc.msgs[id]
	return m, rc.at[id], ok
}

func (rc *remotingConsumer) count() int {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return len(rc.msgs)
}

// TestProducerFIFOAndDelay: FIFO messages of one message group land on one
// queue in send order (and a FIFO topic refuses normal messages on the
// client, since the route accepts FIFO only); a delay message is not
// delivered before its delivery time.
func TestProducerFIFOAndDelay(t *testing.T) {
	s := startServer(t, "")
	s.createTopic(t, "GrpcFifoTopic", "FIFO", 4)
	s.createTopic(t, "GrpcDelayTopic", "DELAY", 2)
	withSSL(t, true)
	p := newProducer(t, s.grpc, rmq.WithTopics("GrpcFifoTopic", "GrpcDelayTopic"))
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	order := map[string][]string{} // message group -> ids in send order
	for i := range 12 {
		g := fmt.Sprintf("group-%d", i%3)
		m := &rmq.Message{Topic: "GrpcFifoTopic", Body: []byte(fmt.Sprintf("%s #%d", g, i))}
		m.SetMessageGroup(g)
		res, err := p.Send(ctx, m)
		if err != nil {
			t.Fatalf("FIFO send %d: %v", i, err)
		}
		order[g] = append(order[g], res[0].MessageID)
	}
	if _, err := p.Send(ctx, &rmq.Message{Topic: "GrpcFifoTopic", Body: []byte("normal")}); err == nil {
		t.Error("a NORMAL message to a FIFO topic was accepted")
	}
	deliverAt := time.Now().Add(3 * time.Second)
	dm := &rmq.Message{Topic: "GrpcDelayTopic", Body: []byte("later")}
	dm.SetDelayTimestamp(deliverAt)
	dres, err := p.Send(ctx, dm)
	if err != nil {
		t.Fatalf("delay send: %v", err)
	}

	fifo := consumeRemoting(t, s.namesrv, "GrpcFifoReader", "GrpcFifoTopic")
	delayed := consumeRemoting(t, s.namesrv, "GrpcDelayReader", "GrpcDelayTopic")
	eventually(t, 30*time.Second, "the FIFO messages", func() bool { return fifo.count() == 12 })
	for g, ids := range order {
		var queue int = -1
		var last int64 = -1
		for _, id := range ids {
			m, _, _ := fifo.get(id)
			if queue >= 0 && m.Queue.QueueId != queue {
				t.Errorf("%s: message %s on queue %d, earlier ones on %d", g, id, m.Queue.QueueId, queue)
			}
			if m.QueueOffset <= last {
				t.Errorf("%s: message %s at offset %d after %d: out of send order", g, id, m.QueueOffset, last)
			}
			queue, last = m.Queue.QueueId, m.QueueOffset
			if m.GetShardingKey() != g && m.GetProperty("__SHARDINGKEY") != g {
				t.Errorf("%s: message %s carries sharding key %q", g, id, m.GetProperty("__SHARDINGKEY"))
			}
		}
	}
	eventually(t, 30*time.Second, "the delay message", func() bool { return delayed.count() == 1 })
	if _, at, ok := delayed.get(dres[0].MessageID); !ok || at.Before(deliverAt.Add(-500*time.Millisecond)) {
		t.Errorf("delay message consumed at %s, due %s (found %v)", at.Format(time.StampMilli), deliverAt.Format(time.StampMilli), ok)
	}
}

// TestProducerTransactions: a committed half message is delivered, a
// rolled-back one never is, and one left unresolved is recovered through
// Telemetry: the broker's check reaches the producer's checker, whose
// COMMIT delivers it (docs/grpc.md §10).
func TestProducerTransactions(t *testing.T) {
	s := startServer(t, "", "--set", "transactionTimeOut=1000", "--set", "transactionCheckInterval=1000")
	const topic = "GrpcTxnTopic"
	s.createTopic(t, topic, "TRANSACTION", 2)
	var checked atomic.Int32
	var orphanID atomic.Value
	orphanID.Store("")
	checker := &rmq.TransactionChecker{Check: func(mv *rmq.MessageView) rmq.TransactionResolution {
		if mv.GetMessageId() == orphanID.Load().(string) {
			checked.Add(1)
			return rmq.COMMIT
		}
		return rmq.ROLLBACK
	}}
	withSSL(t, true)
	p := newProducer(t, s.grpc, rmq.WithTopics(topic), rmq.WithTransactionChecker(checker))
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	send := func(body string) (string, rmq.Transaction) {
		tx := p.BeginTransaction()
		res, err := p.SendWithTransaction(ctx, &rmq.Message{Topic: topic, Body: []byte(body)}, tx)
		if err != nil {
			t.Fatalf("transactional send %q: %v", body, err)
		}
		return res[0].MessageID, tx
	}
	commitID, tx := send("commit me")
	if err := tx.Commit(); err != nil {
		t.Fatalf("commit: %v", err)
	}
	rollbackID, tx := send("roll me back")
	if err := tx.RollBack(); err != nil {
		t.Fatalf("rollback: %v", err)
	}
	id, _ := send("orphan") // never resolved by the application
	orphanID.Store(id)

	rc := consumeRemoting(t, s.namesrv, "GrpcTxnReader", topic)
	eventually(t, 45*time.Second, "the committed and the recovered message", func() bool { return rc.count() >= 2 })
	if _, _, ok := rc.get(commitID); !ok {
		t.Error("committed message not delivered")
	}
	if _, _, ok := rc.get(id); !ok {
		t.Error("orphaned message not recovered")
	}
	if checked.Load() == 0 {
		t.Error("the transaction checker was never asked")
	}
	time.Sleep(2 * time.Second) // a late rollback delivery would show now
	if _, _, ok := rc.get(rollbackID); ok {
		t.Error("rolled-back message delivered")
	}
}
