package broker

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/apogeemq/apogee/internal/names"
	"github.com/apogeemq/apogee/internal/protocol"
	"github.com/apogeemq/apogee/internal/remoting"
)

// Admin queries of mqadmin, the dashboard and the Go admin (docs/protocol.md
// §3.7): statistics, connections, consumer relationships, broker runtime
// information and configuration.

func (b *Broker) mq(topic string, queueID int32) protocol.MessageQueue {
	return protocol.MessageQueue{Topic: topic, BrokerName: b.cfg.BrokerName, QueueID: queueID}
}

func bodyResponse(req *protocol.Command, body []byte) *protocol.Command {
	resp := protocol.NewResponse(req, protocol.Success, "")
	resp.Body = body
	return resp
}

// processTopicStats serves GET_TOPIC_STATS_INFO (202; topic): per write
// queue the min and max offsets and the store time of the last message.
func (b *Broker) processTopicStats(_ context.Context, _ *remoting.Conn, req *protocol.Command) (*protocol.Command, error) {
	var h protocol.TopicHeader
	if err := protocol.DecodeHeader(req.ExtFields, &h, false); err != nil {
		return nil, err
	}
	tc, ok := b.Topics.Get(h.Topic)
	if !ok {
		return nil, protocol.Errorf(protocol.TopicNotExist, "topic[%s] not exist", h.Topic)
	}
	entries := make([]protocol.QueueValue[protocol.TopicOffset], 0, tc.WriteQueueNums)
	for q := range tc.WriteQueueNums {
		off := protocol.TopicOffset{
			MinOffset: max(b.Store.MinOffsetInQueue(h.Topic, q), 0),
			MaxOffset: max(b.Store.MaxOffsetInQueue(h.Topic, q), 0),
		}
		if off.MaxOffset > 0 {
			if ts, err := b.Store.StoreTimeByQueueOffset(h.Topic, q, off.MaxOffset-1); err == nil {
				off.LastUpdateTimestamp = ts
			}
		}
		entries = append(entries, protocol.QueueValue[protocol.TopicOffset]{Queue: b.mq(h.Topic, q), Value: off})
	}
	body, err := protocol.EncodeTopicStatsTable(entries, 0)
	if err != nil {
		return nil, err
	}
	return bodyResponse(req, body), nil
}

// processConsumeStats serves GET_CONSUME_STATS (208; consumerGroup, topic
// optional): per queue the broker's max offset, the group's committed
// offset and the store time of the last consumed message.
func (b *Broker) processConsumeStats(_ context.Context, _ *remoting.Conn, req *protocol.Command) (*protocol.Command, error) {
	var h protocol.ConsumerGroupHeader
	if err := protocol.DecodeHeader(req.ExtFields, &h, false); err != nil {
		return nil, err
	}
	var topics []string
	switch {
	case h.Topic != "":
		topics = []string{h.Topic}
	case req.Ext("topicList") != "":
		topics = strings.Split(req.Ext("topicList"), ";")
	default:
		topics = b.Offsets.TopicsOfGroup(h.ConsumerGroup)
		slices.Sort(topics)
	}
	var entries []protocol.QueueValue[protocol.OffsetWrapper]
	for _, topic := range topics {
		tc, ok := b.Topics.Get(topic)
		if !ok {
			if h.Topic != "" {
				return nil, protocol.Errorf(protocol.TopicNotExist, "topic[%s] not exist", topic)
			}
			continue
		}
		for q := range tc.ReadQueueNums {
			w := protocol.OffsetWrapper{BrokerOffset: max(b.Store.MaxOffsetInQueue(topic, q), 0)}
			if off, ok := b.Offsets.Query(h.ConsumerGroup, topic, q); ok && off > 0 {
				w.ConsumerOffset = off
			}
			w.PullOffset = w.ConsumerOffset
			if w.ConsumerOffset > 0 {
				if ts, err := b.Store.StoreTimeByQueueOffset(topic, q, w.ConsumerOffset-1); err == nil {
					w.LastTimestamp = ts
				}
			}
			entries = append(entries, protocol.QueueValue[protocol.OffsetWrapper]{Queue: b.mq(topic, q), Value: w})
		}
	}
	body, err := protocol.EncodeConsumeStats(entries, 0)
	if err != nil {
		return nil, err
	}
	return bodyResponse(req, body), nil
}

// processConsumerConnections serves GET_CONSUMER_CONNECTION_LIST (203;
// consumerGroup): CONSUMER_NOT_ONLINE when the group has no live consumer.
func (b *Broker) processConsumerConnections(_ context.Context, _ *remoting.Conn, req *protocol.Command) (*protocol.Command, error) {
	var h protocol.ConsumerGroupHeader
	if err := protocol.DecodeHeader(req.ExtFields, &h, false); err != nil {
		return nil, err
	}
	info, ok := b.Clients.ConsumerGroup(h.ConsumerGroup)
	if !ok || len(info.Channels) == 0 {
		return nil, protocol.Errorf(protocol.ConsumerNotOnline, "the consumer group[%s] not online", h.ConsumerGroup)
	}
	cc := protocol.ConsumerConnection{
		ConnectionSet:     connections(info.Channels),
		SubscriptionTable: make(map[string]protocol.SubscriptionData, len(info.Subscriptions)),
		ConsumeType:       info.ConsumeType,
		MessageModel:      info.MessageModel,
		ConsumeFromWhere:  info.ConsumeFromWhere,
	}
	for t, s := range info.Subscriptions {
		cc.SubscriptionTable[t] = *s
	}
	body, err := protocol.MarshalJSON(&cc)
	if err != nil {
		return nil, err
	}
	return bodyResponse(req, body), nil
}

func connections(chans []ClientChannel) []protocol.Connection {
	out := make([]protocol.Connection, 0, len(chans))
	for _, c := range chans {
		out = append(out, protocol.Connection{
			ClientID: c.ClientID, ClientAddr: c.RemoteAddr(), Language: c.Language.String(), Version: c.Version,
		})
	}
	slices.SortFunc(out, func(a, b protocol.Connection) int { return strings.Compare(a.ClientID, b.ClientID) })
	return out
}

// processProducerConnections serves GET_PRODUCER_CONNECTION_LIST (204;
// producerGroup).
func (b *Broker) processProducerConnections(_ context.Context, _ *remoting.Conn, req *protocol.Command) (*protocol.Command, error) {
	group := req.Ext("producerGroup")
	chans := b.Clients.ProducerChannels(group)
	if len(chans) == 0 {
		return nil, protocol.Errorf(protocol.SystemError, "the producer group[%s] not exist", group)
	}
	body, err := protocol.MarshalJSON(&protocol.ProducerConnection{ConnectionSet: connections(chans)})
	if err != nil {
		return nil, err
	}
	return bodyResponse(req, body), nil
}

// processQueryTopicConsumeByWho serves QUERY_TOPIC_CONSUME_BY_WHO (300;
// topic): online subscribers plus groups with offsets.
func (b *Broker) processQueryTopicConsumeByWho(_ context.Context, _ *remoting.Conn, req *protocol.Command) (*protocol.Command, error) {
	var h protocol.TopicHeader
	if err := protocol.DecodeHeader(req.ExtFields, &h, false); err != nil {
		return nil, err
	}
	set := map[string]bool{}
	for _, g := range b.Clients.ConsumerGroups() {
		if _, ok := b.Clients.Subscription(g, h.Topic); ok {
			set[g] = true
		}
	}
	for _, g := range b.Offsets.GroupsOfTopic(h.Topic) {
		set[g] = true
	}
	groups := make([]string, 0, len(set))
	for g := range set {
		groups = append(groups, g)
	}
	slices.Sort(groups)
	body, err := protocol.MarshalJSON(&protocol.GroupList{GroupList: groups})
	if err != nil {
		return nil, err
	}
	return bodyResponse(req, body), nil
}

// processQueryTopicsByConsumer serves QUERY_TOPICS_BY_CONSUMER (343; group).
func (b *Broker) processQueryTopicsByConsumer(_ context.Context, _ *remoting.Conn, req *protocol.Command) (*protocol.Command, error) {
	var h protocol.GroupHeader
	if err := protocol.DecodeHeader(req.ExtFields, &h, false); err != nil {
		return nil, err
	}
	topics := b.Offsets.TopicsOfGroup(h.Group)
	slices.Sort(topics)
	body, err := (&protocol.TopicList{TopicList: topics, BrokerAddr: b.addr}).Encode()
	if err != nil {
		return nil, err
	}
	return bodyResponse(req, body), nil
}

// processSystemTopicList serves GET_SYSTEM_TOPIC_LIST_FROM_BROKER (305).
func (b *Broker) processSystemTopicList(_ context.Context, _ *remoting.Conn, req *protocol.Command) (*protocol.Command, error) {
	var topics []string
	for _, t := range b.Topics.Names() {
		if names.IsSystemTopic(t) || t == b.cfg.BrokerClusterName || t == b.cfg.BrokerName {
			topics = append(topics, t)
		}
	}
	slices.Sort(topics)
	body, err := (&protocol.TopicList{TopicList: topics}).Encode()
	if err != nil {
		return nil, err
	}
	return bodyResponse(req, body), nil
}

// processBrokerRuntimeInfo serves GET_BROKER_RUNTIME_INFO (28): a KVTable
// of string statistics under the keys tools read.
func (b *Broker) processBrokerRuntimeInfo(_ context.Context, _ *remoting.Conn, req *protocol.Command) (*protocol.Command, error) {
	st := b.Stats()
	ss := b.Store.Stats()
	up := b.now().Sub(b.bootTime)
	i64 := func(v int64) string { return strconv.FormatInt(v, 10) }
	putToday, getToday, putYesterday, getYesterday := b.dailyTotals()        // runtime_tps.go
	transferred := b.tpsFigures(func(s tpsSample) int64 { return s.transf }) // runtime_tps.go
	clRatio, cqRatio, indexRatio := b.Store.DiskRatios()                     // statfs
	earliest := b.Store.EarliestMessageTimeInStore()                         // 0 when empty
	table := map[string]string{
		"brokerVersionDesc":                "V5_3_3",
		"brokerVersion":                    strconv.Itoa(int(protocol.CurrentVersion)),
		"msgPutTotalTodayNow":              i64(st.MessagesIn),
		"msgGetTotalTodayNow":              i64(st.MessagesOut),
		"msgPutTotalTodayMorning":          i64(putToday),
		"msgGetTotalTodayMorning":          i64(getToday),
		"msgPutTotalYesterdayMorning":      i64(putYesterday),
		"msgGetTotalYesterdayMorning":      i64(getYesterday),
		"putTps":                           b.tpsFigures(func(s tpsSample) int64 { return s.put }),
		"getTransferedTps":                 transferred, // RocketMQ's spelling, read by mqadmin clusterList
		"getTransferredTps":                transferred,
		"getFoundTps":                      b.tpsFigures(func(s tpsSample) int64 { return s.found }),
		"getMissTps":                       b.tpsFigures(func(s tpsSample) int64 { return s.miss }),
		"getTotalTps":                      b.tpsFigures(func(s tpsSample) int64 { return s.found + s.miss }),
		"commitLogMinOffset":               i64(ss.MinPhyOffset),
		"commitLogMaxOffset":               i64(ss.MaxPhyOffset),
		"dispatchBehindBytes":              i64(ss.DispatchLagBytes),
		"bootTimestamp":                    i64(b.bootTime.UnixMilli()),
		"runtime":                          fmt.Sprintf("[ %d days, %d hours, %d minutes, %d seconds ]", int(up.Hours())/24, int(up.Hours())%24, int(up.Minutes())%60, int(up.Seconds())%60),
		"sendThreadPoolQueueSize":          strconv.Itoa(len(b.sendQueue.tasks)),
		"sendThreadPoolQueueCapacity":      strconv.Itoa(b.cfg.SendThreadPoolQueueCapacity),
		"pullThreadPoolQueueCapacity":      strconv.Itoa(b.cfg.PullThreadPoolQueueCapacity),
		"startAcceptSendRequestTimeStamp":  "0",
		"pageCacheLockTimeMills":           i64(b.Store.PageCacheLockTimeMills()),
		"earliestMessageTimeStamp":         i64(earliest),
		"remainHowManyDataToFlush":         i64(ss.MaxPhyOffset - ss.FlushedOffset),
		"brokerActive":                     "true",
		"sendQueueTimeoutTotal":            i64(st.SendQueueTimeout),
		"pageCacheBusyTotal":               i64(st.PageCacheBusy),
		"pullHeldRequests":                 i64(st.PullHeld),
		"consumeQueues":                    strconv.Itoa(ss.ConsumeQueues),
		"commitLogDiskRatio":               javaDouble(clRatio),
		"consumeQueueDiskRatio":            javaDouble(cqRatio),
		"indexDiskRatio":                   javaDouble(indexRatio),
		"indexUnavailable":                 strconv.FormatBool(ss.IndexUnavailable),
		"indexCreateFailures":              i64(ss.IndexCreateFailures),
		"indexNotIndexedMessages":          i64(ss.IndexNotIndexed),
		"forcedDeletedMessages":            i64(ss.ForcedDeletedMessages),
		"forcedDeletedBytes":               i64(ss.ForcedDeletedBytes),
		"msgPutTotalBytes":                 i64(st.BytesIn),
		"msgGetTotalBytes":                 i64(st.BytesOut),
		"storeFlushFailed":                 strconv.FormatBool(ss.FlushFailed),
		"storeDiskFull":                    strconv.FormatBool(ss.DiskFull),
		"bootTimeSeconds":                  strconv.FormatInt(int64(up/time.Second), 10),
		"earliestMessageTimeStampInMillis": i64(earliest),
	}
	// StoreStatsService's put totals (messages and bytes accepted since
	// boot) and their ratio; the average is absent before the first put.
	table["putMessageTimesTotal"] = i64(st.MessagesIn)
	table["putMessageSizeTotal"] = i64(st.BytesIn)
	if st.MessagesIn > 0 {
		table["putMessageAverageSize"] = javaDouble(float64(st.BytesIn) / float64(st.MessagesIn))
	}
	// Consume-queue units kept in memory for unmapped queues (the store's
	// write-behind): buffer bytes now and at most, pwrites and their units.
	wb := b.Store.WriteBehind()
	table["consumeQueueWriteBehindBytes"] = i64(wb.Bytes)
	table["consumeQueueWriteBehindPeakBytes"] = i64(wb.Peak)
	table["consumeQueueWriteBehindWrites"] = i64(wb.Writes)
	table["consumeQueueWriteBehindUnits"] = i64(wb.Written)
	b.popRuntimeInfo(table)        // pop_repl.go
	b.addForwardRuntimeInfo(table) // controller_forward.go
	body, err := (&protocol.KVTable{Table: table}).Encode()
	if err != nil {
		return nil, err
	}
	return bodyResponse(req, body), nil
}

// processGetBrokerConfig serves GET_BROKER_CONFIG (26): every key as
// "key=value" lines, ext version = the configuration data version.
func (b *Broker) processGetBrokerConfig(_ context.Context, _ *remoting.Conn, req *protocol.Command) (*protocol.Command, error) {
	m := b.effectiveConfig()
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var sb strings.Builder
	for _, k := range keys {
		sb.WriteString(k)
		sb.WriteByte('=')
		sb.WriteString(m[k])
		sb.WriteByte('\n')
	}
	dv, err := protocol.MarshalJSON(protocol.DataVersion{Timestamp: b.bootTime.UnixMilli()})
	if err != nil {
		return nil, err
	}
	resp := bodyResponse(req, []byte(sb.String()))
	resp.SetExt("version", string(dv))
	return resp, nil
}
