package broker

import (
	"bytes"
	"context"
	"maps"
	"slices"
	"strconv"
	"time"

	"github.com/apogeemq/apogee/internal/protocol"
)

// Send forwarding (controller mode; DESIGN.md "Client recovery: send
// forwarding"). An official client resolves a broker name to its master
// address from the name server's route, which it polls every 30 s (the Go
// v2 client has no other trigger for a producer). After a failover its
// sends keep going to the old master's address until that poll. In
// controller mode the old master comes back at the same address as a
// slave (in-process restart after a fence, or a supervised restart after a
// crash); that slave relays SEND_MESSAGE, SEND_MESSAGE_V2 and
// SEND_BATCH_MESSAGE to the master the controller named and answers with
// the master's response, so the stale producer recovers as soon as the
// old address serves again instead of at its next route poll.
//
// Invariants:
//   - Only a slave instance forwards, never a master (fenced or not): a
//     master that lost its lease refuses writes (the fence), and a slave
//     acknowledges only what the master acknowledged (the master's answer
//     is relayed unchanged, allAckInSyncStateSet included).
//   - A forwarded request carries flagForwarded and is never forwarded
//     again: two slaves with stale views cannot bounce a send between
//     them; the second one refuses it as a slave does.
//   - The target is the master the controller named in this slave's last
//     view (followedMaster); without one the slave refuses as before.

// flagForwarded marks a send relayed by a slave to its master: a bit of the
// remoting header's flag word that RocketMQ leaves unused (bit 0 response,
// bit 1 oneway). It is only ever set broker to broker.
const flagForwarded int32 = 1 << 8

// forwardTimeout bounds one relayed send: longer than a client's usual 3 s
// send timeout, so the client gives up first and the relay never answers a
// request nobody waits for with a stale error.
const forwardTimeout = 5 * time.Second

// forwardSend relays req to the master when this broker is a controller-mode
// slave that knows its master; the answer is written to conn later. It
// reports whether it took the request (false: process it locally).
func (b *Broker) forwardSend(conn sendConn, req *protocol.Command) bool {
	target, ok := b.forwardTarget(req)
	if !ok {
		return false
	}
	fwd := &protocol.Command{
		Code:      req.Code,
		Language:  req.Language,
		Version:   req.Version,
		Flag:      flagForwarded,
		ExtFields: maps.Clone(req.ExtFields),
		ExtList:   slices.Clone(req.ExtList),
		Body:      bytes.Clone(req.Body), // a decoded body aliases the frame buffer
	}
	b.ctl.forwarded.Add(1)
	ctx, cancel := context.WithTimeout(b.baseCtx, forwardTimeout)
	if req.IsOneway() {
		defer cancel()
		if err := b.ctl.client.InvokeOneway(ctx, target, fwd); err != nil {
			b.logger.Debug("controller mode: forwarding a oneway send to the master failed", "master", target, "err", err)
		}
		return true
	}
	err := b.ctl.client.InvokeAsync(ctx, target, fwd, func(resp *protocol.Command, err error) {
		cancel()
		b.writeForwarded(conn, req, target, resp, err)
	})
	if err != nil {
		cancel()
		b.writeForwarded(conn, req, target, nil, err)
	}
	return true
}

// forwardTarget returns the master to relay req to, if this instance
// relays it (the send queue admits such a request on a slave, and
// processSend hands it to forwardSend).
func (b *Broker) forwardTarget(req *protocol.Command) (string, bool) {
	if !b.cfg.EnableControllerMode || !b.cfg.ForwardSendToMaster || b.ctl.master || b.ctl.client == nil {
		return "", false
	}
	switch protocol.RequestCode(req.Code) {
	case protocol.SendMessage, protocol.SendMessageV2, protocol.SendBatchMessage:
	default:
		return "", false
	}
	if req.Flag&flagForwarded != 0 {
		return "", false
	}
	target := b.followedMaster()
	if target == "" || target == b.addr {
		return "", false
	}
	return target, true
}

// forwards reports whether this slave relays req to its master
// (send_queue.go admits it instead of refusing it as a slave).
func (b *Broker) forwards(req *protocol.Command) bool {
	_, ok := b.forwardTarget(req)
	return ok
}

// writeForwarded answers the original request with the master's response
// (code, remark, header, body) or, when the relay failed,
// SERVICE_NOT_AVAILABLE, which official producers retry.
func (b *Broker) writeForwarded(conn sendConn, req *protocol.Command, target string, resp *protocol.Command, err error) {
	var out *protocol.Command
	if err != nil {
		b.logger.Debug("controller mode: forwarding a send to the master failed", "master", target, "err", err)
		out = protocol.NewResponse(req, protocol.ServiceNotAvailable, "broker is a slave; forwarding to master "+target+" failed: "+err.Error())
	} else {
		out = protocol.NewResponse(req, protocol.ResponseCode(resp.Code), resp.Remark)
		out.ExtFields, out.ExtList, out.Body = resp.ExtFields, resp.ExtList, resp.Body
	}
	if werr := conn.WriteResponse(out); werr != nil {
		b.logger.Debug("write forwarded send response", "addr", conn.RemoteAddr(), "opaque", req.Opaque, "err", werr)
	}
}

// addForwardRuntimeInfo adds the relay count to GET_BROKER_RUNTIME_INFO
// (sendForwardedToMaster: sends this instance relayed to its master).
func (b *Broker) addForwardRuntimeInfo(table map[string]string) {
	if b.cfg.EnableControllerMode {
		table["sendForwardedToMaster"] = strconv.FormatInt(b.ctl.forwarded.Load(), 10)
	}
}
