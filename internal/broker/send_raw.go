package broker

import (
	"net/netip"
	"strconv"
	"time"

	"github.com/apogeemq/apogee/internal/message"
	"github.com/apogeemq/apogee/internal/protocol"
	"github.com/apogeemq/apogee/internal/remoting"
	"github.com/apogeemq/apogee/internal/store"
)

// plainSendProperties reports whether a single send's raw properties string
// can be stored verbatim (plus the broker's keys) instead of going through a
// map: every pair is canonical (message.NextProperty, so readers decode the
// same pairs), and no property asks for a rewrite or is one the broker sets
// (delay level, timer, transaction half, POP_CK, CLUSTER, MSG_REGION,
// TRACE_ON). It returns the client's UNIQ_KEY ("" if absent). It allocates
// nothing.
func plainSendProperties(raw string) (uniq string, ok bool) {
	for n := 0; raw != "" && n < message.MaxPropertiesSize; n++ {
		name, value, rest, canonical := message.NextProperty(raw)
		if !canonical {
			return "", false
		}
		switch name {
		case message.PropertyDelayTimeLevel, message.PropertyTransactionPrepared,
			message.PropertyTimerDeliverMS, message.PropertyTimerDelaySec, message.PropertyTimerDelayMS,
			message.PropertyPopCK, message.PropertyCluster, message.PropertyMsgRegion, message.PropertyTraceSwitch:
			return "", false
		case message.PropertyUniqClientMessageIDKeyidx:
			uniq = value
		}
		raw = rest
	}
	return uniq, raw == ""
}

// sendPlain stores a single send whose properties need no rewriting (see
// plainSendProperties): the client's properties string is stored as sent
// with CLUSTER, MSG_REGION, TRACE_ON and UNIQ_KEY (when absent) appended, the
// same pairs the map path stores (keys are not re-sorted). This skips the
// map build and the sorted re-encode per message.
//
// inline says the send runs on its remoting connection's read loop
// (send_queue.go). If it came in a small read (Conn.ReadSmall: a
// synchronous sender's), a staged put is committed by that read loop
// before it next waits (commitDeferred), after the last request of the
// read, instead of by the store's committer goroutine.
func (b *Broker) sendPlain(conn sendConn, req *protocol.Command, h *protocol.SendMessageRequestHeader,
	uniq string, sysFlag int32, bornHost netip.AddrPort, start time.Time, inline bool) {
	// The broker's pairs go to the encoder as a stack array: no string is
	// built per message.
	extra := [8]string{
		message.PropertyCluster, b.cfg.BrokerClusterName,
		message.PropertyMsgRegion, b.cfg.RegionID,
		message.PropertyTraceSwitch, strconv.FormatBool(b.cfg.TraceOn),
	}
	pairs := extra[:6]
	if uniq == "" {
		uniq = b.uniq.Next()
		pairs = append(pairs, message.PropertyUniqClientMessageIDKeyidx, uniq)
	}
	ext := &message.Ext{
		Message: message.Message{
			Topic: h.Topic,
			Flag:  h.Flag,
			Body:  req.Body,
		},
		QueueID:        h.QueueID,
		SysFlag:        sysFlag,
		BornTimestamp:  h.BornTimestamp,
		BornHost:       bornHost,
		StoreHost:      b.storeHost,
		ReconsumeTimes: h.ReconsumeTimes,
	}
	b.stats.sendRequests.Add(1)
	queueID := h.QueueID
	tm, mt := b.meters.topic(h.Topic), plainMessageType(h.Properties) // meters.go
	start = b.meters.startAt(start)                                   // meters_rpc.go: zero without metrics
	// A zero start (no metrics) makes the store read the clock itself.
	done := func(res store.PutResult) {
		b.meters.observeRPC(req.Code, b.writeSendResponse(conn, req, res, queueID, uniq, tm, mt, ""), start)
	}
	if rc, ok := conn.(*remoting.Conn); ok && inline && rc.ReadSmall() {
		if b.Store.PutMessageRawPropertiesDeferred(ext, h.Properties, pairs, start, done) {
			rc.AtReadIdle(b.commitStaged)
		}
	} else {
		b.Store.PutMessageRawPropertiesAt(ext, h.Properties, pairs, start, done)
	}
	// The store copied the body into the record before returning, and the
	// header strings are copies: the frame buffer goes back to the
	// connection's reader (protocol.Command.Release).
	req.Release()
}

// canonicalProperties reports whether an encoded properties string can be
// stored verbatim: every pair is canonical (message.NextProperty), so
// readers decode exactly the pairs a map would have held. Used for the
// items of a batch, to which the broker adds no property. It allocates
// nothing.
func canonicalProperties(raw string) bool {
	for n := 0; raw != "" && n < message.MaxPropertiesSize; n++ {
		_, _, rest, canonical := message.NextProperty(raw)
		if !canonical {
			return false
		}
		raw = rest
	}
	return raw == ""
}

// commitDeferred is the AtReadIdle function of a read whose sends were
// deferred (sendPlain): it commits them, sends their answers, then
// dispatches them, all on the read loop. A small read's sends are answered
// with no goroutine woken; the committer, the dispatcher and the write
// loop would each cost a wake-up (and on an idle processor a thread's)
// per read, more than their work. Dispatch comes after the answers: the
// sender waits only for the commit.
func (b *Broker) commitDeferred(c *remoting.Conn) {
	st := b.Store // controller mode may reopen the store
	st.CommitStaged()
	c.FlushAnswers()
	st.DispatchNow()
}
