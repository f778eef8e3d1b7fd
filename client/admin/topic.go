package admin

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/apogeemq/apogee/client"
	"github.com/apogeemq/apogee/internal/names"
	"github.com/apogeemq/apogee/internal/protocol"
)

// Permission bits of a topic (docs/protocol.md §5.3.2).
const (
	PermRead      = 4
	PermWrite     = 2
	PermInherit   = 1
	PermReadWrite = PermRead | PermWrite
)

// TopicConfig is what CreateTopic creates or updates.
type TopicConfig struct {
	Topic       string
	ReadQueues  int  // default 8
	WriteQueues int  // default 8
	Perm        int  // default PermReadWrite (6)
	Order       bool // ordered topic
	// Attributes changes topic attributes, RocketMQ 5's "+key=value,-key"
	// (e.g. "+message.type=FIFO"); "" keeps them.
	Attributes string
	// SysFlag is topicSysFlag: TopicSysFlagUnit | TopicSysFlagUnitSub
	// (mqadmin updateTopic -u / -s).
	SysFlag int
}

// Bits of TopicConfig.SysFlag, RocketMQ's TopicSysFlag.
const (
	TopicSysFlagUnit    = 1 << 0
	TopicSysFlagUnitSub = 1 << 1
)

// CreateTopic creates or updates a topic on every master of the target
// (UPDATE_AND_CREATE_TOPIC); the brokers register it with the name servers.
func (a *Admin) CreateTopic(ctx context.Context, tc TopicConfig, target Target) error {
	if tc.Topic == "" {
		return fmt.Errorf("admin: empty topic")
	}
	if tc.ReadQueues == 0 {
		tc.ReadQueues = 8
	}
	if tc.WriteQueues == 0 {
		tc.WriteQueues = 8
	}
	if tc.Perm == 0 {
		tc.Perm = PermReadWrite
	}
	addrs, err := a.masters(ctx, target)
	if err != nil {
		return err
	}
	h := protocol.CreateTopicRequestHeader{
		Topic:           tc.Topic,
		DefaultTopic:    names.TopicAutoCreate,
		ReadQueueNums:   int32(tc.ReadQueues),
		WriteQueueNums:  int32(tc.WriteQueues),
		Perm:            int32(tc.Perm),
		TopicFilterType: "SINGLE_TAG",
		TopicSysFlag:    int32(tc.SysFlag),
		Order:           tc.Order,
		Attributes:      tc.Attributes,
	}
	var errs []error
	for _, addr := range slices.Sorted(maps.Keys(addrs)) {
		req := protocol.NewRequest(protocol.UpdateAndCreateTopic, protocol.EncodeHeader(&h, false), nil)
		if _, err := a.invokeOK(ctx, addr, tc.Topic, req); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// topicListChunk is how many topics one UPDATE_AND_CREATE_TOPIC_LIST
// request carries.
const topicListChunk = 1000

// CreateTopics creates or updates many topics on every master of the
// target with RocketMQ 5.3's batch request (UPDATE_AND_CREATE_TOPIC_LIST,
// body {"topicConfigList":[...]}), topicListChunk topics a request: each
// broker persists and registers a request's topics at once.
func (a *Admin) CreateTopics(ctx context.Context, tcs []TopicConfig, target Target) error {
	list := make([]protocol.TopicConfig, 0, len(tcs))
	for _, tc := range tcs {
		if tc.Topic == "" {
			return fmt.Errorf("admin: empty topic")
		}
		c := protocol.TopicConfig{TopicName: tc.Topic, ReadQueueNums: int32(tc.ReadQueues), WriteQueueNums: int32(tc.WriteQueues),
			Perm: int32(tc.Perm), TopicFilterType: protocol.TopicFilterSingleTag, Order: tc.Order, Attributes: map[string]string{}}
		if c.ReadQueueNums == 0 {
			c.ReadQueueNums = 8
		}
		if c.WriteQueueNums == 0 {
			c.WriteQueueNums = 8
		}
		if c.Perm == 0 {
			c.Perm = PermReadWrite
		}
		list = append(list, c)
	}
	if len(list) == 0 {
		return fmt.Errorf("admin: no topics")
	}
	addrs, err := a.masters(ctx, target)
	if err != nil {
		return err
	}
	var errs []error
	for _, addr := range slices.Sorted(maps.Keys(addrs)) {
		for i := 0; i < len(list); i += topicListChunk {
			chunk := list[i:min(i+topicListChunk, len(list))]
			body, err := protocol.MarshalJSON(map[string]any{"topicConfigList": chunk})
			if err != nil {
				return fmt.Errorf("admin: encode topic list: %w", err)
			}
			req := protocol.NewRequest(protocol.UpdateAndCreateTopicList, nil, body)
			if _, err := a.invokeOK(ctx, addr, chunk[0].TopicName, req); err != nil {
				errs = append(errs, err)
				break
			}
		}
	}
	return errors.Join(errs...)
}

// DeleteTopic deletes a topic from every master of cluster
// (DELETE_TOPIC_IN_BROKER) and from the name servers
// (DELETE_TOPIC_IN_NAMESRV).
func (a *Admin) DeleteTopic(ctx context.Context, topic, cluster string) error {
	addrs, err := a.masters(ctx, Target{Cluster: cluster})
	if err != nil {
		return err
	}
	var errs []error
	for _, addr := range slices.Sorted(maps.Keys(addrs)) {
		req := protocol.NewRequest(protocol.DeleteTopicInBroker, map[string]string{"topic": topic}, nil)
		if _, err := a.invokeOK(ctx, addr, topic, req); err != nil {
			errs = append(errs, err)
		}
	}
	for _, ns := range a.cfg.nameServers {
		req := protocol.NewRequest(protocol.DeleteTopicInNamesrv, map[string]string{"topic": topic, "clusterName": cluster}, nil)
		if _, err := a.invokeOK(ctx, ns, topic, req); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// Topics lists every topic the name server knows, sorted
// (GET_ALL_TOPIC_LIST_FROM_NAMESERVER).
func (a *Admin) Topics(ctx context.Context) ([]string, error) {
	resp, err := a.nameServerOK(ctx, "", protocol.NewRequest(protocol.GetAllTopicListFromNameServer, nil, nil))
	if err != nil {
		return nil, err
	}
	l, err := protocol.DecodeTopicList(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("admin: topic list: %w", err)
	}
	slices.Sort(l.TopicList)
	return l.TopicList, nil
}

// QueueData is one broker's queues of a topic.
type QueueData struct {
	BrokerName  string
	ReadQueues  int
	WriteQueues int
	Perm        int
}

// TopicRoute is where a topic lives.
type TopicRoute struct {
	Topic          string
	Queues         []QueueData // sorted by broker name
	Brokers        []Broker    // sorted by name
	OrderTopicConf string
}

// TopicRoute asks a name server for a topic's route; an unknown topic
// gives an error wrapping ErrNotFound.
func (a *Admin) TopicRoute(ctx context.Context, topic string) (*TopicRoute, error) {
	data, err := a.route(ctx, topic)
	if err != nil {
		return nil, err
	}
	r := &TopicRoute{Topic: topic, OrderTopicConf: data.OrderTopicConf}
	for _, q := range data.QueueDatas {
		r.Queues = append(r.Queues, QueueData{BrokerName: q.BrokerName, ReadQueues: int(q.ReadQueueNums), WriteQueues: int(q.WriteQueueNums), Perm: int(q.Perm)})
	}
	slices.SortFunc(r.Queues, func(x, y QueueData) int { return strings.Compare(x.BrokerName, y.BrokerName) })
	for _, b := range data.BrokerDatas {
		r.Brokers = append(r.Brokers, Broker{Cluster: b.Cluster, Name: b.BrokerName, Addrs: maps.Clone(b.BrokerAddrs)})
	}
	slices.SortFunc(r.Brokers, func(x, y Broker) int { return strings.Compare(x.Name, y.Name) })
	return r, nil
}

// RouteData is a topic's route as the name server sent it (RocketMQ's
// TopicRouteData: queueDatas, brokerDatas, ...), for tools that print it
// as mqadmin topicRoute does.
func (a *Admin) RouteData(ctx context.Context, topic string) (*protocol.TopicRouteData, error) {
	return a.route(ctx, topic)
}

func (a *Admin) route(ctx context.Context, topic string) (*protocol.TopicRouteData, error) {
	resp, addr, err := a.invokeNameServer(ctx, protocol.NewRequest(protocol.GetRouteInfoByTopic, map[string]string{"topic": topic}, nil))
	if err != nil {
		return nil, err
	}
	switch protocol.ResponseCode(resp.Code) {
	case protocol.Success:
	case protocol.TopicNotExist:
		return nil, fmt.Errorf("admin: topic %s: %w", topic, ErrNotFound)
	default:
		return nil, &client.BrokerError{Addr: addr, Topic: topic, Code: resp.Code, Remark: resp.Remark}
	}
	data, err := protocol.DecodeTopicRouteData(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("admin: route of %s: %w", topic, err)
	}
	return data, nil
}

// routeMasters returns broker name -> master address for a topic's route.
func (a *Admin) routeMasters(ctx context.Context, topic string) (map[string]string, error) {
	data, err := a.route(ctx, topic)
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	for _, b := range data.BrokerDatas {
		if addr := b.BrokerAddrs[0]; addr != "" {
			out[b.BrokerName] = addr
		}
	}
	return out, nil
}

// QueueStat is one queue's offsets.
type QueueStat struct {
	Queue      client.MessageQueue
	MinOffset  int64
	MaxOffset  int64
	LastUpdate time.Time // store time of the last message; zero if empty
}

// TopicStats returns the offsets of every queue of a topic, from each
// broker of its route (GET_TOPIC_STATS_INFO), sorted by broker and queue.
func (a *Admin) TopicStats(ctx context.Context, topic string) ([]QueueStat, error) {
	masters, err := a.routeMasters(ctx, topic)
	if err != nil {
		return nil, err
	}
	var out []QueueStat
	for _, name := range slices.Sorted(maps.Keys(masters)) {
		addr := masters[name]
		resp, err := a.invokeOK(ctx, addr, topic, protocol.NewRequest(protocol.GetTopicStatsInfo, map[string]string{"topic": topic}, nil))
		if err != nil {
			return nil, err
		}
		table, err := decodeTopicStats(resp.Body)
		if err != nil {
			return nil, fmt.Errorf("admin: topic stats of %s from %s: %w", topic, addr, err)
		}
		for mq, off := range table {
			st := QueueStat{Queue: mq, MinOffset: off.MinOffset, MaxOffset: off.MaxOffset}
			if off.LastUpdateTimestamp > 0 {
				st.LastUpdate = time.UnixMilli(off.LastUpdateTimestamp)
			}
			out = append(out, st)
		}
	}
	slices.SortFunc(out, func(x, y QueueStat) int { return compareQueue(x.Queue, y.Queue) })
	return out, nil
}

func compareQueue(a, b client.MessageQueue) int {
	if c := strings.Compare(a.Topic, b.Topic); c != 0 {
		return c
	}
	if c := strings.Compare(a.BrokerName, b.BrokerName); c != 0 {
		return c
	}
	return a.QueueID - b.QueueID
}

// TopicsByCluster lists the topics served by a cluster's brokers, sorted
// (GET_TOPICS_BY_CLUSTER).
func (a *Admin) TopicsByCluster(ctx context.Context, cluster string) ([]string, error) {
	req := protocol.NewRequest(protocol.GetTopicsByCluster, map[string]string{"cluster": cluster}, nil)
	resp, err := a.nameServerOK(ctx, "", req)
	if err != nil {
		return nil, err
	}
	l, err := protocol.DecodeTopicList(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("admin: topics of cluster %s: %w", cluster, err)
	}
	slices.Sort(l.TopicList)
	return l.TopicList, nil
}
