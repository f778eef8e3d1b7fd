package main

// Broker-level `apogee admin` commands under mqadmin's names:
// getBrokerConfig, updateBrokerConfig, getConsumerStatus, queryCq,
// statsAll, plus queryCorrectionOffset, getTimerCheckPoint and
// getTimerMetrics (requests mqadmin sends from its API without a command).

import (
	"context"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/apogeemq/apogee/client"
	"github.com/apogeemq/apogee/client/admin"
	"github.com/apogeemq/apogee/internal/names"
)

func init() {
	adminCommands = append(adminCommands, cmdGetBrokerConfig, cmdUpdateBrokerConfig, cmdGetConsumerStatus,
		cmdQueryCq, cmdStatsAll, cmdQueryCorrectionOffset, cmdGetTimerCheckPoint, cmdGetTimerMetrics,
		cmdSetCommitLogReadAheadMode, cmdResetMasterFlushOffset)
}

// brokerAddrs resolves -b / -c: the one address, or every broker of the
// cluster (masters only with mastersOnly), sorted.
func brokerAddrs(ctx context.Context, a *admin.Admin, broker, cluster string, mastersOnly bool) ([]string, error) {
	switch {
	case broker != "" && cluster != "":
		return nil, fmt.Errorf("give -b brokerAddr or -c clusterName, not both")
	case broker != "":
		return []string{broker}, nil
	case cluster == "":
		return nil, fmt.Errorf("give -b brokerAddr or -c clusterName")
	}
	ci, err := a.ClusterInfo(ctx)
	if err != nil {
		return nil, err
	}
	var addrs []string
	for _, name := range ci.Clusters[cluster] {
		for id, addr := range ci.Brokers[name].Addrs {
			if id == 0 || !mastersOnly {
				addrs = append(addrs, addr)
			}
		}
	}
	if len(addrs) == 0 {
		return nil, fmt.Errorf("cluster %s has no broker", cluster)
	}
	slices.Sort(addrs)
	return addrs, nil
}

func brokerTargetFlags(c *cobra.Command, broker, cluster *string) {
	c.Flags().StringVarP(broker, "brokerAddr", "b", "", "broker address")
	c.Flags().StringVarP(cluster, "clusterName", "c", "", "every broker of this cluster")
}

func cmdGetBrokerConfig(g *globalFlags, af *adminFlags) *cobra.Command {
	var broker, cluster string
	return adminCommand(g, af, "getBrokerConfig", "Show a broker's configuration (-b addr, or every broker of -c cluster)",
		func(c *cobra.Command) { brokerTargetFlags(c, &broker, &cluster) },
		func(ctx context.Context, a *admin.Admin) (*result, error) {
			addrs, err := brokerAddrs(ctx, a, broker, cluster, false)
			if err != nil {
				return nil, err
			}
			all := map[string]map[string]string{}
			r := &result{header: []string{"#BROKER", "#KEY", "#VALUE"}}
			for _, addr := range addrs {
				kv, err := a.BrokerConfig(ctx, addr)
				if err != nil {
					return nil, err
				}
				all[addr] = kv
				for _, k := range slices.Sorted(maps.Keys(kv)) {
					r.rows = append(r.rows, []string{addr, k, kv[k]})
				}
			}
			r.value = all
			if broker != "" {
				r.value = all[broker]
			}
			return r, nil
		})
}

// cmdUpdateBrokerConfig is mqadmin's updateBrokerConfig: one broker (-b),
// or a cluster's masters (-c), slaves too when -a is given (any value, as
// mqadmin only checks that -a is present).
func cmdUpdateBrokerConfig(g *globalFlags, af *adminFlags) *cobra.Command {
	var broker, cluster, key, value, all string
	var self *cobra.Command
	return adminCommand(g, af, "updateBrokerConfig", "Change a broker.conf key at run time (written back to the broker's -c file)",
		func(c *cobra.Command) {
			self = c
			brokerTargetFlags(c, &broker, &cluster)
			c.Flags().StringVarP(&all, "updateAllBroker", "a", "", "with -c: update the slaves too (any value)")
			c.Flags().StringVarP(&key, "key", "k", "", "config key (required)")
			c.Flags().StringVarP(&value, "value", "v", "", "config value (required)")
			c.MarkFlagRequired("key")
			c.MarkFlagRequired("value")
		},
		func(ctx context.Context, a *admin.Admin) (*result, error) {
			withSlaves := self.Flags().Changed("updateAllBroker")
			addrs, err := brokerAddrs(ctx, a, broker, cluster, !withSlaves)
			if err != nil {
				return nil, err
			}
			for _, addr := range addrs {
				if err := a.UpdateBrokerConfig(ctx, addr, map[string]string{key: value}); err != nil {
					return nil, err
				}
			}
			return &result{text: fmt.Sprintf("update broker config success, %s=%s on %v", key, value, addrs),
				value: map[string]any{"ok": true, "key": key, "value": value, "brokers": addrs}}, nil
		})
}

func cmdGetConsumerStatus(g *globalFlags, af *adminFlags) *cobra.Command {
	var group, topic, clientID string
	return adminCommand(g, af, "getConsumerStatus", "Ask a group's live consumers, through the brokers, for their offsets of a topic",
		func(c *cobra.Command) {
			c.Flags().StringVarP(&group, "group", "g", "", "consumer group (required)")
			c.Flags().StringVarP(&topic, "topic", "t", "", "topic (required)")
			c.Flags().StringVarP(&clientID, "originClientId", "i", "", "only this client id")
			c.MarkFlagRequired("group")
			c.MarkFlagRequired("topic")
		},
		func(ctx context.Context, a *admin.Admin) (*result, error) {
			st, err := a.ConsumerStatus(ctx, topic, group, clientID)
			if err != nil {
				return nil, err
			}
			type row struct {
				ClientID string `json:"clientId"`
				client.MessageQueue
				Offset int64 `json:"offset"`
			}
			rows := []row{}
			for _, id := range slices.Sorted(maps.Keys(st)) {
				for _, mq := range sortedQueues(st[id]) {
					rows = append(rows, row{id, mq, st[id][mq]})
				}
			}
			r := &result{value: rows, header: []string{"#CLIENT_ID", "#TOPIC", "#BROKER", "#QID", "#OFFSET"}}
			for _, x := range rows {
				r.rows = append(r.rows, []string{x.ClientID, x.Topic, x.BrokerName, strconv.Itoa(x.QueueID), strconv.FormatInt(x.Offset, 10)})
			}
			if len(rows) == 0 {
				r.text = "no consumer of " + group + " answered"
			}
			return r, nil
		})
}

func sortedQueues[V any](m map[client.MessageQueue]V) []client.MessageQueue {
	return slices.SortedFunc(maps.Keys(m), func(x, y client.MessageQueue) int {
		if x.Topic != y.Topic {
			return strings.Compare(x.Topic, y.Topic)
		}
		if x.BrokerName != y.BrokerName {
			return strings.Compare(x.BrokerName, y.BrokerName)
		}
		return x.QueueID - y.QueueID
	})
}

func cmdQueryCq(g *globalFlags, af *adminFlags) *cobra.Command {
	var topic, broker, group string
	var queue, count int
	var index int64
	return adminCommand(g, af, "queryCq", "Show consume-queue units (commit-log offset, size, tag hash) of one queue",
		func(c *cobra.Command) {
			f := c.Flags()
			f.StringVarP(&topic, "topic", "t", "", "topic (required)")
			f.IntVarP(&queue, "queue", "q", 0, "queue id (required)")
			f.Int64VarP(&index, "index", "i", 0, "first queue offset (required)")
			f.IntVarP(&count, "count", "c", 10, "how many units")
			f.StringVarP(&broker, "broker", "b", "", "broker address (default: the topic's first master)")
			f.StringVarP(&group, "consumer", "g", "", "evaluate this group's subscription against each unit")
			c.MarkFlagRequired("topic")
			c.MarkFlagRequired("queue")
			c.MarkFlagRequired("index")
		},
		func(ctx context.Context, a *admin.Admin) (*result, error) {
			cq, err := a.QueryConsumeQueue(ctx, broker, topic, queue, index, count, group)
			if err != nil {
				return nil, err
			}
			r := &result{value: cq, header: []string{"#INDEX", "#PHYSIC_OFFSET", "#PHYSIC_SIZE", "#TAGS_CODE", "#EVAL", "#MSG"}}
			r.text = fmt.Sprintf("broker %s, queue %s-%d, min %d, max %d", cq.BrokerAddr, topic, queue, cq.MinQueueIndex, cq.MaxQueueIndex)
			if cq.Subscription != nil {
				r.text += fmt.Sprintf(", subscription %s %q", cq.Subscription.ExpressionType, cq.Subscription.Expression)
			}
			for _, u := range cq.Units {
				r.rows = append(r.rows, []string{strconv.FormatInt(u.Index, 10), strconv.FormatInt(u.PhysicOffset, 10),
					strconv.Itoa(int(u.PhysicSize)), strconv.FormatInt(u.TagsCode, 10), strconv.FormatBool(u.Eval), u.Msg})
			}
			return r, nil
		})
}

// statsAllRow is one line of statsAll.
type statsAllRow struct {
	Topic        string  `json:"topic"`
	Group        string  `json:"group,omitempty"`
	Accumulation int64   `json:"accumulation"`
	InTPS        float64 `json:"inTps"`
	OutTPS       float64 `json:"outTps"`
	InMsg24Hour  int64   `json:"inMsg24Hour"`
	OutMsg24Hour int64   `json:"outMsg24Hour"`
}

func cmdStatsAll(g *globalFlags, af *adminFlags) *cobra.Command {
	var topic string
	var active bool
	return adminCommand(g, af, "statsAll", "Topic and group throughput over the last minute and day (VIEW_BROKER_STATS_DATA)",
		func(c *cobra.Command) {
			c.Flags().StringVarP(&topic, "topic", "t", "", "only this topic")
			c.Flags().BoolVarP(&active, "activeTopic", "a", false, "only topics with messages in the last 24 hours")
		},
		func(ctx context.Context, a *admin.Admin) (*result, error) {
			topics := []string{topic}
			if topic == "" {
				all, err := a.Topics(ctx)
				if err != nil {
					return nil, err
				}
				topics = all
			}
			rows := []statsAllRow{}
			for _, t := range topics {
				if names.IsRetryTopic(t) || names.IsDLQTopic(t) {
					continue // as mqadmin: their groups show under the real topics
				}
				rs, err := statsOfTopic(ctx, a, t)
				if err != nil {
					if topic != "" {
						return nil, err
					}
					continue // system topics without route, deleted topics
				}
				for _, r := range rs {
					if !active || r.InMsg24Hour > 0 || r.OutMsg24Hour > 0 {
						rows = append(rows, r)
					}
				}
			}
			r := &result{value: rows, header: []string{"#Topic", "#Consumer Group", "#Accumulation", "#InTPS", "#OutTPS", "#InMsg24Hour", "#OutMsg24Hour"}}
			for _, x := range rows {
				group := x.Group
				if group == "" {
					group = "-"
				}
				r.rows = append(r.rows, []string{x.Topic, group, strconv.FormatInt(x.Accumulation, 10),
					strconv.FormatFloat(x.InTPS, 'f', 2, 64), strconv.FormatFloat(x.OutTPS, 'f', 2, 64),
					strconv.FormatInt(x.InMsg24Hour, 10), strconv.FormatInt(x.OutMsg24Hour, 10)})
			}
			return r, nil
		})
}

// statsOfTopic is statsAll for one topic: the put rate summed over its
// masters, then one row per consuming group (or one row without a group).
func statsOfTopic(ctx context.Context, a *admin.Admin, topic string) ([]statsAllRow, error) {
	route, err := a.TopicRoute(ctx, topic)
	if err != nil {
		return nil, err
	}
	var masters []string
	for _, b := range route.Brokers {
		if addr := b.MasterAddr(); addr != "" {
			masters = append(masters, addr)
		}
	}
	slices.Sort(masters)
	var in statsAllRow
	in.Topic = topic
	for _, addr := range masters {
		d, err := a.BrokerStatsData(ctx, addr, admin.StatsTopicPutNums, topic)
		if err != nil {
			continue // topic not on this broker
		}
		in.InTPS += d.Minute.TPS
		in.InMsg24Hour += d.Day.Sum
	}
	groups, err := a.TopicConsumers(ctx, topic)
	if err != nil || len(groups) == 0 {
		return []statsAllRow{in}, nil
	}
	var out []statsAllRow
	for _, grp := range groups {
		r := in
		r.Group = grp
		for _, addr := range masters {
			if d, err := a.BrokerStatsData(ctx, addr, admin.StatsGroupGetNums, topic+"@"+grp); err == nil {
				r.OutTPS += d.Minute.TPS
				r.OutMsg24Hour += d.Day.Sum
			}
		}
		if p, err := a.ConsumerProgress(ctx, grp, topic); err == nil {
			r.Accumulation = p.TotalLag
		}
		out = append(out, r)
	}
	return out, nil
}

func cmdQueryCorrectionOffset(g *globalFlags, af *adminFlags) *cobra.Command {
	var topic, group string
	var filter []string
	return adminCommand(g, af, "queryCorrectionOffset", "Per queue, the smallest offset any other group committed (QUERY_CORRECTION_OFFSET)",
		func(c *cobra.Command) {
			c.Flags().StringVarP(&topic, "topic", "t", "", "topic (required)")
			c.Flags().StringVarP(&group, "compareGroup", "g", "", "group to compare with (required)")
			c.Flags().StringSliceVarP(&filter, "filterGroups", "f", nil, "groups to leave out, comma separated")
			c.MarkFlagRequired("topic")
			c.MarkFlagRequired("compareGroup")
		},
		func(ctx context.Context, a *admin.Admin) (*result, error) {
			m, err := a.QueryCorrectionOffset(ctx, topic, group, filter)
			if err != nil {
				return nil, err
			}
			type row struct {
				client.MessageQueue
				Offset int64 `json:"offset"`
			}
			rows := []row{}
			r := &result{header: []string{"#TOPIC", "#BROKER", "#QID", "#CORRECTION_OFFSET"}}
			for _, mq := range sortedQueues(m) {
				rows = append(rows, row{mq, m[mq]})
				off := strconv.FormatInt(m[mq], 10)
				if m[mq] == math.MaxInt64 {
					off = "none (" + group + " is behind)"
				}
				r.rows = append(r.rows, []string{mq.Topic, mq.BrokerName, strconv.Itoa(mq.QueueID), off})
			}
			r.value = rows
			return r, nil
		})
}

func cmdGetTimerCheckPoint(g *globalFlags, af *adminFlags) *cobra.Command {
	var broker, cluster string
	return adminCommand(g, af, "getTimerCheckPoint", "Show the timer wheel's progress on each master (-b addr or -c cluster)",
		func(c *cobra.Command) { brokerTargetFlags(c, &broker, &cluster) },
		func(ctx context.Context, a *admin.Admin) (*result, error) {
			addrs, err := brokerAddrs(ctx, a, broker, cluster, true)
			if err != nil {
				return nil, err
			}
			all := map[string]*admin.TimerCheckpoint{}
			r := &result{header: []string{"#BROKER", "#LAST_READ_TIME", "#LOG_FLUSH_POS", "#QUEUE_OFFSET", "#MASTER_QUEUE_OFFSET"}}
			for _, addr := range addrs {
				cp, err := a.TimerCheckpoint(ctx, addr)
				if err != nil {
					return nil, err
				}
				all[addr] = cp
				r.rows = append(r.rows, []string{addr, fmtTime(cp.LastReadTime), strconv.FormatInt(cp.LastTimerLogFlushPos, 10),
					strconv.FormatInt(cp.LastTimerQueueOffset, 10), strconv.FormatInt(cp.MasterTimerQueueOffset, 10)})
			}
			r.value = all
			return r, nil
		})
}

func cmdGetTimerMetrics(g *globalFlags, af *adminFlags) *cobra.Command {
	var broker, cluster string
	return adminCommand(g, af, "getTimerMetrics", "Show how many timer messages wait per topic on each master (-b addr or -c cluster)",
		func(c *cobra.Command) { brokerTargetFlags(c, &broker, &cluster) },
		func(ctx context.Context, a *admin.Admin) (*result, error) {
			addrs, err := brokerAddrs(ctx, a, broker, cluster, true)
			if err != nil {
				return nil, err
			}
			all := map[string]map[string]admin.TimerMetric{}
			r := &result{header: []string{"#BROKER", "#TOPIC", "#TIMING_COUNT"}}
			for _, addr := range addrs {
				m, err := a.TimerMetrics(ctx, addr)
				if err != nil {
					return nil, err
				}
				all[addr] = m
				for _, t := range slices.Sorted(maps.Keys(m)) {
					r.rows = append(r.rows, []string{addr, t, strconv.FormatInt(m[t].Count, 10)})
				}
			}
			r.value = all
			return r, nil
		})
}

// cmdSetCommitLogReadAheadMode is mqadmin's setCommitLogReadAheadMode. It
// sends SET_COMMITLOG_READ_MODE, which RocketMQ brokers serve; an Apogee
// broker answers REQUEST_CODE_NOT_SUPPORTED (its store manages the
// mappings' advice itself), which is reported as the error.
func cmdSetCommitLogReadAheadMode(g *globalFlags, af *adminFlags) *cobra.Command {
	var broker, cluster, mode string
	return adminCommand(g, af, "setCommitLogReadAheadMode",
		"Set the read-ahead mode of every commit-log file (RocketMQ brokers; Apogee brokers answer REQUEST_CODE_NOT_SUPPORTED)",
		func(c *cobra.Command) {
			brokerTargetFlags(c, &broker, &cluster)
			c.Flags().StringVarP(&mode, "commitLogReadAheadMode", "m", "", "0: normal read-ahead (default), 1: random reads (required)")
			c.MarkFlagRequired("commitLogReadAheadMode")
		},
		func(ctx context.Context, a *admin.Admin) (*result, error) {
			m, err := strconv.Atoi(strings.TrimSpace(mode))
			if err != nil || (m != admin.ReadAheadNormal && m != admin.ReadAheadRandom) {
				return nil, fmt.Errorf("set the read mode error; 0 is default, 1 random read (got -m %q)", mode)
			}
			addrs, err := brokerAddrs(ctx, a, broker, cluster, false)
			if err != nil {
				return nil, err
			}
			r := &result{header: []string{"#BROKER", "#RESULT"}}
			done := map[string]string{}
			for _, addr := range addrs {
				remark, err := a.SetCommitLogReadAheadMode(ctx, addr, m)
				if err != nil {
					return nil, fmt.Errorf("broker %s: %w", addr, err)
				}
				done[addr] = remark
				r.rows = append(r.rows, []string{addr, remark})
			}
			r.value = map[string]any{"mode": m, "brokers": done}
			return r, nil
		})
}

// cmdResetMasterFlushOffset is mqadmin's resetMasterFlushOffset. It sends
// RESET_MASTER_FLUSH_OFFSET, which RocketMQ slaves serve; an Apogee broker
// answers REQUEST_CODE_NOT_SUPPORTED (a slave takes its master's flushed
// offset from replication), which is reported as the error.
func cmdResetMasterFlushOffset(g *globalFlags, af *adminFlags) *cobra.Command {
	var broker string
	var offset int64
	return adminCommand(g, af, "resetMasterFlushOffset",
		"Reset a slave's master flush offset (RocketMQ brokers; Apogee brokers answer REQUEST_CODE_NOT_SUPPORTED)",
		func(c *cobra.Command) {
			c.Flags().StringVarP(&broker, "brokerAddr", "b", "", "slave broker address (required)")
			c.Flags().Int64VarP(&offset, "offset", "o", 0, "the master flush offset (required)")
			c.MarkFlagRequired("brokerAddr")
			c.MarkFlagRequired("offset")
		},
		func(ctx context.Context, a *admin.Admin) (*result, error) {
			if err := a.ResetMasterFlushOffset(ctx, strings.TrimSpace(broker), offset); err != nil {
				return nil, err
			}
			return okText("reset master flush offset to %d success", offset), nil
		})
}
