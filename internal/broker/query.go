package broker

import (
	"context"

	"github.com/apogeemq/apogee/internal/protocol"
	"github.com/apogeemq/apogee/internal/remoting"
)

// processViewMessage serves VIEW_MESSAGE_BY_ID (33; header offset = the
// commit-log offset decoded from an offset message id, topic): the body is
// the stored record (docs/protocol.md §6.8).
func (b *Broker) processViewMessage(_ context.Context, _ *remoting.Conn, req *protocol.Command) (*protocol.Command, error) {
	var h protocol.ViewMessageRequestHeader
	if err := protocol.DecodeHeader(req.ExtFields, &h, false); err != nil {
		return nil, err
	}
	m, err := b.Store.LookMessageByOffset(h.Offset)
	if err != nil {
		return nil, protocol.Errorf(protocol.SystemError, "can not find message by the offset, %d", h.Offset)
	}
	raw, err := b.Store.ReadRawByOffset(h.Offset, m.StoreSize)
	if err != nil {
		return nil, protocol.Errorf(protocol.SystemError, "can not find message by the offset, %d", h.Offset)
	}
	resp := protocol.NewResponse(req, protocol.Success, "")
	resp.Body = raw
	return resp, nil
}

// uniqueKeyQueryMax is the server's own limit for UNIQ_KEY queries.
const uniqueKeyQueryMax = 32

// processQueryMessage serves QUERY_MESSAGE (12; topic, key, maxNum,
// beginTimestamp, endTimestamp; ext _UNIQUE_KEY_QUERY=true for a UNIQ_KEY):
// the body concatenates the stored records whose KEYS or UNIQ_KEY match
// (clients filter again); QUERY_NOT_FOUND when there are none.
func (b *Broker) processQueryMessage(_ context.Context, _ *remoting.Conn, req *protocol.Command) (*protocol.Command, error) {
	var h protocol.QueryMessageRequestHeader
	if err := protocol.DecodeHeader(req.ExtFields, &h, false); err != nil {
		return nil, err
	}
	maxNum := int(h.MaxNum)
	if req.ExtBool("_UNIQUE_KEY_QUERY") {
		maxNum = uniqueKeyQueryMax
	}
	res, err := b.Store.QueryMessageRaw(h.Topic, h.Key, maxNum, h.BeginTimestamp, h.EndTimestamp)
	resp := protocol.NewResponse(req, protocol.Success, "")
	if err != nil || len(res.Messages) == 0 {
		resp.Code, resp.Remark = int32(protocol.QueryNotFound), "can not find message, maybe time range not correct"
		if res != nil {
			resp.ExtFields = protocol.EncodeHeader(&protocol.QueryMessageResponseHeader{
				IndexLastUpdateTimestamp: res.IndexLastUpdateTimestamp,
				IndexLastUpdatePhyoffset: res.IndexLastUpdatePhyoffset,
			}, false)
		}
		return resp, nil
	}
	resp.ExtFields = protocol.EncodeHeader(&protocol.QueryMessageResponseHeader{
		IndexLastUpdateTimestamp: res.IndexLastUpdateTimestamp,
		IndexLastUpdatePhyoffset: res.IndexLastUpdatePhyoffset,
	}, false)
	var body []byte
	for _, m := range res.Messages {
		body = append(body, m...)
	}
	resp.Body = body
	return resp, nil
}
