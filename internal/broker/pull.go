package broker

import (
	"context"
	"log/slog"
	"strings"
	"time"

	"github.com/apogeemq/apogee/internal/protocol"
	"github.com/apogeemq/apogee/internal/remoting"
	"github.com/apogeemq/apogee/internal/store"
)

// processPull serves PULL_MESSAGE (11) and LITE_PULL_MESSAGE (361)
// (docs/protocol.md §7). A pull that finds nothing and allows suspension is
// parked in the hold service and answered later (returns (nil, nil)).
//
// Fields by client: the Go push consumer sends sysFlag 2 (3 with a commit
// offset), no subscription, suspendTimeoutMillis 20000; the Go pull loop
// sends sysFlag 6 with the expression; Java push sends 15000 ms and may
// post its subscription.
//
// Like RocketMQ 5's rejectRequest, a slave without slaveReadEnable refuses
// pulls up front with SYSTEM_BUSY: consumers read from the master.
func (b *Broker) processPull(_ context.Context, conn *remoting.Conn, req *protocol.Command) (*protocol.Command, error) {
	if b.cfg.Store.BrokerRole == store.RoleSlave && !b.dyn.slaveRead.Load() {
		return nil, protocol.Errorf(protocol.SystemBusy, "[REJECTREQUEST]system busy, start flow control for a while")
	}
	return b.pull(conn, req, true)
}

// faqSuffix is the hint RocketMQ appends to some remarks (FAQUrl.suggestTodo).
const faqSuffix = "\nSee https://rocketmq.apache.org/docs/bestPractice/06FAQ for further details."

// pull runs one pull. allowSuspend is true on the first execution and false
// when the hold service re-executes a parked request (then the commit offset
// is not applied again and nothing is parked).
func (b *Broker) pull(conn *remoting.Conn, req *protocol.Command, allowSuspend bool) (*protocol.Command, error) {
	var h protocol.PullMessageRequestHeader
	if err := protocol.DecodePullHeader(req.ExtFields, &h); err != nil {
		return nil, err
	}
	if allowSuspend {
		b.stats.pullRequests.Add(1)
	}
	resp := protocol.NewResponse(req, protocol.Success, "")
	rh := protocol.PullMessageResponseHeader{}
	gc, tc, refusal := b.pullTarget(conn, &h, protocol.RequestCode(req.Code))
	var holdFilter *tagFilter
	var msgFilter store.MessageFilter
	if refusal == nil {
		rh.TopicSysFlag, rh.GroupSysFlag = tc.TopicSysFlag, gc.GroupSysFlag
		holdFilter, msgFilter, refusal = b.pullFilters(&h, &gc)
	}
	if refusal != nil {
		b.logger.Debug("pull refused", "group", h.ConsumerGroup, "topic", h.Topic, "queueId", h.QueueID,
			"code", refusal.err.Code.String(), "remark", refusal.err.Remark)
		resp.Code, resp.Remark = int32(refusal.err.Code), refusal.err.Remark
		rh.ForbiddenType = refusal.forbidden
		resp.ExtList = protocol.AppendPullResponseHeader(nil, &rh)
		return resp, nil
	}

	// A pending server-side reset is delivered as an offset move (docs/protocol.md §7.6).
	if target, ok := b.Offsets.TakeReset(h.ConsumerGroup, h.Topic, h.QueueID); ok {
		rh.NextBeginOffset = target
		rh.MinOffset = max(b.Store.MinOffsetInQueue(h.Topic, h.QueueID), 0)
		rh.MaxOffset = max(b.Store.MaxOffsetInQueue(h.Topic, h.QueueID), 0)
		resp.Code, resp.Remark = int32(protocol.PullOffsetMoved), "OFFSET_RESET"
		resp.ExtList = protocol.AppendPullResponseHeader(nil, &rh)
		return resp, nil
	}

	res := b.Store.GetMessage(h.ConsumerGroup, h.Topic, h.QueueID, h.QueueOffset, h.MaxMsgNums, max(h.MaxMsgBytes, 0), msgFilter)
	status := res.Status
	if status == store.NoMatchedLogicQueue {
		// RocketMQ creates the consume queue of a configured queue on
		// first read, so it reports an empty one.
		status = store.NoMessageInQueue
	}
	rh.NextBeginOffset, rh.MinOffset, rh.MaxOffset = res.NextBeginOffset, res.MinOffset, res.MaxOffset
	if status != store.Found && status != store.NoMatchedMessage && status != store.MessageWasRemoving &&
		b.cfg.Store.BrokerRole == store.RoleSlave && !b.cfg.OffsetCheckInSlave {
		// nextOffsetCorrection: a slave may lag its master, so it never
		// moves a consumer's offset.
		rh.NextBeginOffset = h.QueueOffset
	}
	code := b.pullCode(res, &gc, h.QueueOffset, &rh)
	resp.Code = int32(code)
	resp.Remark = status.String()
	if code == protocol.Success {
		resp.Body = b.pullBody(&h, res, rh.NextBeginOffset)
		// The store's buffer goes back to it once remoting has copied or
		// written the body (nothing else keeps resp).
		resp.BodyDone = res.Release
	}
	if b.logger.Enabled(context.Background(), slog.LevelDebug) { // boxing the args costs allocations per pull
		b.logger.Debug("pull", "group", h.ConsumerGroup, "topic", h.Topic, "queueId", h.QueueID, "offset", h.QueueOffset,
			"status", res.Status.String(), "code", code.String(), "sysFlag", h.SysFlag)
	}
	if code == protocol.PullOffsetMoved {
		b.logger.Info("pull offset moved", "group", h.ConsumerGroup, "topic", h.Topic, "queueId", h.QueueID,
			"offset", h.QueueOffset, "nextBeginOffset", rh.NextBeginOffset, "status", res.Status.String())
	}
	resp.ExtList = protocol.AppendPullResponseHeader(nil, &rh)

	// Piggy-backed commit, first execution only (docs/broker.md §1.5).
	if allowSuspend && h.SysFlag&protocol.PullFlagCommitOffset != 0 && b.cfg.Store.BrokerRole != store.RoleSlave &&
		!b.Offsets.ResetPending(h.ConsumerGroup, h.Topic, h.QueueID) {
		b.Offsets.Commit(h.ConsumerGroup, h.Topic, h.QueueID, h.CommitOffset)
	}

	if code == protocol.PullNotFound {
		b.stats.pullMiss.Add(1)
		if allowSuspend && h.SysFlag&protocol.PullFlagSuspend != 0 {
			hold := time.Duration(b.dyn.shortPolling.Load())
			if b.cfg.LongPollingEnable && h.SuspendTimeoutMillis > 0 {
				hold = time.Duration(h.SuspendTimeoutMillis) * time.Millisecond
			}
			b.pullHold.suspend(&pullRequest{
				conn: conn, req: req, topic: h.Topic, queueID: h.QueueID, offset: h.QueueOffset,
				filter: holdFilter, deadline: b.now().Add(hold),
			})
			return nil, nil
		}
	}
	return resp, nil
}

// pullRefusal is a pull answered with an error: its code and remark, and
// for permission refusals the forbidden type the response header reports.
type pullRefusal struct {
	err       *protocol.Error
	forbidden int32
}

func refusePull(code protocol.ResponseCode, forbidden int32, format string, args ...any) *pullRefusal {
	return &pullRefusal{err: protocol.Errorf(code, format, args...), forbidden: forbidden}
}

// pullTarget checks that h may be served, in RocketMQ 5's order: the
// broker is readable (and serves lite pulls), the group exists (or is
// auto-created) and may consume, the topic exists and is readable, and the
// queue id is within the topic's read queues.
func (b *Broker) pullTarget(conn *remoting.Conn, h *protocol.PullMessageRequestHeader, code protocol.RequestCode) (protocol.SubscriptionGroupConfig, protocol.TopicConfig, *pullRefusal) {
	var gc protocol.SubscriptionGroupConfig
	var tc protocol.TopicConfig
	if b.dyn.brokerPermission.Load()&protocol.PermRead == 0 {
		return gc, tc, refusePull(protocol.NoPermission, 1, "the broker[%s] pulling message is forbidden", b.addr)
	}
	if code == protocol.LitePullMessage && !b.dyn.litePull.Load() {
		return gc, tc, refusePull(protocol.NoPermission, 1, "the broker[%s] for lite pull consumer is forbidden", b.addr)
	}
	gc, ok, err := b.Groups.FindOrCreate(h.ConsumerGroup, b.dyn.autoCreateGroup.Load())
	if err != nil {
		b.logger.Error("persist auto-created group", "group", h.ConsumerGroup, "err", err)
	}
	if !ok {
		return gc, tc, refusePull(protocol.SubscriptionGroupNotExist, 0, "subscription group [%s] does not exist, %s", h.ConsumerGroup, faqSuffix)
	}
	if !gc.ConsumeEnable {
		return gc, tc, refusePull(protocol.NoPermission, 2, "subscription group no permission, %s", h.ConsumerGroup)
	}
	tc, ok = b.Topics.Get(h.Topic)
	if !ok {
		return gc, tc, refusePull(protocol.TopicNotExist, 0, "topic[%s] not exist, apply first please! %s", h.Topic, faqSuffix)
	}
	if tc.Perm&protocol.PermRead == 0 {
		return gc, tc, refusePull(protocol.NoPermission, 3, "the topic[%s] pulling message is forbidden", h.Topic)
	}
	if h.QueueID < 0 || h.QueueID >= tc.ReadQueueNums {
		return gc, tc, refusePull(protocol.InvalidParameter, 0, "queueId[%d] is illegal, topic:[%s] topicConfig.readQueueNums:[%d] consumer:[%s]",
			h.QueueID, h.Topic, tc.ReadQueueNums, conn.RemoteAddr())
	}
	return gc, tc, nil
}

// pullFilters resolves the pull's subscription (posted with the request,
// or the one the group's heartbeat registered) and returns the filter the
// hold service wakes on and the filter the store applies: both the tag
// filter for a TAG expression; for SQL92 the store gets the SQL filter
// and held pulls wake on any arrival.
func (b *Broker) pullFilters(h *protocol.PullMessageRequestHeader, gc *protocol.SubscriptionGroupConfig) (*tagFilter, store.MessageFilter, *pullRefusal) {
	var sub *protocol.SubscriptionData
	if h.SysFlag&protocol.PullFlagSubscription != 0 {
		s := normalizeSubscription(protocol.SubscriptionData{
			Topic: h.Topic, SubString: h.Subscription, ExpressionType: h.ExpressionType, SubVersion: h.SubVersion,
		})
		sub = &s
	} else {
		info, ok := b.Clients.ConsumerGroup(h.ConsumerGroup)
		if !ok {
			return nil, nil, refusePull(protocol.SubscriptionNotExist, 0, "the consumer's group info not exist%s", faqSuffix)
		}
		if info.MessageModel == protocol.MessageModelBroadcasting && !gc.ConsumeBroadcastEnable {
			return nil, nil, refusePull(protocol.NoPermission, 4, "the consumer group[%s] can not consume by broadcast way", h.ConsumerGroup)
		}
		if b.Groups.Forbidden(h.ConsumerGroup, h.Topic, permIndexRead) { // UPDATE_AND_GET_GROUP_FORBIDDEN
			return nil, nil, refusePull(protocol.NoPermission, 5, "the consumer group[%s] is forbidden for topic[%s]", h.ConsumerGroup, h.Topic)
		}
		s, ok := info.Subscriptions[h.Topic]
		if !ok {
			return nil, nil, refusePull(protocol.SubscriptionNotExist, 0, "the consumer's subscription not exist%s", faqSuffix)
		}
		if s.SubVersion < h.SubVersion {
			return nil, nil, refusePull(protocol.SubscriptionNotLatest, 0, "the consumer's subscription not latest")
		}
		sub = s
	}
	filter := newTagFilter(sub)
	if sub.IsTag() {
		return filter, filter, nil
	}
	if !b.dyn.propertyFilter.Load() {
		return nil, nil, refusePull(protocol.SystemError, 0, "The broker does not support consumer to filter message by %s", sub.ExpressionType)
	}
	f, perr := b.newSQLFilter(sub) // filter_sql.go
	if perr != nil {
		if h.SysFlag&protocol.PullFlagSubscription != 0 {
			// RocketMQ's remark, then what is wrong with the expression
			// (newSQLFilter writes both).
			return nil, nil, refusePull(protocol.SubscriptionParseFailed, 0, "%s", perr.Remark)
		}
		// The registered expression never compiled: RocketMQ holds no
		// filter data for it.
		return nil, nil, refusePull(protocol.FilterDataNotExist, 0, "The broker's consumer filter data is not exist!Your expression may be wrong!")
	}
	return &tagFilter{all: true}, f, nil
}

// pullCode maps the store's answer to the response code and sets the
// suggested broker as RocketMQ 5 does (docs/protocol.md §7.3): with
// slaveReadEnable the group's brokerId, or whichBrokerWhenConsumeSlowly
// when the consumer lags beyond memory; otherwise the master. A slave
// whose reader is not lagging sends it back to the master, and anything
// but FOUND becomes PULL_RETRY_IMMEDIATELY there; a slave never moves a
// consumer's offset unless offsetCheckInSlave.
func (b *Broker) pullCode(res *store.GetResult, gc *protocol.SubscriptionGroupConfig, requestOffset int64, rh *protocol.PullMessageResponseHeader) protocol.ResponseCode {
	switch {
	case !b.dyn.slaveRead.Load():
		rh.SuggestWhichBrokerID = protocol.MasterID
	case res.SuggestPullingFromSlave:
		rh.SuggestWhichBrokerID = gc.WhichBrokerWhenConsumeSlowly
	default:
		rh.SuggestWhichBrokerID = gc.BrokerID
	}
	code := pullStatusResponse(res.Status, requestOffset)
	slave := b.cfg.Store.BrokerRole == store.RoleSlave
	if slave && !res.SuggestPullingFromSlave {
		rh.SuggestWhichBrokerID = protocol.MasterID
		if res.Status != store.Found {
			code = protocol.PullRetryImmediately
		}
	}
	if code == protocol.PullOffsetMoved && slave && !b.cfg.OffsetCheckInSlave {
		code, rh.SuggestWhichBrokerID = protocol.PullRetryImmediately, gc.BrokerID
	}
	return code
}

// pullBody is a found pull's response body, the records back to back, and
// counts them.
func (b *Broker) pullBody(h *protocol.PullMessageRequestHeader, res *store.GetResult, next int64) []byte {
	body := res.Buffer // the store lays the records out back to back
	b.stats.pullFound.Add(1)
	b.stats.messagesOut.Add(int64(len(res.Messages)))
	b.stats.bytesOut.Add(int64(len(body)))
	gm := b.meters.group(h.Topic, h.ConsumerGroup) // meters.go; nil-safe
	gm.consumed(len(res.Messages), len(body))
	gm.pulledTo(h.QueueID, next)
	return body
}

// pullStatusResponse maps a store get status to the pull response code
// (docs/protocol.md §7.3, master behaviour).
func pullStatusResponse(st store.GetStatus, requestOffset int64) protocol.ResponseCode {
	switch st {
	case store.Found:
		return protocol.Success
	case store.NoMatchedMessage, store.MessageWasRemoving:
		return protocol.PullRetryImmediately
	case store.NoMatchedLogicQueue, store.NoMessageInQueue:
		if requestOffset != 0 {
			return protocol.PullOffsetMoved
		}
		return protocol.PullNotFound
	case store.OffsetFoundNull, store.OffsetOverflowOne:
		return protocol.PullNotFound
	case store.OffsetOverflowBadly, store.OffsetTooSmall:
		return protocol.PullOffsetMoved
	default:
		return protocol.PullNotFound
	}
}

// tagFilter is the TAG expression filter of a pull: the consume-queue tag
// code must be in the subscription's code set; "*" matches everything. The
// exact tag string is re-checked by clients (hash collisions pass here).
type tagFilter struct {
	all   bool
	codes []int32
}

func newTagFilter(s *protocol.SubscriptionData) *tagFilter {
	sub := strings.TrimSpace(s.SubString)
	if sub == "" || sub == protocol.SubAll || len(s.CodeSet) == 0 && len(s.TagsSet) == 0 {
		return &tagFilter{all: true}
	}
	return &tagFilter{codes: s.CodeSet}
}

// MatchTagsCode implements store.MessageFilter.
func (f *tagFilter) MatchTagsCode(code int64) bool {
	if f.all {
		return true
	}
	c := int32(code)
	for _, x := range f.codes {
		if x == c {
			return true
		}
	}
	return false
}

// MatchProperties implements store.MessageFilter (no SQL92 yet).
func (f *tagFilter) MatchProperties(map[string]string) bool { return true }

// PropertiesFilterless tells the store to skip decoding properties.
func (f *tagFilter) PropertiesFilterless() bool { return true }
