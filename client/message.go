package client

import (
	"net/netip"
	"strconv"
	"strings"
	"time"

	"github.com/apogeemq/apogee/internal/message"
)

// Well-known message property names (docs/protocol.md §6.3) users may set or
// read through Message.Properties.
const (
	PropertyKeys             = message.PropertyKeys
	PropertyTags             = message.PropertyTags
	PropertyUniqKey          = message.PropertyUniqClientMessageIDKeyidx
	PropertyDelayLevel       = message.PropertyDelayTimeLevel
	PropertyWaitStoreMsgOK   = message.PropertyWaitStoreMsgOK
	PropertyShardingKey      = "__SHARDINGKEY"
	PropertyTransactionCheck = "CHECK_IMMUNITY_TIME_IN_SECONDS"
)

// Message is what a producer sends. Topic and Body are required; Properties
// carry tags, keys and user properties under RocketMQ's names. The producer
// does not modify the Message it is given (it works on a copy), so a
// Message may be sent again or from several goroutines.
type Message struct {
	Topic      string
	Body       []byte
	Flag       int32             // opaque user flag stored with the message
	Properties map[string]string // may be nil
}

// NewMessage returns a message for topic with body.
func NewMessage(topic string, body []byte) *Message {
	return &Message{Topic: topic, Body: body}
}

// SetProperty sets a property and returns m, for chaining.
func (m *Message) SetProperty(name, value string) *Message {
	if m.Properties == nil {
		m.Properties = make(map[string]string, 4)
	}
	m.Properties[name] = value
	return m
}

// Property returns a property, "" when absent.
func (m *Message) Property(name string) string { return m.Properties[name] }

// WithTag sets the TAGS property (one tag) and returns m.
func (m *Message) WithTag(tag string) *Message {
	if tag == "" {
		delete(m.Properties, PropertyTags)
		return m
	}
	return m.SetProperty(PropertyTags, tag)
}

// Tag returns the TAGS property.
func (m *Message) Tag() string { return m.Properties[PropertyTags] }

// WithKeys sets the KEYS property (space separated, indexed by the broker
// for queries) and returns m.
func (m *Message) WithKeys(keys ...string) *Message {
	return m.SetProperty(PropertyKeys, strings.Join(keys, message.KeySeparator))
}

// Keys returns the KEYS property split on spaces.
func (m *Message) Keys() []string { return message.SplitKeys(m.Properties[PropertyKeys]) }

// WithDelayLevel asks the broker to deliver the message after delay level
// 1..18 (1s 5s 10s 30s 1m 2m ... 2h) and returns m.
func (m *Message) WithDelayLevel(level int) *Message {
	return m.SetProperty(PropertyDelayLevel, strconv.Itoa(level))
}

// WithShardingKey sets the sharding key (Java's __SHARDINGKEY) and returns m.
func (m *Message) WithShardingKey(key string) *Message {
	return m.SetProperty(PropertyShardingKey, key)
}

func (m *Message) clone() *Message {
	c := *m
	c.Properties = make(map[string]string, len(m.Properties)+4)
	for k, v := range m.Properties {
		c.Properties[k] = v
	}
	return &c
}

// MessageExt is a message as stored by a broker: what consumers receive and
// what a transaction check carries.
type MessageExt struct {
	Message
	MsgID                     string // UNIQ_KEY when present, else OffsetMsgID
	OffsetMsgID               string // broker address + commit-log offset
	BrokerName                string // broker the message was read from ("" when unknown)
	QueueID                   int32
	QueueOffset               int64
	CommitLogOffset           int64
	SysFlag                   int32
	BornTime                  time.Time
	BornHost                  string
	StoreTime                 time.Time
	StoreHost                 string
	ReconsumeTimes            int32
	StoreSize                 int32
	BodyCRC                   uint32
	PreparedTransactionOffset int64
}

// DecodeMessages decodes a body of stored messages as brokers return them
// (QUERY_MESSAGE, VIEW_MESSAGE_BY_ID, PULL_MESSAGE), decompressing
// bodies; brokerName is set on each message. Topics are left as stored
// (no namespace is stripped).
func DecodeMessages(body []byte, brokerName string) ([]*MessageExt, error) {
	exts, err := message.DecodeStoredAll(body, message.DecodeOptions{Decompress: true})
	if err != nil {
		return nil, err
	}
	out := make([]*MessageExt, len(exts))
	var hosts hostStrings
	for i, e := range exts {
		out[i] = new(MessageExt)
		fillMessageExt(out[i], e, brokerName, "", e.OffsetMsgID(), &hosts)
	}
	return out, nil
}

// newMessageExt converts a decoded stored record. The body is used as is:
// callers decode with message.DecodeOptions{Decompress: true} to hand out
// plain bodies. namespace, when set, is stripped from the topic.
func newMessageExt(e *message.Ext, brokerName, namespace string) *MessageExt {
	m := new(MessageExt)
	var hosts hostStrings
	fillMessageExt(m, e, brokerName, namespace, e.OffsetMsgID(), &hosts)
	return m
}

// fillMessageExt sets m, which must be zero (a new MessageExt or an
// element of a fresh slab), from e; offsetMsgID is e's offset message id.
// Fields are set one by one rather than by assigning a composite literal:
// that copies the whole struct, zeros included, with a bulk write barrier
// over all of its pointer words while the GC runs.
func fillMessageExt(m *MessageExt, e *message.Ext, brokerName, namespace, offsetMsgID string, hosts *hostStrings) {
	msgID := e.UniqKey()
	if msgID == "" {
		msgID = offsetMsgID
	}
	m.Topic = unwrapNamespace(namespace, e.Topic)
	m.Body = e.Body
	m.Flag = e.Flag
	m.Properties = e.Properties
	if m.Properties == nil {
		m.Properties = map[string]string{}
	}
	m.MsgID = msgID
	m.OffsetMsgID = offsetMsgID
	m.BrokerName = brokerName
	m.QueueID = e.QueueID
	m.QueueOffset = e.QueueOffset
	m.CommitLogOffset = e.CommitLogOffset
	m.SysFlag = e.SysFlag
	m.BornTime = time.UnixMilli(e.BornTimestamp)
	m.BornHost = hosts.born.of(e.BornHost)
	m.StoreTime = time.UnixMilli(e.StoreTimestamp)
	m.StoreHost = hosts.store.of(e.StoreHost)
	m.ReconsumeTimes = e.ReconsumeTimes
	m.StoreSize = e.StoreSize
	m.BodyCRC = e.BodyCRC
	m.PreparedTransactionOffset = e.PreparedTransactionOffset
}

// hostStrings remembers the last born and store host formatted: the
// messages of one pull share a store host and mostly a few born hosts, so
// each string is made once per run of equal hosts, not per message.
type hostStrings struct{ born, store hostString }

type hostString struct {
	addr netip.AddrPort
	s    string
}

func (h *hostString) of(a netip.AddrPort) string {
	if h.s == "" || h.addr != a {
		h.addr, h.s = a, a.String()
	}
	return h.s
}

// messageExts converts the records of one pull response that keep accepts
// (all when keep is nil; es is reordered) with few allocations: the MessageExt structs
// share one slab and the offset message ids one string, host strings are
// reused from message to message. A MessageExt a listener keeps therefore
// keeps its batch's slab alive, as its body already kept the batch's
// buffer. The conversion is toMessageExt's.
func messageExts(es []*message.Ext, keep func(*message.Ext) bool, mq MessageQueue, group, ns string) []*MessageExt {
	if len(es) == 0 {
		return nil
	}
	// es is the caller's and dead after this call: the kept records are
	// compacted into it. The ids of a usual batch (32 IPv4 ones) are
	// built on the stack and copied once into their string.
	kept := es[:0]
	var stack [32 * message.OffsetMsgIDLenV4]byte
	ids := stack[:0]
	for _, e := range es {
		if keep == nil || keep(e) {
			kept = append(kept, e)
			ids = message.AppendOffsetMsgID(ids, e.StoreHost, e.CommitLogOffset)
		}
	}
	if len(kept) == 0 {
		return nil
	}
	idStr := string(ids)
	slab := make([]MessageExt, len(kept))
	out := make([]*MessageExt, len(kept))
	var hosts hostStrings
	for i, e := range kept {
		n := message.OffsetMsgIDLenV4 // as AppendOffsetMsgID writes it
		if e.StoreHost.Addr().Unmap().Is6() {
			n = message.OffsetMsgIDLenV6
		}
		m := &slab[i]
		fillMessageExt(m, e, mq.BrokerName, ns, idStr[:n], &hosts)
		idStr = idStr[n:]
		restoreRetryTopic(m, e, group, ns)
		out[i] = m
	}
	return out
}
