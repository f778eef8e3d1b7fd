package broker

import (
	"context"
	"strconv"

	"github.com/apogeemq/apogee/internal/message"
	"github.com/apogeemq/apogee/internal/names"
	"github.com/apogeemq/apogee/internal/protocol"
	"github.com/apogeemq/apogee/internal/remoting"
)

// maxQueryConsumeQueueCount bounds one QUERY_CONSUME_QUEUE answer (each
// unit costs a commit-log read).
const maxQueryConsumeQueueCount = 1000

// consumeQueueData is one consume-queue unit as QUERY_CONSUME_QUEUE shows
// it (Java ConsumeQueueData).
type consumeQueueData struct {
	PhysicOffset   int64  `json:"physicOffset"`
	PhysicSize     int32  `json:"physicSize"`
	TagsCode       int64  `json:"tagsCode"`
	ExtendDataJSON string `json:"extendDataJson,omitempty"`
	BitMap         string `json:"bitMap,omitempty"`
	Eval           bool   `json:"eval"`
	Msg            string `json:"msg,omitempty"`
}

// queryConsumeQueueBody is Java's QueryConsumeQueueResponseBody.
type queryConsumeQueueBody struct {
	SubscriptionData *protocol.SubscriptionData `json:"subscriptionData,omitempty"`
	FilterData       string                     `json:"filterData,omitempty"`
	QueueData        []consumeQueueData         `json:"queueData,omitempty"`
	MaxQueueIndex    int64                      `json:"maxQueueIndex"`
	MinQueueIndex    int64                      `json:"minQueueIndex"`
}

// processQueryConsumeQueue serves QUERY_CONSUME_QUEUE (321; topic,
// queueId, index, count, consumerGroup optional): count units of the
// consume queue from index, each as (physicOffset, physicSize, tagsCode).
// With a consumerGroup that has a subscription of topic, the subscription
// is returned, filterData is its expression and eval tells whether its tag
// filter matches the unit; without one filterData says the group is not
// online (RocketMQ's wording). The
// store exposes no raw unit read, so each unit is resolved through its
// commit-log offset and the stored message (size, TAGS hash, or for the
// schedule topic the delivery time, as dispatch computes it).
func (b *Broker) processQueryConsumeQueue(_ context.Context, _ *remoting.Conn, req *protocol.Command) (*protocol.Command, error) {
	topic := req.Ext("topic")
	qid, err1 := strconv.ParseInt(req.Ext("queueId"), 10, 32)
	index, err2 := strconv.ParseInt(req.Ext("index"), 10, 64)
	count, err3 := strconv.ParseInt(req.Ext("count"), 10, 32)
	if topic == "" || err1 != nil || err2 != nil || err3 != nil {
		return nil, protocol.Errorf(protocol.InvalidParameter, "topic, queueId, index and count are required numbers")
	}
	q := int32(qid)
	minO, maxO := b.Store.MinOffsetInQueue(topic, q), b.Store.MaxOffsetInQueue(topic, q)
	if _, ok := b.Topics.Get(topic); !ok || maxO < 0 {
		return nil, protocol.Errorf(protocol.SystemError, "%d@%s is not exist!", q, topic)
	}
	out := queryConsumeQueueBody{MinQueueIndex: max(minO, 0), MaxQueueIndex: maxO}
	var filter *tagFilter
	if g := req.Ext("consumerGroup"); g != "" {
		if sub, ok := b.Clients.Subscription(g, topic); ok {
			out.SubscriptionData = sub
			out.FilterData = sub.SubString
			filter = newTagFilter(sub)
		} else {
			out.FilterData = g + "@" + topic + " is not online!"
		}
	}
	count = min(max(count, 0), maxQueryConsumeQueueCount)
	for off := max(index, out.MinQueueIndex); off < index+count && off < maxO; off++ {
		d, ok := b.consumeQueueUnit(topic, q, off)
		if !ok {
			break
		}
		if filter != nil {
			d.Eval = filter.MatchTagsCode(d.TagsCode)
		}
		out.QueueData = append(out.QueueData, d)
	}
	body, err := protocol.MarshalJSON(&out)
	if err != nil {
		return nil, err
	}
	return bodyResponse(req, body), nil
}

// consumeQueueUnit rebuilds one consume-queue unit from the store's API.
func (b *Broker) consumeQueueUnit(topic string, q int32, off int64) (consumeQueueData, bool) {
	phy, err := b.Store.CommitLogOffsetInQueue(topic, q, off)
	if err != nil {
		return consumeQueueData{}, false
	}
	d := consumeQueueData{PhysicOffset: phy}
	m, err := b.Store.LookMessageByOffset(phy)
	if err != nil {
		d.Msg = "commit log entry unreadable: " + err.Error()
		return d, true
	}
	d.PhysicSize = m.StoreSize
	d.TagsCode = message.TagsHashCode(m.Tags())
	if topic == names.TopicSchedule {
		if lvl, err := strconv.Atoi(m.Property(message.PropertyDelayTimeLevel)); err == nil && lvl > 0 {
			if levels, err := parseStoreDelayLevels(&b.cfg); err == nil && len(levels) > 0 {
				d.TagsCode = m.StoreTimestamp + levels[min(lvl, len(levels))-1].Milliseconds()
			}
		}
	}
	return d, true
}
