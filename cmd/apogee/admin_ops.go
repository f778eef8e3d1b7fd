package main

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/apogeemq/apogee/client"
	"github.com/apogeemq/apogee/client/admin"
	"github.com/apogeemq/apogee/internal/protocol"
)

// The mqadmin operations commands: name-server KV and config, write
// permissions, topic permission and order configuration, offsets,
// maintenance, message printing and send round trips.
func init() {
	adminCommands = append(adminCommands,
		cmdUpdateKvConfig, cmdDeleteKvConfig, cmdGetNamesrvConfig, cmdUpdateNamesrvConfig,
		cmdWipeWritePerm, cmdAddWritePerm, cmdUpdateTopicPerm, cmdUpdateOrderConf, cmdTopicClusterList,
		cmdAllocateMQ, cmdCloneGroupOffset, cmdSkipAccumulatedMessage, cmdBrokerConsumeStats,
		cmdGetConsumerConfig, cmdDeleteExpiredCommitLog, cmdCleanExpiredCQ, cmdCleanUnusedTopic,
		cmdQueryMsgByOffset, cmdPrintMsgByQueue, cmdPrintMsg, cmdQueryMsgByUniqueKey,
		cmdCheckMsgSendRT, cmdClusterRT, cmdSendMsgStatus, cmdSetConsumeMode)
}

// orderTopicNamespace is the name-server KV namespace of ordered topics'
// broker:queues configuration (RocketMQ's NamesrvUtil.NAMESPACE_ORDER_TOPIC_CONFIG).
const orderTopicNamespace = "ORDER_TOPIC_CONFIG"

// boolArg is a boolean flag that takes its value as mqadmin's do
// ("-f true"), not as a bare switch.
type boolArg struct{ v *bool }

func (b boolArg) String() string {
	if b.v == nil {
		return "false"
	}
	return strconv.FormatBool(*b.v)
}
func (b boolArg) Set(s string) error {
	v, err := strconv.ParseBool(s)
	if err != nil {
		return fmt.Errorf("want true or false, got %q", s)
	}
	*b.v = v
	return nil
}
func (boolArg) Type() string { return "true|false" }

func boolArgVarP(c *cobra.Command, p *bool, name, short string, def bool, usage string) {
	*p = def
	c.Flags().VarP(boolArg{p}, name, short, usage)
}

// okText is the one-line answer of a command that changes something.
func okText(format string, args ...any) *result {
	return &result{text: fmt.Sprintf(format, args...), value: map[string]any{"ok": true, "message": fmt.Sprintf(format, args...)}}
}

func cmdUpdateKvConfig(g *globalFlags, af *adminFlags) *cobra.Command {
	var ns, key, value string
	return adminCommand(g, af, "updateKvConfig", "Create or update a KV config on every name server", func(c *cobra.Command) {
		c.Flags().StringVarP(&ns, "namespace", "s", "", "namespace (required)")
		c.Flags().StringVarP(&key, "key", "k", "", "key (required)")
		c.Flags().StringVarP(&value, "value", "v", "", "value (required)")
		c.MarkFlagRequired("namespace")
		c.MarkFlagRequired("key")
		c.MarkFlagRequired("value")
	}, func(ctx context.Context, a *admin.Admin) (*result, error) {
		if err := a.UpdateKVConfig(ctx, ns, key, value); err != nil {
			return nil, err
		}
		return okText("update kv config in namespace %s success", ns), nil
	})
}

func cmdDeleteKvConfig(g *globalFlags, af *adminFlags) *cobra.Command {
	var ns, key string
	return adminCommand(g, af, "deleteKvConfig", "Delete a KV config on every name server", func(c *cobra.Command) {
		c.Flags().StringVarP(&ns, "namespace", "s", "", "namespace (required)")
		c.Flags().StringVarP(&key, "key", "k", "", "key (required)")
		c.MarkFlagRequired("namespace")
		c.MarkFlagRequired("key")
	}, func(ctx context.Context, a *admin.Admin) (*result, error) {
		if err := a.DeleteKVConfig(ctx, ns, key); err != nil {
			return nil, err
		}
		return okText("delete kv config from namespace %s success", ns), nil
	})
}

func cmdGetNamesrvConfig(g *globalFlags, af *adminFlags) *cobra.Command {
	return adminCommand(g, af, "getNamesrvConfig", "Show every name server's configuration", nil,
		func(ctx context.Context, a *admin.Admin) (*result, error) {
			cfgs, err := a.NamesrvConfig(ctx)
			if err != nil && len(cfgs) == 0 {
				return nil, err
			}
			r := &result{value: cfgs, header: []string{"#NAMESRV", "#KEY", "#VALUE"}}
			for _, addr := range slices.Sorted(maps.Keys(cfgs)) {
				for _, k := range slices.Sorted(maps.Keys(cfgs[addr])) {
					r.rows = append(r.rows, []string{addr, k, cfgs[addr][k]})
				}
			}
			return r, err
		})
}

func cmdUpdateNamesrvConfig(g *globalFlags, af *adminFlags) *cobra.Command {
	var key, value string
	return adminCommand(g, af, "updateNamesrvConfig", "Change a configuration key on every name server", func(c *cobra.Command) {
		c.Flags().StringVarP(&key, "key", "k", "", "config key (required)")
		c.Flags().StringVarP(&value, "value", "v", "", "config value (required)")
		c.MarkFlagRequired("key")
		c.MarkFlagRequired("value")
	}, func(ctx context.Context, a *admin.Admin) (*result, error) {
		if err := a.UpdateNamesrvConfig(ctx, map[string]string{key: value}); err != nil {
			return nil, err
		}
		return okText("update name server config success: %s=%s", key, value), nil
	})
}

func writePermCommand(g *globalFlags, af *adminFlags, use, short, verb string,
	call func(*admin.Admin, context.Context, string) (map[string]int, error)) *cobra.Command {
	var broker string
	return adminCommand(g, af, use, short, func(c *cobra.Command) {
		c.Flags().StringVarP(&broker, "brokerName", "b", "", "broker name (required)")
		c.MarkFlagRequired("brokerName")
	}, func(ctx context.Context, a *admin.Admin) (*result, error) {
		counts, err := call(a, ctx, broker)
		if err != nil && len(counts) == 0 {
			return nil, err
		}
		r := &result{value: counts, header: []string{"#NAMESRV", "#TOPICS"}}
		for _, addr := range slices.Sorted(maps.Keys(counts)) {
			r.text += fmt.Sprintf("%s write perm of broker[%s] in name server[%s] OK, %d\n", verb, broker, addr, counts[addr])
			r.rows = append(r.rows, []string{addr, strconv.Itoa(counts[addr])})
		}
		r.text = strings.TrimSuffix(r.text, "\n")
		r.header, r.rows = nil, nil
		return r, err
	})
}

func cmdWipeWritePerm(g *globalFlags, af *adminFlags) *cobra.Command {
	return writePermCommand(g, af, "wipeWritePerm", "Remove a broker's write permission on every name server", "wipe",
		(*admin.Admin).WipeWritePerm)
}

func cmdAddWritePerm(g *globalFlags, af *adminFlags) *cobra.Command {
	return writePermCommand(g, af, "addWritePerm", "Give a broker back its write permission on every name server", "add",
		(*admin.Admin).AddWritePerm)
}

// targetFlags adds mqadmin's -b brokerAddr / -c clusterName pair.
func targetFlags(c *cobra.Command, t *admin.Target, what string) {
	c.Flags().StringVarP(&t.BrokerAddr, "brokerAddr", "b", "", what+" on this broker")
	c.Flags().StringVarP(&t.Cluster, "clusterName", "c", "", what+" on every master of this cluster")
}

func cmdUpdateTopicPerm(g *globalFlags, af *adminFlags) *cobra.Command {
	var t admin.Target
	var topic string
	var perm int
	return adminCommand(g, af, "updateTopicPerm", "Change a topic's permission (2 W, 4 R, 6 RW)", func(c *cobra.Command) {
		targetFlags(c, &t, "update")
		c.Flags().StringVarP(&topic, "topic", "t", "", "topic (required)")
		c.Flags().IntVarP(&perm, "perm", "p", 0, "permission: 2 W, 4 R, 6 RW (required)")
		c.MarkFlagRequired("topic")
		c.MarkFlagRequired("perm")
	}, func(ctx context.Context, a *admin.Admin) (*result, error) {
		done, err := a.UpdateTopicPerm(ctx, topic, perm, t)
		if err != nil {
			return nil, err
		}
		r := &result{value: map[string]any{"topic": topic, "perm": perm, "brokers": done}}
		for _, addr := range done {
			r.text += fmt.Sprintf("update topic perm from %s to %d in %s success.\n", topic, perm, addr)
		}
		r.text = strings.TrimSuffix(r.text, "\n")
		return r, nil
	})
}

func cmdSetConsumeMode(g *globalFlags, af *adminFlags) *cobra.Command {
	var t admin.Target
	var topic, group, mode string
	var share int
	return adminCommand(g, af, "setConsumeMode", "Set consume message mode. pull/pop etc.", func(c *cobra.Command) {
		c.Flags().StringVarP(&t.BrokerAddr, "brokerAddr", "b", "", "set on this broker")
		c.Flags().StringVarP(&t.Cluster, "clusterName", "c", "", "set on every master of this cluster")
		c.Flags().StringVarP(&topic, "topicName", "t", "", "topic name (required)")
		c.Flags().StringVarP(&group, "groupName", "g", "", "consumer group name (required)")
		c.Flags().StringVarP(&mode, "mode", "m", "", "consume mode. PULL/POP (required)")
		c.Flags().IntVarP(&share, "popShareQueueNum", "q", 0, "num of queue which share in pop mode")
		c.MarkFlagRequired("topicName")
		c.MarkFlagRequired("groupName")
		c.MarkFlagRequired("mode")
	}, func(ctx context.Context, a *admin.Admin) (*result, error) {
		if t.BrokerAddr == "" && t.Cluster == "" {
			return nil, fmt.Errorf("setConsumeMode: give -b brokerAddr or -c clusterName")
		}
		done, err := a.SetConsumeMode(ctx, topic, group, strings.TrimSpace(mode), share, t)
		if err != nil {
			return nil, err
		}
		r := &result{value: map[string]any{"topic": topic, "group": group, "mode": mode, "popShareQueueNum": share, "brokers": done}}
		for _, addr := range done {
			r.text += fmt.Sprintf("set consume mode to %s success.\n", addr)
		}
		r.text += fmt.Sprintf("topic[%s] group[%s] consume mode[%s] popShareQueueNum[%d]", topic, group, mode, share)
		return r, nil
	})
}

func cmdUpdateOrderConf(g *globalFlags, af *adminFlags) *cobra.Command {
	var topic, conf, method string
	return adminCommand(g, af, "updateOrderConf", "Create, show or delete an ordered topic's broker:queues configuration", func(c *cobra.Command) {
		c.Flags().StringVarP(&topic, "topic", "t", "", "topic (required)")
		c.Flags().StringVarP(&conf, "orderConf", "v", "", "order conf, brokerName1:num;brokerName2:num (for put)")
		c.Flags().StringVarP(&method, "method", "m", "", "put, get or delete (required)")
		c.MarkFlagRequired("topic")
		c.MarkFlagRequired("method")
	}, func(ctx context.Context, a *admin.Admin) (*result, error) {
		switch method {
		case "get":
			v, err := a.KVConfig(ctx, orderTopicNamespace, topic)
			if err != nil {
				return nil, err
			}
			return &result{text: fmt.Sprintf("get orderConf success. topic=[%s], orderConf=[%s] ", topic, v),
				value: map[string]string{"topic": topic, "orderConf": v}}, nil
		case "put":
			if err := validOrderConf(conf); err != nil {
				return nil, err
			}
			if err := a.UpdateKVConfig(ctx, orderTopicNamespace, topic, conf); err != nil {
				return nil, err
			}
			return okText("update orderConf success. topic=[%s], orderConf=[%s]", topic, conf), nil
		case "delete":
			if err := a.DeleteKVConfig(ctx, orderTopicNamespace, topic); err != nil {
				return nil, err
			}
			return okText("delete orderConf success. topic=[%s]", topic), nil
		}
		return nil, fmt.Errorf("method %q: want put, get or delete", method)
	})
}

// validOrderConf checks brokerName:num;brokerName:num.
func validOrderConf(conf string) error {
	if conf == "" {
		return fmt.Errorf("put needs -v brokerName1:num;brokerName2:num")
	}
	for part := range strings.SplitSeq(conf, ";") {
		name, num, ok := strings.Cut(part, ":")
		if n, err := strconv.Atoi(num); !ok || name == "" || err != nil || n <= 0 {
			return fmt.Errorf("order conf %q: want brokerName:num;brokerName:num", conf)
		}
	}
	return nil
}

func cmdTopicClusterList(g *globalFlags, af *adminFlags) *cobra.Command {
	var topic string
	return adminCommand(g, af, "topicClusterList", "List the clusters a topic lives in", func(c *cobra.Command) {
		c.Flags().StringVarP(&topic, "topic", "t", "", "topic (required)")
		c.MarkFlagRequired("topic")
	}, func(ctx context.Context, a *admin.Admin) (*result, error) {
		clusters, err := a.TopicClusters(ctx, topic)
		if err != nil {
			return nil, err
		}
		return &result{value: clusters, text: strings.Join(clusters, "\n")}, nil
	})
}

func cmdAllocateMQ(g *globalFlags, af *adminFlags) *cobra.Command {
	var topic, ips string
	return adminCommand(g, af, "allocateMQ", "Show the average allocation of a topic's queues to clients", func(c *cobra.Command) {
		c.Flags().StringVarP(&topic, "topic", "t", "", "topic (required)")
		c.Flags().StringVarP(&ips, "ipList", "i", "", "client ids, comma-separated (required)")
		c.MarkFlagRequired("topic")
		c.MarkFlagRequired("ipList")
	}, func(ctx context.Context, a *admin.Admin) (*result, error) {
		list := strings.Split(ips, ",")
		alloc, err := a.AllocateMQ(ctx, topic, list)
		if err != nil {
			return nil, err
		}
		r := &result{value: map[string]any{"result": alloc}, header: []string{"#CLIENT", "#BROKER", "#QID"}}
		for _, ip := range list {
			for _, q := range alloc[ip] {
				r.rows = append(r.rows, []string{ip, q.BrokerName, strconv.Itoa(q.QueueID)})
			}
		}
		return r, nil
	})
}

func cmdCloneGroupOffset(g *globalFlags, af *adminFlags) *cobra.Command {
	var src, dest, topic string
	var offline bool
	return adminCommand(g, af, "cloneGroupOffset", "Copy a group's offsets on a topic to another group", func(c *cobra.Command) {
		c.Flags().StringVarP(&src, "srcGroup", "s", "", "source group (required)")
		c.Flags().StringVarP(&dest, "destGroup", "d", "", "destination group (required)")
		c.Flags().StringVarP(&topic, "topic", "t", "", "topic (required)")
		boolArgVarP(c, &offline, "offline", "o", false, "the group or the topic is offline")
		c.MarkFlagRequired("srcGroup")
		c.MarkFlagRequired("destGroup")
		c.MarkFlagRequired("topic")
	}, func(ctx context.Context, a *admin.Admin) (*result, error) {
		if err := a.CloneGroupOffset(ctx, src, dest, topic, offline); err != nil {
			return nil, err
		}
		return okText("clone group offset success. srcGroup[%s], destGroup=[%s], topic[%s]", src, dest, topic), nil
	})
}

// offsetRows prints reset offsets as resetOffsetByTime does.
func offsetRows(offsets map[client.MessageQueue]int64) *result {
	type row struct {
		BrokerName string `json:"brokerName"`
		QueueID    int    `json:"queueId"`
		Offset     int64  `json:"offset"`
	}
	var rows []row
	for q, off := range offsets {
		rows = append(rows, row{q.BrokerName, q.QueueID, off})
	}
	slices.SortFunc(rows, func(x, y row) int {
		if c := strings.Compare(x.BrokerName, y.BrokerName); c != 0 {
			return c
		}
		return x.QueueID - y.QueueID
	})
	r := &result{value: rows, header: []string{"#BROKER_NAME", "#QID", "#OFFSET"}}
	for _, x := range rows {
		r.rows = append(r.rows, []string{x.BrokerName, strconv.Itoa(x.QueueID), strconv.FormatInt(x.Offset, 10)})
	}
	return r
}

func cmdSkipAccumulatedMessage(g *globalFlags, af *adminFlags) *cobra.Command {
	var group, topic, cluster string
	var force bool
	return adminCommand(g, af, "skipAccumulatedMessage", "Move a group's offsets on a topic to the end", func(c *cobra.Command) {
		c.Flags().StringVarP(&group, "group", "g", "", "consumer group (required)")
		c.Flags().StringVarP(&topic, "topic", "t", "", "topic (required)")
		boolArgVarP(c, &force, "force", "f", true, "also move offsets backwards")
		c.Flags().StringVarP(&cluster, "cluster", "c", "", "cluster (the route is used)")
		c.MarkFlagRequired("group")
		c.MarkFlagRequired("topic")
	}, func(ctx context.Context, a *admin.Admin) (*result, error) {
		offsets, err := a.SkipAccumulated(ctx, topic, group, force)
		if err != nil {
			return nil, err
		}
		return offsetRows(offsets), nil
	})
}

func cmdBrokerConsumeStats(g *globalFlags, af *adminFlags) *cobra.Command {
	var broker string
	var level int64
	var order bool
	return adminCommand(g, af, "brokerConsumeStats", "Every group's progress on a broker", func(c *cobra.Command) {
		c.Flags().StringVarP(&broker, "brokerAddr", "b", "", "broker address (required)")
		c.Flags().Int64VarP(&level, "level", "l", 0, "print queues whose lag is at least this")
		boolArgVarP(c, &order, "order", "o", false, "ordered topics only")
		c.Flags().Int64P("timeoutMillis", "t", 50000, "request timeout in ms (the --timeout flag also applies)")
		c.MarkFlagRequired("brokerAddr")
	}, func(ctx context.Context, a *admin.Admin) (*result, error) {
		st, err := a.BrokerConsumeStats(ctx, broker, order)
		if err != nil {
			return nil, err
		}
		r := &result{value: st, header: []string{"#Topic", "#Group", "#Broker Name", "#QID", "#Broker Offset", "#Consumer Offset", "#Diff", "#LastTime"}}
		for _, group := range slices.Sorted(maps.Keys(st.Groups)) {
			for _, q := range st.Groups[group] {
				if q.Lag < level {
					continue
				}
				last := "-"
				if !q.LastTimestamp.IsZero() {
					last = fmtTime(q.LastTimestamp)
				}
				r.rows = append(r.rows, []string{q.Queue.Topic, group, q.Queue.BrokerName, strconv.Itoa(q.Queue.QueueID),
					strconv.FormatInt(q.BrokerOffset, 10), strconv.FormatInt(q.ConsumerOffset, 10), strconv.FormatInt(q.Lag, 10), last})
			}
		}
		r.rows = append(r.rows, []string{"", "", "", "", "", "", "", ""}, []string{"Diff Total:", strconv.FormatInt(st.TotalDiff, 10), "", "", "", "", "", ""})
		return r, nil
	})
}

func cmdGetConsumerConfig(g *globalFlags, af *adminFlags) *cobra.Command {
	var group string
	return adminCommand(g, af, "getConsumerConfig", "Show a subscription group's configuration on every broker", func(c *cobra.Command) {
		c.Flags().StringVarP(&group, "groupName", "g", "", "subscription group (required)")
		c.MarkFlagRequired("groupName")
	}, func(ctx context.Context, a *admin.Admin) (*result, error) {
		cfgs, err := a.GroupConfigs(ctx, group)
		if err != nil {
			return nil, err
		}
		r := &result{value: cfgs, header: []string{"#BROKER", "#KEY", "#VALUE"}}
		for _, addr := range slices.Sorted(maps.Keys(cfgs)) {
			var kv map[string]any
			if err := json.Unmarshal(cfgs[addr], &kv); err != nil {
				return nil, fmt.Errorf("group config from %s: %w", addr, err)
			}
			for _, k := range slices.Sorted(maps.Keys(kv)) {
				v, _ := json.Marshal(kv[k])
				r.rows = append(r.rows, []string{addr, k, strings.Trim(string(v), `"`)})
			}
		}
		return r, nil
	})
}

func maintenanceCommand(g *globalFlags, af *adminFlags, use, short string, code protocol.RequestCode) *cobra.Command {
	var t admin.Target
	return adminCommand(g, af, use, short, func(c *cobra.Command) {
		c.Flags().StringVarP(&t.BrokerAddr, "brokerAddr", "b", "", "this broker")
		c.Flags().StringVarP(&t.Cluster, "cluster", "c", "", "every master of this cluster")
	}, func(ctx context.Context, a *admin.Admin) (*result, error) {
		if t.BrokerAddr == "" && t.Cluster == "" {
			return nil, fmt.Errorf("give -b brokerAddr or -c cluster")
		}
		res, err := a.Maintenance(ctx, code, t)
		if err != nil && len(res) == 0 {
			return nil, err
		}
		r := &result{value: res}
		for _, addr := range slices.Sorted(maps.Keys(res)) {
			r.text += fmt.Sprintf("%s %s: %v\n", use, addr, res[addr])
		}
		r.text = strings.TrimSuffix(r.text, "\n")
		return r, err
	})
}

func cmdDeleteExpiredCommitLog(g *globalFlags, af *adminFlags) *cobra.Command {
	return maintenanceCommand(g, af, "deleteExpiredCommitLog", "Delete expired commit-log files now", protocol.DeleteExpiredCommitLog)
}

func cmdCleanExpiredCQ(g *globalFlags, af *adminFlags) *cobra.Command {
	return maintenanceCommand(g, af, "cleanExpiredCQ", "Clean expired consume queues now", protocol.CleanExpiredConsumeQueue)
}

func cmdCleanUnusedTopic(g *globalFlags, af *adminFlags) *cobra.Command {
	return maintenanceCommand(g, af, "cleanUnusedTopic", "Remove the consume queues of topics that no longer exist", protocol.CleanUnusedTopic)
}

// messageDetail is one message field by field, as queryMsgById prints it.
func messageDetail(m *client.MessageExt) *result {
	r := &result{value: m, header: []string{"#FIELD", "#VALUE"}}
	add := func(k, v string) { r.rows = append(r.rows, []string{k, v}) }
	add("Topic", m.Topic)
	add("Tags", m.Tag())
	add("Keys", strings.Join(m.Keys(), " "))
	add("Queue ID", strconv.Itoa(int(m.QueueID)))
	add("Queue Offset", strconv.FormatInt(m.QueueOffset, 10))
	add("CommitLog Offset", strconv.FormatInt(m.CommitLogOffset, 10))
	add("Reconsume Times", strconv.Itoa(int(m.ReconsumeTimes)))
	add("Born Timestamp", fmtTime(m.BornTime))
	add("Store Timestamp", fmtTime(m.StoreTime))
	add("Born Host", m.BornHost)
	add("Store Host", m.StoreHost)
	add("System Flag", strconv.Itoa(int(m.SysFlag)))
	add("Msg ID", m.MsgID)
	add("Offset Msg ID", m.OffsetMsgID)
	for _, k := range slices.Sorted(maps.Keys(m.Properties)) {
		add("Property "+k, m.Properties[k])
	}
	add("Body", strconv.Quote(string(m.Body)))
	return r
}

func cmdQueryMsgByOffset(g *globalFlags, af *adminFlags) *cobra.Command {
	var topic, broker string
	var queueID int
	var offset int64
	return adminCommand(g, af, "queryMsgByOffset", "Show the message at a queue offset", func(c *cobra.Command) {
		c.Flags().StringVarP(&topic, "topic", "t", "", "topic (required)")
		c.Flags().StringVarP(&broker, "brokerName", "b", "", "broker name (required)")
		c.Flags().IntVarP(&queueID, "queueId", "i", 0, "queue id (required)")
		c.Flags().Int64VarP(&offset, "offset", "o", 0, "queue offset (required)")
		c.Flags().StringP("bodyFormat", "f", "UTF-8", "body format (bodies print as quoted text)")
		for _, f := range []string{"topic", "brokerName", "queueId", "offset"} {
			c.MarkFlagRequired(f)
		}
	}, func(ctx context.Context, a *admin.Admin) (*result, error) {
		res, err := a.PullMessages(ctx, client.MessageQueue{Topic: topic, BrokerName: broker, QueueID: queueID}, offset, 1)
		if err != nil {
			return nil, err
		}
		if len(res.Messages) == 0 || res.Messages[0].QueueOffset != offset {
			return nil, fmt.Errorf("no message at %s/%s/%d offset %d (queue holds [%d, %d))", topic, broker, queueID, offset, res.MinOffset, res.MaxOffset)
		}
		return messageDetail(res.Messages[0]), nil
	})
}

// queueMessages reads queue q's messages stored in [begin, end] that match
// tags ("" or "*": all), up to limit.
func queueMessages(ctx context.Context, a *admin.Admin, q client.MessageQueue, begin, end time.Time, tags string, limit int) ([]*client.MessageExt, error) {
	var want map[string]bool
	if tags != "" && tags != "*" {
		want = map[string]bool{}
		for t := range strings.SplitSeq(tags, "||") {
			want[strings.TrimSpace(t)] = true
		}
	}
	from, err := a.OffsetByTime(ctx, q, begin)
	if err != nil {
		return nil, err
	}
	var out []*client.MessageExt
	for len(out) < limit {
		res, err := a.PullMessages(ctx, q, from, 32)
		if err != nil {
			return nil, err
		}
		if len(res.Messages) == 0 {
			break
		}
		for _, m := range res.Messages {
			if !end.IsZero() && m.StoreTime.After(end) {
				return out, nil
			}
			if want == nil || want[m.Tag()] {
				out = append(out, m)
			}
		}
		from = res.NextBeginOffset
	}
	return out, nil
}

// timeRange parses mqadmin's -b / -e (ms, now, or yyyy-MM-dd#HH:mm:ss:SSS);
// an empty begin is the epoch, an empty end is open.
func timeRange(b, e string) (time.Time, time.Time, error) {
	var begin, end time.Time
	var err error
	if b != "" {
		if begin, err = parseTimestamp(b); err != nil {
			return begin, end, err
		}
	}
	if e != "" {
		if end, err = parseTimestamp(e); err != nil {
			return begin, end, err
		}
	}
	return begin, end, nil
}

func cmdPrintMsgByQueue(g *globalFlags, af *adminFlags) *cobra.Command {
	var topic, broker, sub, b, e string
	var queueID int
	var printMsg, printBody, calculate bool
	return adminCommand(g, af, "printMsgByQueue", "Print one queue's messages in a time range, or count them by tag", func(c *cobra.Command) {
		f := c.Flags()
		f.StringVarP(&topic, "topic", "t", "", "topic (required)")
		f.StringVarP(&broker, "brokerName", "a", "", "broker name (required)")
		f.IntVarP(&queueID, "queueId", "i", 0, "queue id (required)")
		f.StringP("charsetName", "c", "UTF-8", "charset of bodies")
		f.StringVarP(&sub, "subExpression", "s", "*", "tags, TagA || TagB")
		f.StringVarP(&b, "beginTimestamp", "b", "", "begin: ms, now or yyyy-MM-dd#HH:mm:ss:SSS")
		f.StringVarP(&e, "endTimestamp", "e", "", "end: ms, now or yyyy-MM-dd#HH:mm:ss:SSS")
		boolArgVarP(c, &printMsg, "print", "p", false, "print each message")
		boolArgVarP(c, &printBody, "printBody", "d", false, "print bodies")
		boolArgVarP(c, &calculate, "calculate", "f", false, "count messages by tag")
		c.MarkFlagRequired("topic")
		c.MarkFlagRequired("brokerName")
		c.MarkFlagRequired("queueId")
	}, func(ctx context.Context, a *admin.Admin) (*result, error) {
		begin, end, err := timeRange(b, e)
		if err != nil {
			return nil, err
		}
		msgs, err := queueMessages(ctx, a, client.MessageQueue{Topic: topic, BrokerName: broker, QueueID: queueID}, begin, end, sub, 1<<20)
		if err != nil {
			return nil, err
		}
		if calculate {
			counts := map[string]int{}
			for _, m := range msgs {
				counts[m.Tag()]++
			}
			r := &result{value: counts, header: []string{"#TAG", "#COUNT"}}
			tags := slices.Sorted(maps.Keys(counts))
			slices.SortStableFunc(tags, func(x, y string) int { return counts[y] - counts[x] })
			for _, t := range tags {
				r.rows = append(r.rows, []string{t, strconv.Itoa(counts[t])})
			}
			return r, nil
		}
		return printedMessages(msgs, printMsg || printBody, printBody), nil
	})
}

// printedMessages is printMsg's output: a table of the messages, bodies
// included with printBody.
func printedMessages(msgs []*client.MessageExt, _ bool, printBody bool) *result {
	r := messageRows(msgs)
	if !printBody {
		r.header = r.header[:len(r.header)-1]
		for i := range r.rows {
			r.rows[i] = r.rows[i][:len(r.rows[i])-1]
		}
	}
	return r
}

func cmdPrintMsg(g *globalFlags, af *adminFlags) *cobra.Command {
	var topic, sub, b, e, lmqParent string
	var printBody bool
	return adminCommand(g, af, "printMsg", "Print a topic's messages in a time range", func(c *cobra.Command) {
		f := c.Flags()
		f.StringVarP(&topic, "topic", "t", "", "topic (required)")
		f.StringP("charsetName", "c", "UTF-8", "charset of bodies")
		f.StringVarP(&sub, "subExpression", "s", "*", "tags, TagA || TagB")
		f.StringVarP(&b, "beginTimestamp", "b", "", "begin: ms, now or yyyy-MM-dd#HH:mm:ss:SSS")
		f.StringVarP(&e, "endTimestamp", "e", "", "end: ms, now or yyyy-MM-dd#HH:mm:ss:SSS")
		boolArgVarP(c, &printBody, "printBody", "d", true, "print bodies")
		f.StringVarP(&lmqParent, "lmqParentTopic", "l", "", "LMQ parent topic (refused: apogee admin does not read an LMQ through its parent's route)")
		c.MarkFlagRequired("topic")
	}, func(ctx context.Context, a *admin.Admin) (*result, error) {
		if lmqParent != "" {
			return nil, fmt.Errorf("-l %s: reading an LMQ through its parent topic's route is not supported (lite topics: getLiteTopicInfo)", lmqParent)
		}
		begin, end, err := timeRange(b, e)
		if err != nil {
			return nil, err
		}
		route, err := a.TopicRoute(ctx, topic)
		if err != nil {
			return nil, err
		}
		var all []*client.MessageExt
		for _, q := range route.Queues {
			for id := range q.ReadQueues {
				msgs, err := queueMessages(ctx, a, client.MessageQueue{Topic: topic, BrokerName: q.BrokerName, QueueID: id}, begin, end, sub, 1<<20)
				if err != nil {
					return nil, err
				}
				all = append(all, msgs...)
			}
		}
		return printedMessages(all, true, printBody), nil
	})
}

func cmdQueryMsgByUniqueKey(g *globalFlags, af *adminFlags) *cobra.Command {
	var id, topic string
	var showAll bool
	return adminCommand(g, af, "queryMsgByUniqueKey", "Find a message by its UNIQ_KEY (the client message id)", func(c *cobra.Command) {
		c.Flags().StringVarP(&id, "msgId", "i", "", "message id (required)")
		c.Flags().StringVarP(&topic, "topic", "t", "", "topic (required)")
		c.Flags().BoolVarP(&showAll, "showAll", "a", false, "print every copy (at most 32)")
		c.Flags().StringP("consumerGroup", "g", "", "consumer group (with -d: consume it directly; not supported)")
		c.Flags().StringP("clientId", "d", "", "client id (with -g)")
		c.Flags().StringP("cluster", "c", "", "cluster (the route is used)")
		c.MarkFlagRequired("msgId")
		c.MarkFlagRequired("topic")
	}, func(ctx context.Context, a *admin.Admin) (*result, error) {
		msgs, err := a.QueryMessageByUniqKey(ctx, topic, id)
		if err != nil {
			return nil, err
		}
		if !showAll {
			msgs = msgs[:1]
		}
		if len(msgs) == 1 {
			return messageDetail(msgs[0]), nil
		}
		return messageRows(msgs), nil
	})
}

// probeProducer starts a producer for the send round-trip commands.
func probeProducer(af *adminFlags, group string) (*client.Producer, error) {
	p, err := client.NewProducer(group, client.WithNameServers(af.namesrv), client.WithSendTimeout(af.timeout),
		client.WithLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		return nil, err
	}
	if err := p.Start(); err != nil {
		return nil, err
	}
	return p, nil
}

// rtStats sends amount messages of size bytes with send and reports each
// round trip and the average.
func rtStats(amount, size int, send func(*client.Message) (*client.SendResult, error), topic string) (rows [][]string, avg time.Duration, failed int) {
	body := []byte(strings.Repeat("a", size))
	var total time.Duration
	ok := 0
	for i := range amount {
		start := time.Now()
		res, err := send(client.NewMessage(topic, body))
		rt := time.Since(start)
		status := "ok"
		where := ""
		if err != nil {
			status = oneLine(err).Error()
			failed++
		} else {
			where = fmt.Sprintf("%s/%d", res.Queue.BrokerName, res.Queue.QueueID)
			total += rt
			ok++
		}
		rows = append(rows, []string{strconv.Itoa(i), where, strconv.FormatInt(rt.Milliseconds(), 10), status})
	}
	if ok > 0 {
		avg = total / time.Duration(ok)
	}
	return rows, avg, failed
}

func cmdCheckMsgSendRT(g *globalFlags, af *adminFlags) *cobra.Command {
	var topic string
	var amount, size int
	return adminCommand(g, af, "checkMsgSendRT", "Send test messages to a topic and print each round trip", func(c *cobra.Command) {
		c.Flags().StringVarP(&topic, "topic", "t", "", "topic (required)")
		c.Flags().IntVarP(&amount, "amount", "a", 100, "messages to send")
		c.Flags().IntVarP(&size, "size", "s", 128, "message size in bytes")
		c.MarkFlagRequired("topic")
	}, func(ctx context.Context, _ *admin.Admin) (*result, error) {
		p, err := probeProducer(af, "PID_SMSC")
		if err != nil {
			return nil, err
		}
		defer p.Close()
		rows, avg, failed := rtStats(amount, size, func(m *client.Message) (*client.SendResult, error) { return p.Send(ctx, m) }, topic)
		r := &result{header: []string{"#No", "#Queue", "#RT(ms)", "#Status"}, rows: rows,
			value: map[string]any{"topic": topic, "amount": amount, "size": size, "avgRTMillis": float64(avg.Microseconds()) / 1000, "failed": failed}}
		r.rows = append(r.rows, []string{"Avg RT:", "", fmt.Sprintf("%.2f", float64(avg.Microseconds())/1000), fmt.Sprintf("%d failed", failed)})
		if failed == amount {
			return r, fmt.Errorf("all %d sends to %s failed", amount, topic)
		}
		return r, nil
	})
}

func cmdClusterRT(g *globalFlags, af *adminFlags) *cobra.Command {
	var cluster, machineRoom string
	var amount, size int
	var tlog bool
	return adminCommand(g, af, "clusterRT", "Send test messages to every broker of a cluster and print the round trips (-i: every interval seconds)", func(c *cobra.Command) {
		c.Flags().IntVarP(&amount, "amount", "a", 100, "messages per broker")
		c.Flags().IntVarP(&size, "size", "s", 128, "message size in bytes")
		c.Flags().StringVarP(&cluster, "cluster", "c", "", "cluster (default: every cluster)")
		boolArgVarP(c, &tlog, "print log", "p", false, "print time|machineRoom|cluster|broker|rt lines (tlog)")
		c.Flags().StringVarP(&machineRoom, "machine room", "m", "noname", "machine room shown in tlog lines")
		intervalFlag(c, 10) // without -i one round is run (mqadmin repeats every 10 s)
	}, func(ctx context.Context, a *admin.Admin) (*result, error) {
		ci, err := a.ClusterInfo(ctx)
		if err != nil {
			return nil, err
		}
		p, err := probeProducer(af, "PID_ClusterRTCommand")
		if err != nil {
			return nil, err
		}
		defer p.Close()
		r := &result{header: []string{"#Cluster Name", "#Broker Name", "#RT", "#successCount", "#failCount"}}
		type row struct {
			Cluster, Broker string
			AvgRTMillis     float64
			Success, Failed int
		}
		var rows []row
		for _, cl := range slices.Sorted(maps.Keys(ci.Clusters)) {
			if cluster != "" && cl != cluster {
				continue
			}
			for _, name := range ci.Clusters[cl] {
				// Each broker answers a send to the topic named after it
				// (brokerTopicEnable): the round trip is to that broker.
				_, avg, failed := rtStats(amount, size, func(m *client.Message) (*client.SendResult, error) {
					return p.SendToQueue(ctx, m, client.MessageQueue{Topic: name, BrokerName: name, QueueID: 0})
				}, name)
				x := row{cl, name, float64(avg.Microseconds()) / 1000, amount - failed, failed}
				rows = append(rows, x)
				r.rows = append(r.rows, []string{cl, name, fmt.Sprintf("%.2f", x.AvgRTMillis), strconv.Itoa(x.Success), strconv.Itoa(x.Failed)})
				if tlog {
					r.text += fmt.Sprintf("%s|%s|%s|%s|%.0f\n", time.Now().Format("2006-01-02 15:04:05"), machineRoom, cl, name, x.AvgRTMillis)
				}
			}
		}
		r.value = rows
		if tlog {
			r.text = strings.TrimSuffix(r.text, "\n")
			r.header, r.rows = nil, nil
		}
		return r, nil
	})
}

func cmdSendMsgStatus(g *globalFlags, af *adminFlags) *cobra.Command {
	var broker string
	var size, count int
	return adminCommand(g, af, "sendMsgStatus", "Send test messages to a broker and print each round trip", func(c *cobra.Command) {
		c.Flags().StringVarP(&broker, "brokerName", "b", "", "broker name (required)")
		c.Flags().IntVarP(&size, "messageSize", "s", 128, "message size in bytes")
		c.Flags().IntVarP(&count, "count", "c", 50, "messages to send")
		c.MarkFlagRequired("brokerName")
	}, func(ctx context.Context, _ *admin.Admin) (*result, error) {
		p, err := probeProducer(af, "PID_SMSC")
		if err != nil {
			return nil, err
		}
		defer p.Close()
		rows, avg, failed := rtStats(count, size, func(m *client.Message) (*client.SendResult, error) {
			return p.SendToQueue(ctx, m, client.MessageQueue{Topic: broker, BrokerName: broker, QueueID: 0})
		}, broker)
		r := &result{header: []string{"#No", "#Queue", "#RT(ms)", "#Status"}, rows: rows,
			value: map[string]any{"brokerName": broker, "count": count, "avgRTMillis": float64(avg.Microseconds()) / 1000, "failed": failed}}
		if failed == count {
			return r, fmt.Errorf("all %d sends to broker %s failed", count, broker)
		}
		return r, nil
	})
}
