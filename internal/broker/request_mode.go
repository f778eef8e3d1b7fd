package broker

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/apogeemq/apogee/internal/names"
	"github.com/apogeemq/apogee/internal/protocol"
	"github.com/apogeemq/apogee/internal/remoting"
)

// Message request modes (RocketMQ 5's QueryAssignmentProcessor and
// MessageRequestModeManager; mqadmin setConsumeMode). A RocketMQ 5 client
// that balances on the broker asks QUERY_ASSIGNMENT (400) for its queues;
// the (topic, group) mode set by SET_MESSAGE_REQUEST_MODE (401) decides
// whether it pulls them (PULL: the group's queues are divided among its
// consumers by the client's strategy) or pops them (POP: each consumer may
// pop from popShareQueueNum more consumers' queues, or from all with a
// queue id of -1). GET_ALL_MESSAGE_REQUEST_MODE (402) lists the table.
//
// The table is config/messageRequestMode.json in RocketMQ's layout,
// rewritten whole (writeFileAtomic) on every change: a change is one
// operator command.

// Request modes, as the JSON spells them.
const (
	RequestModePull = "PULL"
	RequestModePop  = "POP"
)

// requestModeTable owns the modes and their file.
type requestModeTable struct {
	path string

	mu sync.Mutex
	// modes maps topic -> group -> mode; guarded by mu.
	modes map[string]map[string]protocol.MessageRequestMode
}

// requestModeFile is messageRequestMode.json.
type requestModeFile struct {
	MessageRequestModeMap map[string]map[string]protocol.MessageRequestMode `json:"messageRequestModeMap"`
}

func newRequestModeTable(path string) *requestModeTable {
	return &requestModeTable{path: path, modes: map[string]map[string]protocol.MessageRequestMode{}}
}

// load reads the file (or its .bak); a missing file is an empty table.
func (t *requestModeTable) load() error {
	_, err := loadFileWithBackup(t.path, func(b []byte) error {
		var f requestModeFile
		if err := json.Unmarshal(b, &f); err != nil {
			return err
		}
		t.mu.Lock()
		defer t.mu.Unlock()
		t.modes = map[string]map[string]protocol.MessageRequestMode{}
		for topic, groups := range f.MessageRequestModeMap {
			for group, m := range groups {
				if t.modes[topic] == nil {
					t.modes[topic] = map[string]protocol.MessageRequestMode{}
				}
				t.modes[topic][group] = m
			}
		}
		return nil
	})
	return err
}

// set stores a mode durably.
func (t *requestModeTable) set(m protocol.MessageRequestMode) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.modes[m.Topic] == nil {
		t.modes[m.Topic] = map[string]protocol.MessageRequestMode{}
	}
	t.modes[m.Topic][m.ConsumerGroup] = m
	data, err := json.MarshalIndent(requestModeFile{MessageRequestModeMap: t.modes}, "", "\t")
	if err != nil {
		return fmt.Errorf("broker: encode request modes: %w", err)
	}
	return writeFileAtomic(t.path, data)
}

func (t *requestModeTable) get(topic, group string) (protocol.MessageRequestMode, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	m, ok := t.modes[topic][group]
	return m, ok
}

func (t *requestModeTable) encode() ([]byte, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return json.Marshal(requestModeFile{MessageRequestModeMap: t.modes})
}

// processSetMessageRequestMode serves SET_MESSAGE_REQUEST_MODE (401; body
// SetMessageRequestModeRequestBody) with RocketMQ's checks: a %RETRY%
// topic NO_PERMISSION, an unknown topic TOPIC_NOT_EXIST, an unknown group
// (auto-created when allowed) SUBSCRIPTION_GROUP_NOT_EXIST.
func (b *Broker) processSetMessageRequestMode(_ context.Context, _ *remoting.Conn, req *protocol.Command) (*protocol.Command, error) {
	var body protocol.MessageRequestMode
	if err := protocol.UnmarshalFastJSON(req.Body, &body); err != nil {
		return nil, protocol.Errorf(protocol.SystemError, "bad SetMessageRequestModeRequestBody: %v", err)
	}
	if strings.HasPrefix(body.Topic, names.RetryGroupTopicPrefix) {
		return protocol.NewResponse(req, protocol.NoPermission, "retry topic is not allowed to set mode"), nil
	}
	if !b.Topics.Contains(body.Topic) {
		return protocol.NewResponse(req, protocol.TopicNotExist, "topic["+body.Topic+"] not exist"), nil
	}
	if _, ok, _ := b.Groups.FindOrCreate(body.ConsumerGroup, b.dyn.autoCreateGroup.Load()); !ok {
		return protocol.NewResponse(req, protocol.SubscriptionGroupNotExist, "subscription group does not exist"), nil
	}
	if body.Mode != RequestModePull && body.Mode != RequestModePop {
		return nil, protocol.Errorf(protocol.InvalidParameter, "mode %q is neither PULL nor POP", body.Mode)
	}
	if err := b.requestModes.set(body); err != nil {
		return nil, protocol.Errorf(protocol.SystemError, "persist request mode: %v", err)
	}
	b.logger.Info("message request mode set", "topic", body.Topic, "group", body.ConsumerGroup, "mode", body.Mode,
		"popShareQueueNum", body.PopShareQueueNum)
	return protocol.NewResponse(req, protocol.Success, ""), nil
}

// processGetAllMessageRequestMode serves GET_ALL_MESSAGE_REQUEST_MODE (402).
func (b *Broker) processGetAllMessageRequestMode(_ context.Context, _ *remoting.Conn, req *protocol.Command) (*protocol.Command, error) {
	body, err := b.requestModes.encode()
	if err != nil {
		return nil, err
	}
	resp := protocol.NewResponse(req, protocol.Success, "")
	resp.Body = body
	return resp, nil
}

// processQueryAssignment serves QUERY_ASSIGNMENT (400; body
// QueryAssignmentRequestBody) as RocketMQ's QueryAssignmentProcessor: the
// topic's readable queues from the name servers' route (this broker's own
// when it knows no name server); BROADCASTING gets them all; CLUSTERING
// divides them among the group's consumers with the client's strategy
// (AVG or AVG_BY_CIRCLE; another name assigns nothing), in POP mode
// sharing popShareQueueNum neighbours' queues, or every queue as queue -1
// when popShareQueueNum <= 0 or covers every other consumer. Each
// assignment carries the mode: PULL by default, always for %RETRY% topics.
func (b *Broker) processQueryAssignment(ctx context.Context, _ *remoting.Conn, req *protocol.Command) (*protocol.Command, error) {
	var q protocol.QueryAssignmentRequestBody
	if err := protocol.UnmarshalFastJSON(req.Body, &q); err != nil {
		return nil, protocol.Errorf(protocol.SystemError, "bad QueryAssignmentRequestBody: %v", err)
	}
	mode, ok := b.requestModes.get(q.Topic, q.ConsumerGroup)
	if !ok {
		mode = protocol.MessageRequestMode{Topic: q.Topic, ConsumerGroup: q.ConsumerGroup, Mode: RequestModePull}
	}
	var assigned []protocol.MessageQueue
	mqAll := b.subscribeQueues(ctx, q.Topic)
	switch {
	case len(mqAll) == 0:
		b.logger.Debug("query assignment: no queues", "topic", q.Topic, "group", q.ConsumerGroup)
	case q.MessageModel == protocol.MessageModelBroadcasting:
		assigned = mqAll
	default:
		cids := slices.Sorted(slices.Values(b.Clients.ConsumerIDs(q.ConsumerGroup)))
		assigned = assignQueues(q.StrategyName, q.ClientID, mqAll, cids, mode)
	}
	out := protocol.QueryAssignmentResponseBody{MessageQueueAssignments: make([]protocol.MessageQueueAssignment, 0, len(assigned))}
	for _, mq := range assigned {
		out.MessageQueueAssignments = append(out.MessageQueueAssignments, protocol.MessageQueueAssignment{MessageQueue: mq, Mode: mode.Mode})
	}
	body, err := protocol.MarshalJSON(&out)
	if err != nil {
		return nil, err
	}
	resp := protocol.NewResponse(req, protocol.Success, "")
	resp.Body = body
	return resp, nil
}

// subscribeQueues are topic's readable queues, sorted (RocketMQ's
// TopicRouteInfoManager.getTopicSubscribeInfo).
func (b *Broker) subscribeQueues(ctx context.Context, topic string) []protocol.MessageQueue {
	var qds []protocol.QueueData
	if route := b.fetchRoute(ctx, topic); route != nil {
		qds = route.QueueDatas
	} else if tc, ok := b.Topics.Get(topic); ok {
		qds = []protocol.QueueData{{BrokerName: b.cfg.BrokerName, ReadQueueNums: tc.ReadQueueNums, Perm: tc.Perm}}
	}
	var out []protocol.MessageQueue
	for _, qd := range qds {
		if qd.Perm&protocol.PermRead == 0 {
			continue
		}
		for i := range qd.ReadQueueNums {
			out = append(out, protocol.MessageQueue{Topic: topic, BrokerName: qd.BrokerName, QueueID: i})
		}
	}
	slices.SortFunc(out, func(x, y protocol.MessageQueue) int {
		if c := strings.Compare(x.BrokerName, y.BrokerName); c != 0 {
			return c
		}
		return int(x.QueueID - y.QueueID)
	})
	return out
}

// fetchRoute asks the name servers for topic's route (nil without one).
func (b *Broker) fetchRoute(ctx context.Context, topic string) *protocol.TopicRouteData {
	for _, addr := range b.cfg.NamesrvAddr {
		cctx, cancel := context.WithTimeout(ctx, 3*time.Second)
		resp, err := b.nsClient.InvokeSync(cctx, addr,
			protocol.NewRequest(protocol.GetRouteInfoByTopic, map[string]string{"topic": topic}, nil))
		cancel()
		if err != nil || resp.ResponseCode() != protocol.Success {
			continue
		}
		if r, err := protocol.DecodeTopicRouteData(resp.Body); err == nil {
			return r
		}
	}
	return nil
}

// assignQueues is doLoadBalance's CLUSTERING branch: cid's queues of
// mqAll among cids (both sorted) by strategy, for mode.
func assignQueues(strategy, cid string, mqAll []protocol.MessageQueue, cids []string, mode protocol.MessageRequestMode) []protocol.MessageQueue {
	allocate := map[string]func(cid string) []protocol.MessageQueue{
		"AVG":           func(c string) []protocol.MessageQueue { return allocateAvgQueues(c, mqAll, cids) },
		"AVG_BY_CIRCLE": func(c string) []protocol.MessageQueue { return allocateCircleQueues(c, mqAll, cids) },
	}[strategy]
	if allocate == nil || !slices.Contains(cids, cid) {
		return nil
	}
	if mode.Mode != RequestModePop {
		return allocate(cid)
	}
	share := mode.PopShareQueueNum
	if share <= 0 || share >= len(cids)-1 {
		// Each consumer pops from every queue: one entry per queue, each
		// with queue id -1, as RocketMQ builds the list.
		out := make([]protocol.MessageQueue, len(mqAll))
		for i, mq := range mqAll {
			out[i] = protocol.MessageQueue{Topic: mq.Topic, BrokerName: mq.BrokerName, QueueID: -1}
		}
		return out
	}
	if len(cids) > len(mqAll) {
		// More consumers than queues: every consumer gets one.
		return []protocol.MessageQueue{mqAll[slices.Index(cids, cid)%len(mqAll)]}
	}
	out := allocate(cid)
	index := slices.Index(cids, cid)
	for range share {
		index = (index + 1) % len(cids)
		out = append(out, allocate(cids[index])...)
	}
	return out
}

// allocateAvgQueues is AllocateMessageQueueAveragely (AVG).
func allocateAvgQueues(cid string, mqAll []protocol.MessageQueue, cids []string) []protocol.MessageQueue {
	index := slices.Index(cids, cid)
	n, c := len(mqAll), len(cids)
	if index < 0 || n == 0 {
		return nil
	}
	mod := n % c
	average := n / c
	switch {
	case n <= c:
		average = 1
	case mod > 0 && index < mod:
		average++
	}
	start := index*average + mod
	if mod > 0 && index < mod {
		start = index * average
	}
	size := min(average, n-start)
	if size <= 0 {
		return nil
	}
	return slices.Clone(mqAll[start : start+size])
}

// allocateCircleQueues is AllocateMessageQueueAveragelyByCircle (AVG_BY_CIRCLE).
func allocateCircleQueues(cid string, mqAll []protocol.MessageQueue, cids []string) []protocol.MessageQueue {
	index := slices.Index(cids, cid)
	if index < 0 {
		return nil
	}
	var out []protocol.MessageQueue
	for i := index; i < len(mqAll); i += len(cids) {
		out = append(out, mqAll[i])
	}
	return out
}
