package admin

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/apogeemq/apogee/client"
	"github.com/apogeemq/apogee/internal/message"
	"github.com/apogeemq/apogee/internal/protocol"
)

// eachNameServer sends a copy of req to every name server and collects the
// successful answers by address; the first failure is returned with them.
// mqadmin's KV, config and write-permission commands apply to all of them.
func (a *Admin) eachNameServer(ctx context.Context, req *protocol.Command) (map[string]*protocol.Command, error) {
	out := make(map[string]*protocol.Command, len(a.cfg.nameServers))
	var errs []error
	for _, addr := range a.cfg.nameServers {
		r := *req
		resp, err := a.invokeOK(ctx, addr, "", &r)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		out[addr] = resp
	}
	return out, errors.Join(errs...)
}

// UpdateKVConfig sets namespace/key to value on every name server
// (PUT_KV_CONFIG).
func (a *Admin) UpdateKVConfig(ctx context.Context, namespace, key, value string) error {
	h := protocol.PutKVConfigRequestHeader{Namespace: namespace, Key: key, Value: value}
	_, err := a.eachNameServer(ctx, protocol.NewRequest(protocol.PutKVConfig, protocol.EncodeHeader(&h, false), nil))
	return err
}

// DeleteKVConfig removes namespace/key from every name server
// (DELETE_KV_CONFIG).
func (a *Admin) DeleteKVConfig(ctx context.Context, namespace, key string) error {
	h := protocol.KVConfigKeyHeader{Namespace: namespace, Key: key}
	_, err := a.eachNameServer(ctx, protocol.NewRequest(protocol.DeleteKVConfig, protocol.EncodeHeader(&h, false), nil))
	return err
}

// KVConfig reads namespace/key from a name server (GET_KV_CONFIG);
// ErrNotFound when it is not set.
func (a *Admin) KVConfig(ctx context.Context, namespace, key string) (string, error) {
	h := protocol.KVConfigKeyHeader{Namespace: namespace, Key: key}
	resp, _, err := a.invokeNameServer(ctx, protocol.NewRequest(protocol.GetKVConfig, protocol.EncodeHeader(&h, false), nil))
	if err != nil {
		return "", err
	}
	if resp.Code == int32(protocol.QueryNotFound) {
		return "", fmt.Errorf("admin: kv config %s/%s: %w", namespace, key, ErrNotFound)
	}
	if resp.Code != int32(protocol.Success) {
		return "", &client.BrokerError{Code: resp.Code, Remark: resp.Remark}
	}
	return resp.Ext("value"), nil
}

// parseProperties reads a properties text body ("k=v" lines).
func parseProperties(body []byte) map[string]string {
	out := map[string]string{}
	for line := range strings.SplitSeq(string(body), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || line[0] == '#' {
			continue
		}
		if k, v, ok := strings.Cut(line, "="); ok {
			out[strings.TrimSpace(k)] = strings.TrimSpace(v)
		}
	}
	return out
}

// NamesrvConfig returns every name server's configuration by address
// (GET_NAMESRV_CONFIG).
func (a *Admin) NamesrvConfig(ctx context.Context) (map[string]map[string]string, error) {
	resps, err := a.eachNameServer(ctx, protocol.NewRequest(protocol.GetNamesrvConfig, nil, nil))
	out := make(map[string]map[string]string, len(resps))
	for addr, r := range resps {
		out[addr] = parseProperties(r.Body)
	}
	return out, err
}

// UpdateNamesrvConfig changes configuration keys on every name server
// (UPDATE_NAMESRV_CONFIG, a properties body).
func (a *Admin) UpdateNamesrvConfig(ctx context.Context, kv map[string]string) error {
	if len(kv) == 0 {
		return fmt.Errorf("admin: no key to update")
	}
	var b strings.Builder
	for _, k := range slices.Sorted(maps.Keys(kv)) {
		fmt.Fprintf(&b, "%s=%s\n", k, kv[k])
	}
	_, err := a.eachNameServer(ctx, protocol.NewRequest(protocol.UpdateNamesrvConfig, nil, []byte(b.String())))
	return err
}

// WipeWritePerm removes the write permission of brokerName's topics on
// every name server (WIPE_WRITE_PERM_OF_BROKER) and returns, per name
// server, how many topics it changed. AddWritePerm gives it back
// (ADD_WRITE_PERM_OF_BROKER).
func (a *Admin) WipeWritePerm(ctx context.Context, brokerName string) (map[string]int, error) {
	return a.writePerm(ctx, protocol.WipeWritePermOfBroker, "wipeTopicCount", brokerName)
}

// AddWritePerm: see WipeWritePerm.
func (a *Admin) AddWritePerm(ctx context.Context, brokerName string) (map[string]int, error) {
	return a.writePerm(ctx, protocol.AddWritePermOfBroker, "addTopicCount", brokerName)
}

func (a *Admin) writePerm(ctx context.Context, code protocol.RequestCode, countKey, brokerName string) (map[string]int, error) {
	resps, err := a.eachNameServer(ctx, protocol.NewRequest(code, map[string]string{"brokerName": brokerName}, nil))
	out := make(map[string]int, len(resps))
	for addr, r := range resps {
		n, _ := strconv.Atoi(r.Ext(countKey))
		out[addr] = n
	}
	return out, err
}

// UpdateTopicPerm sets the permission of topic on every master of the
// target, keeping its queue counts and order flag (as mqadmin
// updateTopicPerm: read the broker's config, write it back with perm).
// It returns the brokers changed.
func (a *Admin) UpdateTopicPerm(ctx context.Context, topic string, perm int, target Target) ([]string, error) {
	if perm != PermRead && perm != PermWrite && perm != PermReadWrite {
		return nil, fmt.Errorf("admin: perm %d: want 2 (W), 4 (R) or 6 (RW)", perm)
	}
	addrs, err := a.masters(ctx, target)
	if err != nil {
		return nil, err
	}
	var done []string
	for _, addr := range slices.Sorted(maps.Keys(addrs)) {
		tc, err := a.BrokerTopicConfig(ctx, addr, topic)
		if err != nil {
			return done, err
		}
		tc.Perm = perm
		if err := a.CreateTopic(ctx, tc, Target{BrokerAddr: addr}); err != nil {
			return done, err
		}
		done = append(done, addr)
	}
	return done, nil
}

// BrokerTopicConfig reads one topic's configuration from a broker
// (GET_TOPIC_CONFIG).
func (a *Admin) BrokerTopicConfig(ctx context.Context, brokerAddr, topic string) (TopicConfig, error) {
	resp, err := a.invoke(ctx, brokerAddr, protocol.NewRequest(protocol.GetTopicConfig, map[string]string{"topic": topic}, nil))
	if err != nil {
		return TopicConfig{}, err
	}
	switch protocol.ResponseCode(resp.Code) {
	case protocol.Success:
	case protocol.TopicNotExist:
		return TopicConfig{}, fmt.Errorf("admin: topic %s on %s: %w", topic, brokerAddr, ErrNotFound)
	default:
		return TopicConfig{}, &client.BrokerError{Addr: brokerAddr, Topic: topic, Code: resp.Code, Remark: resp.Remark}
	}
	var body struct {
		TopicConfig struct {
			TopicName      string `json:"topicName"`
			ReadQueueNums  int    `json:"readQueueNums"`
			WriteQueueNums int    `json:"writeQueueNums"`
			Perm           int    `json:"perm"`
			Order          bool   `json:"order"`
		} `json:"topicConfig"`
		TopicName string `json:"topicName"`
	}
	if err := json.Unmarshal(resp.Body, &body); err != nil {
		return TopicConfig{}, fmt.Errorf("admin: topic config of %s from %s: %w", topic, brokerAddr, err)
	}
	c := body.TopicConfig
	if c.TopicName == "" { // a bare TopicConfig body
		if err := json.Unmarshal(resp.Body, &c); err != nil {
			return TopicConfig{}, fmt.Errorf("admin: topic config of %s from %s: %w", topic, brokerAddr, err)
		}
	}
	return TopicConfig{Topic: topic, ReadQueues: c.ReadQueueNums, WriteQueues: c.WriteQueueNums, Perm: c.Perm, Order: c.Order}, nil
}

// TopicClusters returns the clusters holding a broker of topic's route
// (mqadmin topicClusterList).
func (a *Admin) TopicClusters(ctx context.Context, topic string) ([]string, error) {
	rd, err := a.route(ctx, topic)
	if err != nil {
		return nil, err
	}
	ci, err := a.ClusterInfo(ctx)
	if err != nil {
		return nil, err
	}
	seen := map[string]bool{}
	for _, bd := range rd.BrokerDatas {
		for cluster, brokers := range ci.Clusters {
			if slices.Contains(brokers, bd.BrokerName) {
				seen[cluster] = true
			}
		}
	}
	return slices.Sorted(maps.Keys(seen)), nil
}

// AllocateMQ shows how the average allocation strategy would share
// topic's readable queues among clients identified by ips (mqadmin
// allocateMQ): ip -> its queues.
func (a *Admin) AllocateMQ(ctx context.Context, topic string, ips []string) (map[string][]client.MessageQueue, error) {
	rd, err := a.route(ctx, topic)
	if err != nil {
		return nil, err
	}
	var mqs []client.MessageQueue
	for _, qd := range rd.QueueDatas {
		if qd.Perm&PermRead == 0 {
			continue
		}
		for q := range qd.ReadQueueNums {
			mqs = append(mqs, client.MessageQueue{Topic: topic, BrokerName: qd.BrokerName, QueueID: int(q)})
		}
	}
	slices.SortFunc(mqs, func(x, y client.MessageQueue) int {
		if c := strings.Compare(x.BrokerName, y.BrokerName); c != 0 {
			return c
		}
		return x.QueueID - y.QueueID
	})
	cids := slices.Clone(ips)
	slices.Sort(cids)
	strategy := client.AllocateAveragely()
	out := make(map[string][]client.MessageQueue, len(ips))
	for _, ip := range ips {
		out[ip] = strategy.Allocate("", ip, mqs, cids)
	}
	return out, nil
}

// CloneGroupOffset copies srcGroup's offsets on topic to destGroup on every
// broker of topic's route (CLONE_GROUP_OFFSET).
func (a *Admin) CloneGroupOffset(ctx context.Context, srcGroup, destGroup, topic string, offline bool) error {
	brokers, err := a.routeMasters(ctx, topic)
	if err != nil {
		return err
	}
	h := map[string]string{"srcGroup": srcGroup, "destGroup": destGroup, "topic": topic, "offline": strconv.FormatBool(offline)}
	for _, addr := range brokers {
		if _, err := a.invokeOK(ctx, addr, topic, protocol.NewRequest(protocol.CloneGroupOffset, maps.Clone(h), nil)); err != nil {
			return err
		}
	}
	return nil
}

// SkipAccumulated moves group's offsets on topic to the end of every queue
// (mqadmin skipAccumulatedMessage: a reset to timestamp -1).
func (a *Admin) SkipAccumulated(ctx context.Context, topic, group string, force bool) (map[client.MessageQueue]int64, error) {
	return a.resetOffset(ctx, topic, group, -1, force, nil, nil)
}

// ResetQueueOffset sets group's offset of one queue of topic on brokerAddr
// (mqadmin resetOffsetByTime -b -q -o).
func (a *Admin) ResetQueueOffset(ctx context.Context, brokerAddr, topic, group string, queueID int, offset int64) (map[client.MessageQueue]int64, error) {
	q, o := int32(queueID), offset
	return a.resetOffsetOn(ctx, []string{brokerAddr}, topic, group, -1, true, &q, &o)
}

// BrokerConsumeStats is one broker's GET_BROKER_CONSUME_STATS answer:
// group -> its queues' progress on every topic it has offsets for, with
// the broker's total lag.
type BrokerConsumeStats struct {
	BrokerAddr string
	TotalDiff  int64
	Groups     map[string][]QueueProgress
}

// BrokerConsumeStats reads every group's progress on a broker (mqadmin
// brokerConsumeStats); isOrder keeps ordered topics only.
func (a *Admin) BrokerConsumeStats(ctx context.Context, brokerAddr string, isOrder bool) (*BrokerConsumeStats, error) {
	resp, err := a.invokeOK(ctx, brokerAddr, "", protocol.NewRequest(protocol.GetBrokerConsumeStats,
		map[string]string{"isOrder": strconv.FormatBool(isOrder)}, nil))
	if err != nil {
		return nil, err
	}
	var body struct {
		BrokerAddr       string                         `json:"brokerAddr"`
		TotalDiff        int64                          `json:"totalDiff"`
		ConsumeStatsList []map[string][]json.RawMessage `json:"consumeStatsList"`
	}
	if err := protocol.UnmarshalFastJSON(resp.Body, &body); err != nil {
		return nil, fmt.Errorf("admin: broker consume stats from %s: %w", brokerAddr, err)
	}
	out := &BrokerConsumeStats{BrokerAddr: body.BrokerAddr, TotalDiff: body.TotalDiff, Groups: map[string][]QueueProgress{}}
	for _, m := range body.ConsumeStatsList {
		for group, list := range m {
			qs := []QueueProgress{}
			for _, raw := range list {
				cs, err := decodeConsumeStats(raw)
				if err != nil {
					return nil, fmt.Errorf("admin: broker consume stats from %s: %w", brokerAddr, err)
				}
				for mq, w := range cs.offsets {
					qp := QueueProgress{Queue: mq, BrokerOffset: w.BrokerOffset, ConsumerOffset: w.ConsumerOffset,
						Lag: max(0, w.BrokerOffset-w.ConsumerOffset)}
					if w.LastTimestamp > 0 {
						qp.LastTimestamp = time.UnixMilli(w.LastTimestamp)
					}
					qs = append(qs, qp)
				}
			}
			slices.SortFunc(qs, func(x, y QueueProgress) int { return compareQueue(x.Queue, y.Queue) })
			out.Groups[group] = qs
		}
	}
	return out, nil
}

// Maintenance runs one of the broker maintenance requests on every master
// of the target and returns, per broker, whether it succeeded:
// DELETE_EXPIRED_COMMITLOG, CLEAN_EXPIRED_CONSUMEQUEUE or CLEAN_UNUSED_TOPIC.
func (a *Admin) Maintenance(ctx context.Context, code protocol.RequestCode, target Target) (map[string]bool, error) {
	addrs, err := a.masters(ctx, target)
	if err != nil {
		return nil, err
	}
	out := make(map[string]bool, len(addrs))
	var errs []error
	for addr := range addrs {
		_, err := a.invokeOK(ctx, addr, "", protocol.NewRequest(code, nil, nil))
		out[addr] = err == nil
		if err != nil {
			errs = append(errs, err)
		}
	}
	return out, errors.Join(errs...)
}

// GroupConfigs reads group's subscription-group configuration from every
// master of cluster (GET_SUBSCRIPTION_GROUP_CONFIG, mqadmin
// getConsumerConfig): broker address -> its JSON config.
func (a *Admin) GroupConfigs(ctx context.Context, group string) (map[string]json.RawMessage, error) {
	ci, err := a.ClusterInfo(ctx)
	if err != nil {
		return nil, err
	}
	out := map[string]json.RawMessage{}
	for _, b := range ci.Brokers {
		addr := b.Addrs[0]
		if addr == "" {
			continue
		}
		resp, err := a.invoke(ctx, addr, protocol.NewRequest(protocol.GetSubscriptionGroupConfig, map[string]string{"group": group}, nil))
		if err != nil {
			return nil, err
		}
		if resp.Code == int32(protocol.Success) && len(resp.Body) > 0 {
			out[addr] = json.RawMessage(resp.Body)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("admin: group %s: %w", group, ErrNotFound)
	}
	return out, nil
}

// OffsetByTime returns the offset of q's first message stored at or after
// t (SEARCH_OFFSET_BY_TIMESTAMP on q's master); a zero t is the queue's
// first offset.
func (a *Admin) OffsetByTime(ctx context.Context, q client.MessageQueue, t time.Time) (int64, error) {
	masters, err := a.routeMasters(ctx, q.Topic)
	if err != nil {
		return 0, err
	}
	addr, ok := masters[q.BrokerName]
	if !ok {
		return 0, fmt.Errorf("admin: broker %s not in the route of %s: %w", q.BrokerName, q.Topic, ErrNotFound)
	}
	ext := map[string]string{"topic": q.Topic, "queueId": strconv.Itoa(q.QueueID), "timestamp": strconv.FormatInt(max(t.UnixMilli(), 0), 10)}
	resp, err := a.invokeOK(ctx, addr, q.Topic, protocol.NewRequest(protocol.SearchOffsetByTimestamp, ext, nil))
	if err != nil {
		return 0, err
	}
	off, err := strconv.ParseInt(resp.Ext("offset"), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("admin: search offset answer from %s: %w", addr, err)
	}
	return off, nil
}

// QueryMessageByUniqKey returns the messages of topic whose UNIQ_KEY is id
// (QUERY_MESSAGE with _UNIQUE_KEY_QUERY on every broker; a message resent
// or retried can have several copies, at most 32), newest store first.
func (a *Admin) QueryMessageByUniqKey(ctx context.Context, topic, id string) ([]*client.MessageExt, error) {
	msgs, err := a.queryMessages(ctx, topic, id, 32, time.Time{}, time.Now().Add(time.Hour), true)
	if err != nil {
		return nil, err
	}
	var out []*client.MessageExt
	for _, m := range msgs {
		if m.Properties[message.PropertyUniqClientMessageIDKeyidx] == id {
			out = append(out, m)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("admin: message %s in topic %s: %w", id, topic, ErrNotFound)
	}
	slices.SortFunc(out, func(x, y *client.MessageExt) int { return y.StoreTime.Compare(x.StoreTime) })
	return out, nil
}

// SetConsumeMode is mqadmin setConsumeMode (SET_MESSAGE_REQUEST_MODE 401)
// on the target's masters: how group consumes topic when its clients ask
// the broker for assignments (QUERY_ASSIGNMENT), "PULL" or "POP"
// (popShareQueueNum: how many other consumers' queues each POP consumer
// shares; 0 = every queue). It returns the brokers it set.
func (a *Admin) SetConsumeMode(ctx context.Context, topic, group, mode string, popShareQueueNum int, target Target) ([]string, error) {
	if mode != "PULL" && mode != "POP" {
		return nil, fmt.Errorf("admin: consume mode %q: want PULL or POP", mode)
	}
	body, err := protocol.MarshalJSON(&protocol.MessageRequestMode{Topic: topic, ConsumerGroup: group, Mode: mode, PopShareQueueNum: popShareQueueNum})
	if err != nil {
		return nil, err
	}
	addrs, err := a.masters(ctx, target)
	if err != nil {
		return nil, err
	}
	var done []string
	for _, addr := range slices.Sorted(maps.Keys(addrs)) {
		if _, err := a.invokeOK(ctx, addr, topic, protocol.NewRequest(protocol.SetMessageRequestMode, nil, body)); err != nil {
			return done, err
		}
		done = append(done, addr)
	}
	return done, nil
}

// ConsumeModes is GET_ALL_MESSAGE_REQUEST_MODE (402) of one broker: topic ->
// group -> mode.
func (a *Admin) ConsumeModes(ctx context.Context, brokerAddr string) (map[string]map[string]protocol.MessageRequestMode, error) {
	resp, err := a.invokeOK(ctx, brokerAddr, "", protocol.NewRequest(protocol.GetAllMessageRequestMode, nil, nil))
	if err != nil {
		return nil, err
	}
	var w struct {
		MessageRequestModeMap map[string]map[string]protocol.MessageRequestMode `json:"messageRequestModeMap"`
	}
	if err := protocol.UnmarshalFastJSON(resp.Body, &w); err != nil {
		return nil, fmt.Errorf("admin: consume modes from %s: %w", brokerAddr, err)
	}
	return w.MessageRequestModeMap, nil
}
