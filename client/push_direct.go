package client

import (
	"context"
	"time"

	"github.com/apogeemq/apogee/internal/message"
	"github.com/apogeemq/apogee/internal/protocol"
)

// consumeMessageDirectlyResult is the CONSUME_MESSAGE_DIRECTLY (309)
// response body (docs/protocol.md §5.3.12), with Java's enum names.
type consumeMessageDirectlyResult struct {
	Order          bool   `json:"order"`
	AutoCommit     bool   `json:"autoCommit"`
	ConsumeResult  string `json:"consumeResult"`
	Remark         string `json:"remark"`
	SpentTimeMills int64  `json:"spentTimeMills"`
}

// directConsumer is implemented by consumers that can run their listener
// on a message an administrator hands them (PushConsumer).
type directConsumer interface {
	consumeDirectly(ctx context.Context, body []byte, brokerName string) consumeMessageDirectlyResult
}

// consumeDirectly runs the listener of the message's topic once, outside
// the queues: no offset is committed and a failure is only reported.
func (c *PushConsumer) consumeDirectly(ctx context.Context, body []byte, brokerName string) consumeMessageDirectlyResult {
	res := consumeMessageDirectlyResult{Order: c.svc.orderly(), AutoCommit: true}
	if c.svc.consumeType() == protocol.ConsumeActively {
		res.ConsumeResult, res.Remark = "CR_THROW_EXCEPTION", "lite pull consumers have no listener"
		return res
	}
	e, _, err := message.DecodeStored(body, message.DecodeOptions{Decompress: true})
	if err != nil {
		res.ConsumeResult, res.Remark = "CR_THROW_EXCEPTION", err.Error()
		return res
	}
	m := toMessageExt(e, MessageQueue{Topic: e.Topic, BrokerName: brokerName, QueueID: int(e.QueueID)}, c.wireGroup, c.cfg.namespace)
	start := time.Now()
	out, lerr := c.callListener(ctx, m.Topic, []*MessageExt{m})
	res.SpentTimeMills = time.Since(start).Milliseconds()
	switch {
	case lerr != nil:
		res.ConsumeResult, res.Remark = "CR_THROW_EXCEPTION", lerr.Error()
	case out == ConsumeSuccess:
		res.ConsumeResult = "CR_SUCCESS"
	default:
		res.ConsumeResult = "CR_LATER"
	}
	return res
}

var _ directConsumer = (*PushConsumer)(nil)

// onConsumeDirectly serves CONSUME_MESSAGE_DIRECTLY (309), relayed by the
// broker from an administrator.
func (e *instanceEnv) onConsumeDirectly(ctx context.Context, _ any, req *protocol.Command) (*protocol.Command, error) {
	e.mu.Lock()
	c, group := e.consumer, e.group
	e.mu.Unlock()
	dc, ok := c.(directConsumer)
	if !ok || req.Ext("consumerGroup") != group {
		return nil, protocol.Errorf(protocol.SystemError, "the consumer group %s not exist in this consumer", req.Ext("consumerGroup"))
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	body, err := protocol.MarshalJSON(dc.consumeDirectly(ctx, req.Body, req.Ext("brokerName")))
	if err != nil {
		return nil, err
	}
	resp := protocol.NewResponse(req, protocol.Success, "")
	resp.Body = body
	return resp, nil
}
