package broker

import (
	"context"
	"strings"

	"github.com/apogeemq/apogee/internal/names"
	"github.com/apogeemq/apogee/internal/protocol"
	"github.com/apogeemq/apogee/internal/remoting"
)

// processCreateTopic serves UPDATE_AND_CREATE_TOPIC (17; topic, readQueueNums,
// writeQueueNums, perm, topicFilterType, topicSysFlag, order, attributes
// "+k=v,-k", force). Idempotent; the new config is registered with the name
// servers.
func (b *Broker) processCreateTopic(_ context.Context, _ *remoting.Conn, req *protocol.Command) (*protocol.Command, error) {
	var h protocol.CreateTopicRequestHeader
	if err := protocol.DecodeHeader(req.ExtFields, &h, false); err != nil {
		return nil, err
	}
	old, existed := b.Topics.Get(h.Topic)
	tc := protocol.TopicConfig{
		TopicName:       h.Topic,
		ReadQueueNums:   h.ReadQueueNums,
		WriteQueueNums:  h.WriteQueueNums,
		Perm:            h.Perm,
		TopicFilterType: protocol.TopicFilterType(h.TopicFilterType),
		TopicSysFlag:    h.TopicSysFlag,
		Order:           h.Order,
		Attributes:      map[string]string{},
	}
	if existed {
		tc.Attributes = old.Attributes
	}
	if err := applyAttributes(tc.Attributes, h.Attributes); err != nil {
		return nil, err
	}
	if err := b.updateTopic(tc); err != nil {
		return nil, err
	}
	return protocol.NewResponse(req, protocol.Success, ""), nil
}

// processCreateTopicList serves UPDATE_AND_CREATE_TOPIC_LIST (18; RocketMQ
// 5.3's batch create, body {"topicConfigList":[TopicConfig...]}). Every
// config is checked first (one bad entry refuses the whole list); the
// changed ones are then made durable with one write and registered with the
// name servers in one incremental registration.
func (b *Broker) processCreateTopicList(_ context.Context, _ *remoting.Conn, req *protocol.Command) (*protocol.Command, error) {
	var body struct {
		TopicConfigList []protocol.TopicConfig `json:"topicConfigList"`
	}
	if err := protocol.UnmarshalFastJSON(req.Body, &body); err != nil {
		return nil, protocol.Errorf(protocol.InvalidParameter, "%v", err)
	}
	if len(body.TopicConfigList) == 0 {
		return nil, protocol.Errorf(protocol.InvalidParameter, "topicConfigList is empty")
	}
	for i := range body.TopicConfigList {
		tc := &body.TopicConfigList[i]
		tc.Attributes = b.alterAttributes(tc.TopicName, tc.Attributes)
		if err := b.checkTopicConfig(tc); err != nil {
			return nil, err
		}
	}
	if err := b.Topics.UpdateMany(body.TopicConfigList); err != nil {
		b.logger.Error("persist topic configs", "topics", len(body.TopicConfigList), "err", err)
		return nil, protocol.Errorf(protocol.SystemError, "persist topic config: %v", err)
	}
	return protocol.NewResponse(req, protocol.Success, ""), nil
}

func (b *Broker) updateTopic(tc protocol.TopicConfig) error {
	if err := b.checkTopicConfig(&tc); err != nil {
		return err
	}
	if err := b.Topics.Update(tc); err != nil {
		b.logger.Error("persist topic config", "topic", tc.TopicName, "err", err)
		return protocol.Errorf(protocol.SystemError, "persist topic config: %v", err)
	}
	return nil
}

// alterAttributes applies RocketMQ's attribute alterations ("+key": value
// sets, "-key" removes) to the topic's current attributes; a map of plain
// keys replaces them.
func (b *Broker) alterAttributes(topic string, in map[string]string) map[string]string {
	altering := false
	for k := range in {
		altering = altering || strings.HasPrefix(k, "+") || strings.HasPrefix(k, "-")
	}
	if !altering {
		return in
	}
	out := map[string]string{}
	if old, ok := b.Topics.Get(topic); ok {
		out = old.Attributes
	}
	for k, v := range in {
		switch {
		case strings.HasPrefix(k, "+"):
			out[k[1:]] = v
		case strings.HasPrefix(k, "-"):
			delete(out, k[1:])
		default:
			out[k] = v
		}
	}
	return out
}

// checkTopicConfig validates an admin-supplied config and fills defaults.
func (b *Broker) checkTopicConfig(tc *protocol.TopicConfig) error {
	if err := names.ValidateTopic(tc.TopicName); err != nil {
		return protocol.Errorf(protocol.InvalidParameter, "%s", err)
	}
	if names.IsSystemTopic(tc.TopicName) && tc.TopicName != names.TopicAutoCreate && !b.Topics.Contains(tc.TopicName) {
		return protocol.Errorf(protocol.InvalidParameter, "The topic[%s] is conflict with system topic.", tc.TopicName)
	}
	if tc.ReadQueueNums <= 0 || tc.WriteQueueNums <= 0 || tc.ReadQueueNums > 65535 || tc.WriteQueueNums > 65535 {
		return protocol.Errorf(protocol.InvalidParameter, "illegal queue nums read=%d write=%d", tc.ReadQueueNums, tc.WriteQueueNums)
	}
	if tc.Perm < 0 || tc.Perm > 7 {
		return protocol.Errorf(protocol.InvalidParameter, "illegal perm %d", tc.Perm)
	}
	if tc.TopicFilterType == "" {
		tc.TopicFilterType = protocol.TopicFilterSingleTag
	}
	if tc.Attributes == nil {
		tc.Attributes = map[string]string{}
	}
	return nil
}

// applyAttributes applies "+key=value,-key" to attrs (docs/broker.md §1.1).
func applyAttributes(attrs map[string]string, spec string) error {
	for _, part := range strings.Split(spec, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		switch part[0] {
		case '+':
			k, v, ok := strings.Cut(part[1:], "=")
			if !ok || k == "" {
				return protocol.Errorf(protocol.InvalidParameter, "bad attribute %q", part)
			}
			attrs[k] = v
		case '-':
			delete(attrs, part[1:])
		default:
			return protocol.Errorf(protocol.InvalidParameter, "bad attribute %q: want +key=value or -key", part)
		}
	}
	return nil
}

// topicWrapper is the topic table as REGISTER_BROKER and
// GET_ALL_TOPIC_CONFIG ship it; with a broker that is not fully readable and
// writable every perm is ANDed with brokerPermission.
func (b *Broker) topicWrapper() *protocol.TopicConfigSerializeWrapper {
	table, version := b.Topics.Snapshot()
	return b.topicWrapperOf(table, version)
}

// topicWrapperOf is topicWrapper of a given (part of the) table.
func (b *Broker) topicWrapperOf(table map[string]*protocol.TopicConfig, version protocol.DataVersion) *protocol.TopicConfigSerializeWrapper {
	w := &protocol.TopicConfigSerializeWrapper{
		TopicConfigTable: make(map[string]protocol.TopicConfig, len(table)),
		DataVersion:      version,
	}
	rw := protocol.PermRead | protocol.PermWrite
	for k, tc := range table {
		c := *tc
		if b.dyn.brokerPermission.Load()&rw != rw {
			c.Perm &= b.dyn.brokerPermission.Load()
		}
		w.TopicConfigTable[k] = c
	}
	return w
}

// processGetTopicConfig serves GET_TOPIC_CONFIG (351; topic).
func (b *Broker) processGetTopicConfig(_ context.Context, _ *remoting.Conn, req *protocol.Command) (*protocol.Command, error) {
	var h protocol.TopicHeader
	if err := protocol.DecodeHeader(req.ExtFields, &h, false); err != nil {
		return nil, err
	}
	tc, ok := b.Topics.Get(h.Topic)
	if !ok {
		return nil, protocol.Errorf(protocol.TopicNotExist, "No topic in this broker. topic: %s", h.Topic)
	}
	body, err := protocol.MarshalJSON(tc)
	if err != nil {
		return nil, err
	}
	resp := protocol.NewResponse(req, protocol.Success, "")
	resp.Body = body
	return resp, nil
}

// processDeleteTopic serves DELETE_TOPIC_IN_BROKER (215; topic): the topic,
// its consumer offsets and its consume queues go.
func (b *Broker) processDeleteTopic(_ context.Context, _ *remoting.Conn, req *protocol.Command) (*protocol.Command, error) {
	var h protocol.TopicHeader
	if err := protocol.DecodeHeader(req.ExtFields, &h, false); err != nil {
		return nil, err
	}
	if strings.TrimSpace(h.Topic) == "" {
		return nil, protocol.Errorf(protocol.InvalidParameter, "The specified topic is blank.")
	}
	if names.IsSystemTopic(h.Topic) {
		return nil, protocol.Errorf(protocol.InvalidParameter, "The topic[%s] is conflict with system topic.", h.Topic)
	}
	if err := b.deleteTopics([]string{h.Topic}); err != nil {
		return nil, protocol.Errorf(protocol.SystemError, "%v", err)
	}
	return protocol.NewResponse(req, protocol.Success, ""), nil
}

func (b *Broker) deleteTopics(topics []string) error {
	topics = append(topics, b.popRetryTopicsOf(topics)...) // pop_drop.go
	for _, t := range topics {
		if _, err := b.Topics.Delete(t); err != nil {
			return err
		}
		b.Offsets.RemoveTopic(t)
	}
	if err := b.dropPopTopics(topics); err != nil {
		return err
	}
	if err := b.Store.DeleteTopics(topics); err != nil {
		return err
	}
	b.requestRegister()
	return nil
}
