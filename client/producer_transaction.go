package client

import (
	"context"
	"fmt"
	"runtime/debug"
	"strconv"
	"time"

	"github.com/apogeemq/apogee/internal/message"
	"github.com/apogeemq/apogee/internal/protocol"
	"github.com/apogeemq/apogee/internal/remoting"
)

// Transactional messages (docs/broker.md §1.11, docs/protocol.md
// Appendix B): the producer sends a half message (TRAN_MSG=true, PGROUP,
// sysFlag PREPARED), runs the local transaction, then tells the broker
// COMMIT, ROLLBACK or UNKNOWN with END_TRANSACTION (oneway). A broker that
// has no answer after a while sends CHECK_TRANSACTION_STATE; the listener's
// CheckLocalTransaction decides and the producer answers with
// END_TRANSACTION fromTransactionCheck=true.

// LocalTransactionState is a local transaction's outcome.
type LocalTransactionState int

// Local transaction states (Java COMMIT_MESSAGE, ROLLBACK_MESSAGE, UNKNOW).
const (
	TransactionUnknown LocalTransactionState = iota
	TransactionCommit
	TransactionRollback
)

func (s LocalTransactionState) String() string {
	switch s {
	case TransactionCommit:
		return "COMMIT_MESSAGE"
	case TransactionRollback:
		return "ROLLBACK_MESSAGE"
	}
	return "UNKNOW"
}

// commitOrRollback is the END_TRANSACTION value of a state.
func (s LocalTransactionState) commitOrRollback() int32 {
	switch s {
	case TransactionCommit:
		return message.SysFlagTransactionCommitType
	case TransactionRollback:
		return message.SysFlagTransactionRollbackType
	}
	return message.SysFlagTransactionNotType
}

// TransactionListener runs local transactions and answers broker checks.
type TransactionListener interface {
	// ExecuteLocalTransaction runs on the goroutine calling
	// SendInTransaction after the half message is stored.
	ExecuteLocalTransaction(ctx context.Context, msg *Message, arg any) LocalTransactionState
	// CheckLocalTransaction runs on one of the producer's check goroutines
	// (WithTransactionCheckWorkers) when a broker asks about a half message
	// it got no decision for.
	CheckLocalTransaction(ctx context.Context, msg *MessageExt) LocalTransactionState
}

// TransactionSendResult is the half message's SendResult and the local
// transaction's outcome (what was sent with END_TRANSACTION).
type TransactionSendResult struct {
	SendResult
	LocalState LocalTransactionState
}

// txState is a transactional producer's check machinery.
type txState struct {
	p      *Producer
	checks chan txCheck // bounded; full -> the check is dropped (the broker asks again)
}

type txCheck struct {
	brokerAddr string
	header     map[string]string
	msg        *MessageExt
}

func newTxState(p *Producer) *txState {
	return &txState{p: p, checks: make(chan txCheck, 2000)}
}

func (t *txState) start() {
	for i := 0; i < t.p.cfg.txCheckWorkers; i++ {
		t.p.in.goFunc("client-tx-check", t.worker)
	}
}

// stop is a no-op: the workers stop with the instance.
func (t *txState) stop() {}

// SendInTransaction sends msg as a half message, runs the listener's
// ExecuteLocalTransaction with arg, and commits or rolls back the message
// accordingly. A half message the broker did not store is rolled back
// without running the local transaction.
func (p *Producer) SendInTransaction(ctx context.Context, msg *Message, arg any) (*TransactionSendResult, error) {
	if p.tx == nil {
		return nil, fmt.Errorf("client: SendInTransaction needs WithTransactionListener")
	}
	if err := p.in.running(); err != nil {
		return nil, err
	}
	if msg != nil && msg.Property(PropertyDelayLevel) != "" {
		m := msg.clone()
		delete(m.Properties, PropertyDelayLevel)
		msg = m
	}
	o, err := p.prepare(msg, map[string]string{
		message.PropertyTransactionPrepared: "true",
		message.PropertyProducerGroup:       p.wireGroup,
	})
	if err != nil {
		return nil, err
	}
	res, err := p.sendSync(ctx, o, nil)
	if err != nil {
		return nil, err
	}
	state := TransactionRollback
	var localErr string
	if res.Status == SendOK {
		state, localErr = p.runLocal(ctx, msg, arg)
	}
	if res.TransactionID == "" {
		res.TransactionID = res.MsgID
	}
	if err := p.endTransaction(ctx, msg, res, state, localErr); err != nil {
		// The broker will check back; the outcome is still what we report.
		p.in.logger.Warn("end transaction failed", "topic", o.topic, "msgId", res.MsgID, "err", err)
	}
	return &TransactionSendResult{SendResult: *res, LocalState: state}, nil
}

func (p *Producer) runLocal(ctx context.Context, msg *Message, arg any) (state LocalTransactionState, remark string) {
	defer func() {
		if r := recover(); r != nil {
			p.in.logger.Error("local transaction panicked", "panic", r, "stack", string(debug.Stack()))
			state, remark = TransactionUnknown, fmt.Sprintf("executeLocalTransactionBranch exception: %v", r)
		}
	}()
	return p.cfg.txListener.ExecuteLocalTransaction(ctx, msg, arg), ""
}

// endTransaction sends END_TRANSACTION for a half message (oneway) and
// records the EndTransaction trace (when tracing is on).
func (p *Producer) endTransaction(ctx context.Context, msg *Message, res *SendResult, state LocalTransactionState, remark string) error {
	id := res.OffsetMsgID
	if id == "" {
		return fmt.Errorf("client: no offset message id for transaction %s", res.TransactionID)
	}
	_, commitLogOffset, err := message.ParseOffsetMsgID(id)
	if err != nil {
		return fmt.Errorf("client: transaction %s: %w", res.TransactionID, err)
	}
	addr := p.in.masterAddr(res.Queue.BrokerName)
	if addr == "" {
		return fmt.Errorf("client: no master for broker %s", res.Queue.BrokerName)
	}
	h := protocol.EndTransactionRequestHeader{
		ProducerGroup:        p.wireGroup,
		TranStateTableOffset: res.QueueOffset,
		CommitLogOffset:      commitLogOffset,
		CommitOrRollback:     state.commitOrRollback(),
		MsgID:                res.MsgID,
		TransactionID:        res.TransactionID,
		Topic:                wrapNamespace(p.cfg.namespace, res.Queue.Topic),
		BrokerName:           res.Queue.BrokerName,
	}
	req := protocol.NewRequest(protocol.EndTransaction, protocol.EncodeHeader(&h, false), nil)
	req.Remark = remark
	p.traceEndTransaction(msg, res, addr, state, false)
	octx, cancel := context.WithTimeout(context.WithoutCancel(ctx), p.cfg.sendTimeout)
	defer cancel()
	return p.in.remote.InvokeOneway(octx, addr, req)
}

// onCheck is the CHECK_TRANSACTION_STATE (39) processor. It queues the
// check for a worker and answers nothing (the request is oneway).
func (t *txState) onCheck(_ context.Context, conn *remoting.Conn, req *protocol.Command) (*protocol.Command, error) {
	e, _, err := message.DecodeStored(req.Body, message.DecodeOptions{Decompress: true})
	if err != nil {
		t.p.in.logger.Warn("bad transaction check body", "addr", conn.RemoteAddr(), "err", err)
		return nil, nil
	}
	if g := e.Properties[message.PropertyProducerGroup]; g != "" && g != t.p.wireGroup {
		return nil, nil // another group's message: Go's behaviour (docs/protocol.md §9.2 #17)
	}
	addr := conn.RemoteAddr()
	if bn := req.Ext("bname"); bn != "" {
		if a := t.p.in.masterAddr(bn); a != "" {
			addr = a
		}
	}
	c := txCheck{brokerAddr: addr, header: req.ExtFields, msg: newMessageExt(e, req.Ext("bname"), t.p.cfg.namespace)}
	select {
	case t.checks <- c:
	default:
		t.p.in.logger.Warn("transaction check queue full, check dropped", "msgId", c.msg.MsgID)
	}
	return nil, nil
}

func (t *txState) worker() {
	for {
		select {
		case <-t.p.in.quit:
			return
		case c := <-t.checks:
			t.check(c)
		}
	}
}

func (t *txState) check(c txCheck) {
	p := t.p
	ctx, cancel := context.WithTimeout(p.in.ctx, time.Minute)
	defer cancel()
	state := TransactionUnknown
	remark := ""
	func() {
		defer func() {
			if r := recover(); r != nil {
				p.in.logger.Error("transaction check panicked", "panic", r, "stack", string(debug.Stack()))
				remark = fmt.Sprintf("checkLocalTransactionState exception: %v", r)
			}
		}()
		state = p.cfg.txListener.CheckLocalTransaction(ctx, c.msg)
	}()
	msgID := c.header["msgId"]
	if u := c.msg.Property(message.PropertyUniqClientMessageIDKeyidx); u != "" {
		msgID = u
	}
	txID := c.header["transactionId"]
	if txID == "" {
		txID = c.msg.Property(message.PropertyTransactionID)
	}
	h := protocol.EndTransactionRequestHeader{
		ProducerGroup:        p.wireGroup,
		TranStateTableOffset: headerInt64(c.header, "tranStateTableOffset", c.msg.QueueOffset),
		CommitLogOffset:      headerInt64(c.header, "commitLogOffset", c.msg.CommitLogOffset),
		CommitOrRollback:     state.commitOrRollback(),
		FromTransactionCheck: true,
		MsgID:                msgID,
		TransactionID:        txID,
	}
	req := protocol.NewRequest(protocol.EndTransaction, protocol.EncodeHeader(&h, false), nil)
	req.Remark = remark
	p.traceEndTransaction(&c.msg.Message, &SendResult{MsgID: msgID, TransactionID: txID,
		RegionID: c.msg.Property(message.PropertyMsgRegion)}, c.brokerAddr, state, true)
	if err := p.in.remote.InvokeOneway(ctx, c.brokerAddr, req); err != nil {
		p.in.logger.Warn("answer transaction check failed", "addr", c.brokerAddr, "msgId", msgID, "err", err)
	}
}

// headerInt64 reads an integer field of a broker's request header,
// falling back to def when it is absent or not a number.
func headerInt64(ext map[string]string, key string, def int64) int64 {
	if n, err := strconv.ParseInt(ext[key], 10, 64); err == nil {
		return n
	}
	return def
}
