package broker

import (
	"context"
	"strconv"
	"time"

	"github.com/apogeemq/apogee/internal/protocol"
	"github.com/apogeemq/apogee/internal/remoting"
	"github.com/apogeemq/apogee/internal/store"
)

// sendQueue is the broker's send executor (docs/broker.md §1.17):
// sendMessageThreadPoolNums workers behind a queue of
// sendThreadPoolQueueCapacity. It exists (instead of using the remoting
// pool directly) because fast failure needs each request's enqueue time: a
// send that waited longer than waitTimeMillsInSendQueue is answered
// SYSTEM_BUSY "[TIMEOUT_CLEAN_QUEUE]..." instead of being stored, so the
// producer retries elsewhere while the broker catches up.
//
// enqueue runs inline on the connection's read loop (PoolConfig.Inline): it
// timestamps and enqueues, or runs a plain send itself when the queue is
// empty. Neither it nor a worker waits for the disk, because processSend
// answers from the store's completion callback.
type sendQueue struct {
	b     *Broker
	tasks chan sendTask
}

type sendTask struct {
	conn sendConn
	req  *protocol.Command
	// header is the send header already decoded (in-process sends,
	// send_local.go); nil: decoded from req's ext fields.
	header   *protocol.SendMessageRequestHeader
	enqueued time.Time
	// inline: enqueue runs it on the read loop; it waited for nothing, and
	// enqueued is remoting's start of the request (Conn.RequestStart, zero
	// without metrics), so the send reads no clock of its own.
	inline bool
}

func newSendQueue(b *Broker) *sendQueue {
	return &sendQueue{b: b, tasks: make(chan sendTask, b.cfg.SendThreadPoolQueueCapacity)}
}

// enqueue is the remoting processor of the send codes. A send that finds
// the queue empty runs on the read loop itself, as a worker would run it
// (it waited for nothing): handing it to a parked worker costs a wake-up
// per send, the sync producer's latency. Sends never wait for the disk
// (the response is written from the store's completion callback), so the
// read loop is held only for the send's CPU. Replies (a synchronous push,
// maybe to this very connection) and send-backs always queue.
func (q *sendQueue) enqueue(_ context.Context, conn *remoting.Conn, req *protocol.Command) (*protocol.Command, error) {
	t := sendTask{conn: conn, req: req, enqueued: conn.RequestStart()}
	if len(q.tasks) > 0 || !inlineSendCode(protocol.RequestCode(req.Code)) {
		if t.enqueued.IsZero() {
			t.enqueued = time.Now()
		}
		return nil, q.submit(t)
	}
	if err := q.refuse(t); err != nil {
		return nil, err
	}
	t.inline = true
	q.handle(t)
	return nil, nil
}

// submit queues t without blocking. Like Java's rejectRequest it refuses
// at once while the broker is a slave (unless the slave relays the send
// to its master, controller_forward.go) or the page cache is busy, and
// answers SYSTEM_BUSY [OVERLOAD] when the queue is full.
func (q *sendQueue) submit(t sendTask) error {
	if err := q.refuse(t); err != nil {
		return err
	}
	select {
	case q.tasks <- t:
		return nil
	default:
		q.b.stats.sendRejected.Add(1)
		return protocol.Errorf(protocol.SystemBusy, "[OVERLOAD]system busy, start flow control for a while")
	}
}

// inlineSendCode reports whether enqueue may run a send of code on the
// read loop.
func inlineSendCode(code protocol.RequestCode) bool {
	return code == protocol.SendMessage || code == protocol.SendMessageV2 || code == protocol.SendBatchMessage
}

// refuse is submit's refusal of a send the broker takes no sends for now.
func (q *sendQueue) refuse(t sendTask) error {
	if q.b.cfg.Store.BrokerRole == store.RoleSlave && (t.header != nil || !q.b.forwards(t.req)) || q.b.Store.IsOSPageCacheBusy() {
		q.b.stats.sendRejected.Add(1)
		return protocol.Errorf(protocol.SystemBusy, "[REJECTREQUEST]system busy, start flow control for a while")
	}
	return nil
}

// start launches the workers.
func (q *sendQueue) start() {
	for range q.b.cfg.SendMessageThreadPoolNums {
		q.b.goFunc("send-worker", q.work)
	}
}

func (q *sendQueue) work() {
	for {
		select {
		case <-q.b.quit:
			return
		case t := <-q.tasks:
			q.handle(t)
		}
	}
}

func (q *sendQueue) handle(t sendTask) {
	var resp *protocol.Command
	var err error
	fastFailure := q.b.dyn.fastFailure.Load()
	// One clock read at most: start is when processing began (for the RPC
	// latency metric), waited the time in the queue (fast failure).
	var start time.Time
	var waited time.Duration
	if t.inline {
		start = t.enqueued
	} else if fastFailure || q.b.meters != nil {
		start = time.Now()
		waited = start.Sub(t.enqueued)
	}
	// An inline send: refuse checked the page cache just now.
	if fastFailure && !t.inline && q.b.Store.IsOSPageCacheBusy() {
		// Java's fast-failure task drains the send queue while the page
		// cache is busy.
		q.b.stats.pageCacheBusy.Add(1)
		resp = protocol.NewResponse(t.req, protocol.SystemBusy,
			"[PCBUSY_CLEAN_QUEUE]broker busy, start flow control for a while, period in queue: "+
				strconv.FormatInt(waited.Milliseconds(), 10)+"ms, size of queue: "+strconv.Itoa(len(q.tasks)))
	} else if fastFailure && waited >= time.Duration(q.b.dyn.waitSend.Load()) {
		n := q.b.stats.sendQueueTimeout.Add(1)
		if n == 1 || n%1000 == 0 {
			q.b.logger.Warn("send request timed out in queue", "waitedMs", waited.Milliseconds(),
				"queueSize", len(q.tasks), "timeouts", n)
		}
		resp = protocol.NewResponse(t.req, protocol.SystemBusy,
			"[TIMEOUT_CLEAN_QUEUE]broker busy, start flow control for a while, period in queue: "+
				strconv.FormatInt(waited.Milliseconds(), 10)+"ms, size of queue: "+strconv.Itoa(len(q.tasks)))
	} else {
		resp, err = q.b.safeProcessSend(t.conn, t.req, t.header, start, t.inline)
		if err != nil {
			resp = errorResponse(t.req, err)
		}
	}
	if resp == nil || t.req.IsOneway() {
		return
	}
	if err := t.conn.WriteResponse(resp); err != nil {
		q.b.logger.Debug("write send response", "addr", t.conn.RemoteAddr(), "err", err)
	}
}

// safeProcessSend runs processSend, turning a panic into SYSTEM_ERROR as the
// remoting pool would.
func (b *Broker) safeProcessSend(conn sendConn, req *protocol.Command, header *protocol.SendMessageRequestHeader,
	start time.Time, inline bool) (resp *protocol.Command, err error) {
	defer func() {
		if r := recover(); r != nil {
			b.logger.Error("send processor panicked", "panic", r)
			resp, err = nil, protocol.Errorf(protocol.SystemError, "processor panic: %v", r)
		}
	}()
	if protocol.RequestCode(req.Code) == protocol.ConsumerSendMsgBack {
		rc, ok := conn.(*remoting.Conn)
		if !ok {
			return nil, protocol.Errorf(protocol.RequestCodeNotSupported, "send back needs a remoting connection")
		}
		return b.processSendBack(b.baseCtx, rc, req)
	}
	return b.processSendTo(conn, req, header, start, inline)
}
