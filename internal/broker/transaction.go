package broker

import (
	"context"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/apogeemq/apogee/internal/message"
	"github.com/apogeemq/apogee/internal/names"
	"github.com/apogeemq/apogee/internal/protocol"
	"github.com/apogeemq/apogee/internal/remoting"
	"github.com/apogeemq/apogee/internal/run"
	"github.com/apogeemq/apogee/internal/store"
)

// Transactional messages (docs/broker.md §1.11). A prepared send is
// stored by processSend as a half message in RMQ_SYS_TRANS_HALF_TOPIC queue
// 0 (REAL_TOPIC/REAL_QID kept). END_TRANSACTION commits it (a copy goes to
// the real topic) or rolls it back; either way an op record (tag "d", body
// "<halfQueueOffset>,") goes to RMQ_SYS_TRANS_OP_HALF_TOPIC. The check
// service asks producers about half messages left unresolved.

// opTag tags op records.
const opTag = "d"

// processEndTransaction serves END_TRANSACTION (37; producerGroup,
// tranStateTableOffset, commitLogOffset, commitOrRollback 0/8/12,
// fromTransactionCheck, msgId, transactionId). The Go client sends it
// without the oneway bit and does not wait; "unknown" (0) gets no answer.
func (b *Broker) processEndTransaction(_ context.Context, conn *remoting.Conn, req *protocol.Command) (*protocol.Command, error) {
	var h protocol.EndTransactionRequestHeader
	if err := protocol.DecodeHeader(req.ExtFields, &h, false); err != nil {
		return nil, err
	}
	if b.cfg.Store.BrokerRole == store.RoleSlave {
		return nil, protocol.Errorf(protocol.SlaveNotAvailable, "Slave broker cannot handle end transaction")
	}
	switch h.CommitOrRollback {
	case message.SysFlagTransactionCommitType, message.SysFlagTransactionRollbackType:
	default:
		return nil, nil // unknown: the check service asks later
	}
	half, err := b.Store.LookMessageByOffset(h.CommitLogOffset)
	if err != nil {
		return nil, protocol.Errorf(protocol.SystemError, "Find prepared transaction message failed")
	}
	switch {
	case half.Properties[message.PropertyProducerGroup] != h.ProducerGroup:
		return nil, protocol.Errorf(protocol.SystemError, "The producer group wrong")
	case half.QueueOffset != h.TranStateTableOffset:
		return nil, protocol.Errorf(protocol.SystemError, "The transaction state table offset wrong")
	case half.CommitLogOffset != h.CommitLogOffset:
		return nil, protocol.Errorf(protocol.SystemError, "The commit log offset wrong")
	}
	if h.CommitOrRollback == message.SysFlagTransactionRollbackType {
		b.writeOpRecord(half.QueueOffset)
		return protocol.NewResponse(req, protocol.Success, ""), nil
	}
	props := maps.Clone(half.Properties)
	realTopic := props[message.PropertyRealTopic]
	qid, _ := strconv.Atoi(props[message.PropertyRealQueueID])
	for _, k := range []string{message.PropertyRealTopic, message.PropertyRealQueueID, message.PropertyTransactionPrepared,
		message.PropertyTransactionCheckTimes} {
		delete(props, k)
	}
	props[message.PropertyWaitStoreMsgOK] = "false"
	out := &message.Ext{
		Message:                   message.Message{Topic: realTopic, Flag: half.Flag, Body: half.Body, Properties: props},
		QueueID:                   int32(qid),
		SysFlag:                   message.SetTransactionType(half.SysFlag, message.SysFlagTransactionCommitType),
		BornTimestamp:             half.BornTimestamp,
		BornHost:                  half.BornHost,
		StoreHost:                 b.storeHost,
		ReconsumeTimes:            half.ReconsumeTimes,
		PreparedTransactionOffset: h.CommitLogOffset,
	}
	// A committed message carrying TIMER_* properties is parked in the
	// timer topic like a plain send (the half message was not: timer.go
	// leaves the half topic alone). A refusal leaves the half message
	// unresolved, as a failed put does: no op record.
	if err := b.interceptTimer(out); err != nil {
		return nil, err
	}
	halfOffset := half.QueueOffset
	b.Store.PutMessage(out, func(res store.PutResult) {
		code, remark := putStatusResponse(res, b.Store.DiskUtil, b.cfg.Store.MaxMessageSize)
		if res.Status.Stored() {
			b.writeOpRecord(halfOffset)
		}
		if err := conn.WriteResponse(protocol.NewResponse(req, code, remark)); err != nil {
			b.logger.Debug("write end-transaction response", "addr", conn.RemoteAddr(), "err", err)
		}
	})
	return nil, nil
}

// writeOpRecord marks a half message resolved.
func (b *Broker) writeOpRecord(halfQueueOffset int64) {
	op := &message.Ext{
		Message: message.Message{
			Topic: names.TopicTransOpHalf,
			Body:  []byte(strconv.FormatInt(halfQueueOffset, 10) + ","),
			Properties: map[string]string{
				message.PropertyTags:           opTag,
				message.PropertyWaitStoreMsgOK: "false",
			},
		},
		BornTimestamp: b.now().UnixMilli(),
		BornHost:      b.storeHost,
		StoreHost:     b.storeHost,
	}
	b.Store.PutMessage(op, func(res store.PutResult) {
		if !res.Status.Stored() {
			b.logger.Warn("transaction op record not stored", "halfOffset", halfQueueOffset, "status", res.Status.String())
		}
	})
}

// transactionCheckLoop runs the check service every transactionCheckInterval
// on a master.
func (b *Broker) transactionCheckLoop() {
	run.Every(b.baseCtx, b.cfg.TransactionCheckInterval, func(context.Context) {
		if b.cfg.Store.BrokerRole != store.RoleSlave {
			b.checkTransactions()
		}
	})
}

// checkTransactions is one run of the check service (docs/broker.md §1.11 steps 1-4),
// bounded to 1000 half messages.
func (b *Broker) checkTransactions() {
	st := b.Store
	halfMin := st.MinOffsetInQueue(names.TopicTransHalf, 0)
	halfOffset, ok := b.Offsets.Query(names.GroupTransCheck, names.TopicTransHalf, 0)
	if !ok || halfOffset < halfMin {
		halfOffset = max(halfMin, 0)
	}
	opOffset, ok := b.Offsets.Query(names.GroupTransCheck, names.TopicTransOpHalf, 0)
	if !ok {
		opOffset = max(st.MinOffsetInQueue(names.TopicTransOpHalf, 0), 0)
	}
	halfMax := st.MaxOffsetInQueue(names.TopicTransHalf, 0)
	if halfOffset >= halfMax {
		return
	}
	// Op records: which half offsets are resolved.
	removed := make(map[int64]bool)
	type opRec struct {
		offset int64
		refs   []int64
	}
	var ops []opRec
	for off := opOffset; off < st.MaxOffsetInQueue(names.TopicTransOpHalf, 0) && len(ops) < 10000; {
		res := st.GetMessage(names.GroupTransCheck, names.TopicTransOpHalf, 0, off, 32, 0, nil)
		if res.Status != store.Found {
			break
		}
		for _, raw := range res.Messages {
			m, _, err := message.DecodeStored(raw, message.DecodeOptions{})
			if err != nil {
				continue
			}
			rec := opRec{offset: m.QueueOffset}
			for _, s := range strings.Split(string(m.Body), ",") {
				if v, err := strconv.ParseInt(strings.TrimSpace(s), 10, 64); err == nil {
					rec.refs = append(rec.refs, v)
					removed[v] = true
				}
			}
			ops = append(ops, rec)
		}
		off = res.NextBeginOffset
	}

	now := b.now()
	newHalf := halfOffset
walk:
	for off := halfOffset; off < halfMax && off < halfOffset+1000; {
		res := st.GetMessage(names.GroupTransCheck, names.TopicTransHalf, 0, off, 32, 0, nil)
		if res.Status != store.Found {
			break
		}
		for _, raw := range res.Messages {
			m, _, err := message.DecodeStored(raw, message.DecodeOptions{})
			if err != nil {
				newHalf = off + 1
				continue
			}
			off = m.QueueOffset + 1
			if removed[m.QueueOffset] {
				newHalf = off
				continue
			}
			checks, _ := strconv.Atoi(m.Properties[message.PropertyTransactionCheckTimes])
			age := now.Sub(time.UnixMilli(m.BornTimestamp))
			if checks >= b.cfg.TransactionCheckMax ||
				age > time.Duration(b.cfg.Store.FileReservedTime)*time.Hour {
				b.discardHalf(m)
				newHalf = off
				continue
			}
			immunity := b.cfg.TransactionTimeOut
			if s := m.Properties[message.PropertyCheckImmunityTimeInSeconds]; s != "" {
				if sec, err := strconv.Atoi(s); err == nil {
					immunity = time.Duration(sec) * time.Second
				}
			}
			if m.StoreTimestamp >= now.UnixMilli() || age <= immunity {
				break walk // too new: later ones are newer still
			}
			if !b.recheckHalf(m, checks+1) {
				break walk
			}
			newHalf = off
		}
		off = max(off, res.NextBeginOffset)
	}
	newOp := opOffset
	for _, rec := range ops {
		done := true
		for _, r := range rec.refs {
			if r >= newHalf {
				done = false
			}
		}
		if !done {
			break
		}
		newOp = rec.offset + 1
	}
	b.Offsets.Commit(names.GroupTransCheck, names.TopicTransHalf, 0, newHalf)
	b.Offsets.Commit(names.GroupTransCheck, names.TopicTransOpHalf, 0, newOp)
}

// discardHalf moves a half message that exhausted its checks to
// TRANS_CHECK_MAX_TIME_TOPIC (it counts as rolled back).
func (b *Broker) discardHalf(m *message.Ext) {
	if _, err := b.Topics.CreateIfAbsent(names.TopicTransCheckMax, 1, protocol.PermRead|protocol.PermWrite, 0); err != nil {
		b.logger.Error("persist topic", "topic", names.TopicTransCheckMax, "err", err)
	}
	props := maps.Clone(m.Properties)
	props[message.PropertyWaitStoreMsgOK] = "false"
	out := &message.Ext{
		Message:       message.Message{Topic: names.TopicTransCheckMax, Flag: m.Flag, Body: m.Body, Properties: props},
		SysFlag:       m.SysFlag,
		BornTimestamp: m.BornTimestamp,
		BornHost:      m.BornHost,
		StoreHost:     b.storeHost,
	}
	b.Store.PutMessage(out, func(store.PutResult) {})
	b.logger.Info("half message discarded after too many checks", "topic", m.Properties[message.PropertyRealTopic],
		"transactionId", m.Properties[message.PropertyTransactionID])
}

// recheckHalf re-appends the half message with an incremented check count
// and sends CHECK_TRANSACTION_STATE (oneway) about the copy to one live
// producer of its group. It reports false when the re-append failed.
func (b *Broker) recheckHalf(m *message.Ext, checks int) bool {
	props := maps.Clone(m.Properties)
	props[message.PropertyTransactionCheckTimes] = strconv.Itoa(checks)
	props[message.PropertyWaitStoreMsgOK] = "false"
	cp := &message.Ext{
		Message:        message.Message{Topic: names.TopicTransHalf, Flag: m.Flag, Body: m.Body, Properties: props},
		SysFlag:        m.SysFlag,
		BornTimestamp:  m.BornTimestamp,
		BornHost:       m.BornHost,
		StoreHost:      b.storeHost,
		ReconsumeTimes: m.ReconsumeTimes,
	}
	done := make(chan store.PutResult, 1)
	b.Store.PutMessage(cp, func(r store.PutResult) { done <- r })
	var res store.PutResult
	select {
	case res = <-done:
	case <-b.quit:
		return false
	}
	if !res.Status.Stored() {
		return false
	}
	group := props[message.PropertyProducerGroup]
	// gRPC producers (no connection) are checked through the endpoint's
	// own registration (a remoting producer of the group).
	chans := slices.DeleteFunc(b.Clients.ProducerChannels(group), func(c ClientChannel) bool { return c.Conn == nil })
	if len(chans) == 0 {
		b.logger.Debug("no live producer to check a transaction", "group", group)
		return true
	}
	// The body carries the message as the producer sent it: real topic and
	// queue restored.
	view := *m
	view.Properties = props
	view.Topic = props[message.PropertyRealTopic]
	if q, err := strconv.Atoi(props[message.PropertyRealQueueID]); err == nil {
		view.QueueID = int32(q)
	}
	view.QueueOffset, view.CommitLogOffset = res.QueueOffset, res.WroteOffset
	view.StoreSize, view.BodyCRC = 0, 0
	body, err := message.AppendStored(nil, &view)
	if err != nil {
		b.logger.Warn("encode transaction check body", "err", err)
		return true
	}
	h := protocol.CheckTransactionStateRequestHeader{
		Topic:                view.Topic,
		TranStateTableOffset: res.QueueOffset,
		CommitLogOffset:      res.WroteOffset,
		MsgID:                props[message.PropertyUniqClientMessageIDKeyidx],
		TransactionID:        props[message.PropertyTransactionID],
		OffsetMsgID:          message.OffsetMsgID(b.storeHost, res.WroteOffset),
		BrokerName:           b.cfg.BrokerName,
	}
	req := protocol.NewRequest(protocol.CheckTransactionState, protocol.EncodeHeader(&h, false), body)
	req.Flag |= protocol.FlagOneway
	ch := chans[int(res.QueueOffset)%len(chans)]
	ctx, cancel := context.WithTimeout(b.baseCtx, time.Second)
	defer cancel()
	if err := b.invokeOneway(ctx, ch.Conn, req); err != nil {
		b.logger.Debug("send transaction check", "group", group, "addr", ch.Conn.RemoteAddr(), "err", err)
	}
	return true
}
