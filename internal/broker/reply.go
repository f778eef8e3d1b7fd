package broker

import (
	"context"
	"net/netip"
	"strconv"
	"time"

	"github.com/apogeemq/apogee/internal/message"
	"github.com/apogeemq/apogee/internal/protocol"
	"github.com/apogeemq/apogee/internal/remoting"
	"github.com/apogeemq/apogee/internal/store"
)

// pushReplyTimeout bounds PUSH_REPLY_MESSAGE_TO_CLIENT.
const pushReplyTimeout = 3 * time.Second

// sendReply handles SEND_REPLY_MESSAGE (324, long names; Go) and
// SEND_REPLY_MESSAGE_V2 (325, letters; Java): the reply is pushed with
// PUSH_REPLY_MESSAGE_TO_CLIENT (326) to the requester's connection, the
// producer channel whose client id is the REPLY_TO_CLIENT property
// (docs/protocol.md §3.3.1 reply specifics, §3.6), and then stored to its topic
// (normally <cluster>_REPLY_TOPIC) when it has a body. A failed push is
// answered SYSTEM_ERROR with the reason.
//
// The push is a synchronous call on a send worker; replies are rare and
// small, as in RocketMQ's ReplyMessageProcessor.
func (b *Broker) sendReply(conn *remoting.Conn, req *protocol.Command, h *protocol.SendMessageRequestHeader, ext *message.Ext, start time.Time) (*protocol.Command, error) {
	to := ext.Properties[message.PropertyMessageReplyToClient]
	ch, ok := b.Clients.ProducerChannelByClientID(to)
	if !ok {
		return nil, protocol.Errorf(protocol.SystemError, "push reply message fail, channel of <%s> not found.", to)
	}
	storeTs := b.now().UnixMilli()
	ext.Properties[message.PropertyPushReplyTime] = strconv.FormatInt(storeTs, 10)
	ph := protocol.EncodeHeader(h, false)
	ph["topic"] = ext.Topic
	ph["queueId"] = strconv.Itoa(int(ext.QueueID))
	ph["properties"] = message.EncodeProperties(ext.Properties)
	ph["bornHost"] = hostString(ext.BornHost)
	ph["storeHost"] = b.addr
	ph["storeTimestamp"] = strconv.FormatInt(storeTs, 10)
	delete(ph, "bname")
	push := protocol.NewRequest(protocol.PushReplyMessageToClient, ph, ext.Body)
	ctx, cancel := context.WithTimeout(b.baseCtx, pushReplyTimeout)
	defer cancel()
	resp, err := b.server.InvokeSync(ctx, ch.Conn, push)
	if err != nil {
		return nil, protocol.Errorf(protocol.SystemError, "push reply message to %s fail: %v", to, err)
	}
	if resp.Code != int32(protocol.Success) {
		return nil, protocol.Errorf(protocol.SystemError, "push reply message to %s fail: code %d %s", to, resp.Code, resp.Remark)
	}
	if len(ext.Body) == 0 {
		// Nothing to store (the Go client's replies carry no body).
		r := protocol.NewResponse(req, protocol.Success, "")
		r.ExtFields = protocol.EncodeHeader(&protocol.SendMessageResponseHeader{
			QueueID: ext.QueueID, MsgRegion: b.cfg.RegionID, TraceOn: strconv.FormatBool(b.cfg.TraceOn)}, false)
		return r, nil
	}
	queueID := ext.QueueID
	tm := b.meters.topic(ext.Topic) // meters.go
	start = b.meters.startAt(start) // meters_rpc.go: zero without metrics
	b.Store.PutMessage(ext, func(res store.PutResult) {
		b.meters.observeRPC(req.Code, b.writeSendResponse(conn, req, res, queueID, "", tm, MessageNormal, ""), start)
	})
	return nil, nil
}

func hostString(a netip.AddrPort) string {
	if !a.IsValid() {
		return ""
	}
	return a.String()
}
