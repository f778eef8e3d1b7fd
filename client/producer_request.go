package client

import (
	"context"
	"fmt"
	"net/netip"
	"strconv"
	"sync"
	"time"

	"github.com/apogeemq/apogee/internal/message"
	"github.com/apogeemq/apogee/internal/names"
	"github.com/apogeemq/apogee/internal/protocol"
	"github.com/apogeemq/apogee/internal/remoting"
)

// Request/reply (RocketMQ 4.6+): the requester sends a normal message
// carrying CORRELATION_ID, REPLY_TO_CLIENT (its client id) and TTL; the
// consumer that handles it answers with SendReply, a message to
// "<cluster>_REPLY_TOPIC" sent with SEND_REPLY_MESSAGE_V2 (325); the broker
// pushes it to the requester's connection with PUSH_REPLY_MESSAGE_TO_CLIENT
// (326), which completes the waiting Request (docs/protocol.md §3.3.1, §3.6).

// requestTable matches pushed replies to waiting requests.
type requestTable struct {
	mu      sync.Mutex
	waiting map[string]chan *MessageExt // correlation id -> reply (capacity 1)
}

func (t *requestTable) add(id string) chan *MessageExt {
	ch := make(chan *MessageExt, 1)
	t.mu.Lock()
	if t.waiting == nil {
		t.waiting = make(map[string]chan *MessageExt)
	}
	t.waiting[id] = ch
	t.mu.Unlock()
	return ch
}

func (t *requestTable) remove(id string) {
	t.mu.Lock()
	delete(t.waiting, id)
	t.mu.Unlock()
}

func (t *requestTable) complete(id string, m *MessageExt) bool {
	t.mu.Lock()
	ch := t.waiting[id]
	delete(t.waiting, id)
	t.mu.Unlock()
	if ch == nil {
		return false
	}
	ch <- m // capacity 1, one completion per id
	return true
}

// Request sends msg and waits for its reply, until ctx ends or the send
// timeout passes (whichever comes first; it also bounds the TTL the
// replier sees). The reply's Body and Properties are what the replier sent.
func (p *Producer) Request(ctx context.Context, msg *Message) (*MessageExt, error) {
	if err := p.in.running(); err != nil {
		return nil, err
	}
	deadline := p.sendDeadline(ctx)
	ctx, cancel := context.WithDeadline(ctx, deadline)
	defer cancel()
	id := p.in.idGen.Next()
	o, err := p.prepare(msg, map[string]string{
		message.PropertyCorrelationID:        id,
		message.PropertyMessageReplyToClient: p.in.clientID,
		message.PropertyMessageTTL:           strconv.FormatInt(max(1, time.Until(deadline).Milliseconds()), 10),
	})
	if err != nil {
		return nil, err
	}
	ch := p.requests.add(id)
	defer p.requests.remove(id)
	if _, err := p.sendSync(ctx, o, nil); err != nil {
		return nil, err
	}
	select {
	case m := <-ch:
		return m, nil
	case <-ctx.Done():
		return nil, fmt.Errorf("%w: no reply to request %s (topic %s): %w", ErrTimeout, id, msg.Topic, ctx.Err())
	}
}

// SendReply answers request (a message received by a consumer that a
// Request sent) with body: the reply goes to the requester through the
// broker. It fails if request carries no CORRELATION_ID / REPLY_TO_CLIENT.
func (p *Producer) SendReply(ctx context.Context, request *MessageExt, body []byte) (*SendResult, error) {
	if err := p.in.running(); err != nil {
		return nil, err
	}
	corr := request.Property(message.PropertyCorrelationID)
	to := request.Property(message.PropertyMessageReplyToClient)
	if corr == "" || to == "" {
		return nil, fmt.Errorf("%w: message %s is not a request (no %s/%s)", ErrIllegalMessage, request.MsgID,
			message.PropertyCorrelationID, message.PropertyMessageReplyToClient)
	}
	cluster := request.Property(message.PropertyCluster)
	if cluster == "" {
		return nil, fmt.Errorf("%w: request %s has no %s property", ErrIllegalMessage, request.MsgID, message.PropertyCluster)
	}
	reply := &Message{Topic: cluster + names.ReplyTopicSuffix, Body: body} // body must not be empty (validated)
	o, err := p.prepare(reply, map[string]string{
		message.PropertyCorrelationID:        corr,
		message.PropertyMessageReplyToClient: to,
		message.PropertyMessageTTL:           request.Property(message.PropertyMessageTTL),
		message.PropertyMessageType:          message.ReplyMessageType,
	})
	if err != nil {
		return nil, err
	}
	o.reply = true
	return p.sendSync(ctx, o, nil)
}

// onReply is the PUSH_REPLY_MESSAGE_TO_CLIENT (326) processor.
func (p *Producer) onReply(_ context.Context, conn *remoting.Conn, req *protocol.Command) (*protocol.Command, error) {
	var h protocol.SendMessageRequestHeader
	if err := protocol.DecodeHeader(req.ExtFields, &h, false); err != nil {
		return nil, err
	}
	props := message.DecodeProperties(h.Properties)
	body := req.Body
	if message.IsDecompressible(h.SysFlag) {
		if plain, err := message.DecompressBody(h.SysFlag, body, message.DefaultMaxDecompressedSize); err == nil {
			body = plain
		}
	}
	storeTs, _ := strconv.ParseInt(req.Ext("storeTimestamp"), 10, 64)
	m := &MessageExt{
		Message:        Message{Topic: unwrapNamespace(p.cfg.namespace, h.Topic), Body: body, Flag: h.Flag, Properties: props},
		QueueID:        h.QueueID,
		SysFlag:        h.SysFlag,
		BornTime:       time.UnixMilli(h.BornTimestamp),
		BornHost:       req.Ext("bornHost"),
		StoreTime:      time.UnixMilli(storeTs),
		StoreHost:      req.Ext("storeHost"),
		ReconsumeTimes: h.ReconsumeTimes,
	}
	m.MsgID = props[message.PropertyUniqClientMessageIDKeyidx]
	if ap, err := netip.ParseAddrPort(m.StoreHost); err == nil && m.MsgID == "" {
		m.MsgID = message.OffsetMsgID(ap, 0)
	}
	if !p.requests.complete(props[message.PropertyCorrelationID], m) {
		p.in.logger.Debug("reply for no waiting request", "addr", conn.RemoteAddr(), "correlationId", props[message.PropertyCorrelationID])
	}
	return protocol.NewResponse(req, protocol.Success, ""), nil
}
