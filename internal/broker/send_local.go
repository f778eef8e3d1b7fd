package broker

import (
	"net/netip"
	"time"

	"github.com/apogeemq/apogee/internal/protocol"
)

// sendConn is where a send's response goes: a remoting connection, or the
// in-process gRPC endpoint's callback (localSendConn). Only the send path
// takes it; everything a reply or send-back needs beyond it requires a
// *remoting.Conn.
type sendConn interface {
	WriteResponse(*protocol.Command) error
	RemoteAddr() string
	RemoteAddrPort() netip.AddrPort
}

// localSendConn answers an in-process send by calling done: the send
// path writes exactly one response per request (its error, or the store's
// completion), so done runs once.
type localSendConn struct {
	peer netip.AddrPort
	done func(*protocol.Command)
}

func (c localSendConn) WriteResponse(resp *protocol.Command) error {
	resp.Flag |= protocol.FlagResponse
	c.done(resp)
	return nil
}

func (c localSendConn) RemoteAddr() string             { return c.peer.String() }
func (c localSendConn) RemoteAddrPort() netip.AddrPort { return c.peer }

// SendLocal stores a SEND_MESSAGE_V2 from the gRPC endpoint running inside
// this process (local mode): the same gate, send queue, checks, store
// write and response as a remoting send, without encoding the request, a
// loopback connection or decoding it again. bornHost is the producer's
// address. done receives the response exactly once, on a send worker or
// the store's completion goroutine, and must not block; it is not called
// if the broker shuts down with the request still queued (the caller
// bounds its wait).
func (b *Broker) SendLocal(h *protocol.SendMessageRequestHeader, body []byte, bornHost netip.AddrPort, done func(*protocol.Command)) {
	req := &protocol.Command{
		Code: int32(protocol.SendMessageV2), Language: protocol.LanguageGo, Version: protocol.CurrentVersion,
		Body: body, SerializeType: protocol.SerializeRocketMQ,
	}
	conn := localSendConn{peer: bornHost, done: done}
	if b.state.Load() != stateRunning {
		conn.WriteResponse(protocol.NewResponse(req, protocol.SystemBusy, "[REJECTREQUEST]system busy, start flow control for a while"))
		return
	}
	if err := b.sendQueue.submit(sendTask{conn: conn, req: req, header: h, enqueued: time.Now()}); err != nil {
		conn.WriteResponse(errorResponse(req, err))
	}
}
