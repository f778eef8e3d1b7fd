package main

import (
	"cmp"
	"context"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/apogeemq/apogee/client/admin"
	"github.com/apogeemq/apogee/internal/protocol"
)

// Lite topic commands (RocketMQ 5.5): getBrokerLiteInfo, getParentTopicInfo,
// getLiteTopicInfo, each over -b broker or every master of -c cluster;
// getLiteClientInfo, getLiteGroupInfo, triggerLiteDispatch over the brokers
// of the parent's route, with mqadmin's options.

func cmdGetBrokerLiteInfo(g *globalFlags, af *adminFlags) *cobra.Command {
	var broker, cluster string
	return adminCommand(g, af, "getBrokerLiteInfo", "Show a broker's lite topic count, quota and count per LITE parent",
		func(c *cobra.Command) { brokerTargetFlags(c, &broker, &cluster) },
		func(ctx context.Context, a *admin.Admin) (*result, error) {
			addrs, err := brokerAddrs(ctx, a, broker, cluster, true)
			if err != nil {
				return nil, err
			}
			r := &result{header: []string{"#BROKER", "#PARENT", "#LITE_TOPICS", "#TOTAL", "#MAX"}}
			all := map[string]any{}
			for _, addr := range addrs {
				info, err := a.BrokerLiteInfo(ctx, addr)
				if err != nil {
					return nil, err
				}
				all[addr] = info
				total, maxN := strconv.Itoa(info.CurrentLmqNum), strconv.Itoa(info.MaxLmqNum)
				if len(info.TopicMeta) == 0 {
					r.rows = append(r.rows, []string{addr, "-", "0", total, maxN})
				}
				for _, p := range slices.Sorted(maps.Keys(info.TopicMeta)) {
					r.rows = append(r.rows, []string{addr, p, strconv.Itoa(info.TopicMeta[p]), total, maxN})
				}
			}
			r.value = all
			return r, nil
		})
}

func cmdGetParentTopicInfo(g *globalFlags, af *adminFlags) *cobra.Command {
	var broker, cluster, topic string
	return adminCommand(g, af, "getParentTopicInfo", "List a LITE parent topic's lite topics (count, TTL, first 1000 names) per broker",
		func(c *cobra.Command) {
			brokerTargetFlags(c, &broker, &cluster)
			c.Flags().StringVarP(&topic, "topic", "t", "", "LITE parent topic (required)")
			c.MarkFlagRequired("topic")
		},
		func(ctx context.Context, a *admin.Admin) (*result, error) {
			addrs, err := brokerAddrs(ctx, a, broker, cluster, true)
			if err != nil {
				return nil, err
			}
			r := &result{header: []string{"#BROKER", "#TOPIC", "#TTL_MIN", "#LITE_TOPICS", "#NAMES"}}
			all := map[string]any{}
			for _, addr := range addrs {
				info, err := a.ParentTopicInfo(ctx, addr, topic)
				if err != nil {
					return nil, err
				}
				all[addr] = info
				r.rows = append(r.rows, []string{addr, info.Topic, strconv.Itoa(info.TTL), strconv.Itoa(info.LiteTopicCount),
					strings.Join(info.LiteTopics, ",")})
			}
			r.value = all
			return r, nil
		})
}

func cmdGetLiteTopicInfo(g *globalFlags, af *adminFlags) *cobra.Command {
	var broker, cluster, topic, liteTopic string
	return adminCommand(g, af, "getLiteTopicInfo", "Describe one lite topic: its queue's offsets and last write, per broker",
		func(c *cobra.Command) {
			brokerTargetFlags(c, &broker, &cluster)
			c.Flags().StringVarP(&topic, "parentTopic", "p", "", "LITE parent topic (required)")
			c.Flags().StringVarP(&liteTopic, "liteTopic", "l", "", "lite topic (required)")
			c.MarkFlagRequired("parentTopic")
			c.MarkFlagRequired("liteTopic")
		},
		func(ctx context.Context, a *admin.Admin) (*result, error) {
			addrs, err := brokerAddrs(ctx, a, broker, cluster, true)
			if err != nil {
				return nil, err
			}
			r := &result{header: []string{"#BROKER", "#PARENT", "#LITE_TOPIC", "#MIN_OFFSET", "#MAX_OFFSET", "#LAST_WRITE"}}
			all := map[string]any{}
			for _, addr := range addrs {
				info, err := a.LiteTopicInfo(ctx, addr, topic, liteTopic)
				if err != nil {
					return nil, err
				}
				all[addr] = info
				r.rows = append(r.rows, []string{addr, info.ParentTopic, info.LiteTopic,
					strconv.FormatInt(info.TopicOffset.MinOffset, 10), strconv.FormatInt(info.TopicOffset.MaxOffset, 10),
					time.UnixMilli(info.TopicOffset.LastUpdateTimestamp).UTC().Format(time.RFC3339Nano)})
			}
			r.value = all
			return r, nil
		})
}

// liteRouteBrokers returns the brokers (name, master address) of a LITE
// parent's route, sorted by name, as mqadmin's lite commands walk them.
func liteRouteBrokers(ctx context.Context, a *admin.Admin, parent string) ([][2]string, error) {
	rt, err := a.TopicRoute(ctx, parent)
	if err != nil {
		return nil, err
	}
	var out [][2]string
	for _, b := range rt.Brokers {
		if addr := b.MasterAddr(); addr != "" {
			out = append(out, [2]string{b.Name, addr})
		}
	}
	return out, nil
}

func liteTime(ms int64) string {
	if ms <= 0 {
		return "N/A"
	}
	return time.UnixMilli(ms).UTC().Format(time.RFC3339Nano)
}

// liteParentGroupFlags defines the -p parentTopic and -g group flags, both
// required, that every lite admin command takes.
func liteParentGroupFlags(c *cobra.Command, parent, group *string) {
	c.Flags().StringVarP(parent, "parentTopic", "p", "", "LITE parent topic (required)")
	c.Flags().StringVarP(group, "group", "g", "", "consumer group (required)")
	c.MarkFlagRequired("parentTopic")
	c.MarkFlagRequired("group")
}

// cmdGetLiteClientInfo is mqadmin getLiteClientInfo: -p parent, -g group,
// -c client id, -s to list the lite topics.
func cmdGetLiteClientInfo(g *globalFlags, af *adminFlags) *cobra.Command {
	var parent, group, clientID string
	var detail bool
	return adminCommand(g, af, "getLiteClientInfo", "Show a lite client's subscription count and last pops per broker of the parent",
		func(c *cobra.Command) {
			liteParentGroupFlags(c, &parent, &group)
			c.Flags().StringVarP(&clientID, "clientId", "c", "", "client id (required)")
			c.Flags().BoolVarP(&detail, "showDetail", "s", false, "list the subscribed lite topics")
			c.MarkFlagRequired("clientId")
		},
		func(ctx context.Context, a *admin.Admin) (*result, error) {
			brokers, err := liteRouteBrokers(ctx, a, parent)
			if err != nil {
				return nil, err
			}
			r := &result{header: []string{"#Broker", "#LiteTopicCount", "#LastAccessTime", "#LastConsumeTime"}}
			if detail {
				r.header = append(r.header, "#LiteTopics")
			}
			all := map[string]any{}
			for _, b := range brokers {
				info, err := a.LiteClientInfo(ctx, b[1], parent, group, clientID, 0)
				if err != nil {
					r.rows = append(r.rows, []string{b[0], "error: " + err.Error(), "", ""})
					continue
				}
				all[b[0]] = info
				count := "N/A"
				if info.LiteTopicCount > 0 {
					count = strconv.Itoa(info.LiteTopicCount)
				}
				row := []string{b[0], count, liteTime(info.LastAccessTime), liteTime(info.LastConsumeTime)}
				if detail {
					row = append(row, strings.Join(info.LiteTopicSet, ","))
				}
				r.rows = append(r.rows, row)
			}
			r.value = all
			return r, nil
		})
}

// cmdGetLiteGroupInfo is mqadmin getLiteGroupInfo: -p parent, -g group,
// -l one lite topic's offsets, -k topK (default 20) per broker.
func cmdGetLiteGroupInfo(g *globalFlags, af *adminFlags) *cobra.Command {
	var parent, group, liteTopic string
	var topK int
	return adminCommand(g, af, "getLiteGroupInfo", "Show a lite group's lag: total and topK lite topics, or one lite topic's offsets",
		func(c *cobra.Command) {
			liteParentGroupFlags(c, &parent, &group)
			c.Flags().StringVarP(&liteTopic, "liteTopic", "l", "", "one lite topic's detail")
			c.Flags().IntVarP(&topK, "topK", "k", 20, "topK of each broker")
		},
		func(ctx context.Context, a *admin.Admin) (*result, error) {
			brokers, err := liteRouteBrokers(ctx, a, parent)
			if err != nil {
				return nil, err
			}
			all := map[string]any{}
			total, earliest := int64(0), int64(-1)
			var byCount, byTime []protocol.LiteLagInfo
			r := &result{}
			if liteTopic != "" {
				r.header = []string{"#Broker Name", "#BrokerOffset", "#ConsumeOffset", "#LagCount", "#LastUpdate"}
			} else {
				r.header = []string{"#Order", "#NO", "#Lite Topic", "#Lag Count", "#UnconsumedTimestamp"}
			}
			for _, b := range brokers {
				info, err := a.LiteGroupInfo(ctx, b[1], group, liteTopic, topK)
				if err != nil {
					if liteTopic != "" {
						r.rows = append(r.rows, []string{b[0], "error: " + err.Error(), "", "", ""})
					}
					continue
				}
				all[b[0]] = info
				total += max(info.TotalLagCount, 0)
				if ts := info.EarliestUnconsumedTimestamp; ts > 0 && (earliest < 0 || ts < earliest) {
					earliest = ts
				}
				if liteTopic != "" {
					w := info.LiteTopicOffsetWrapper
					if w == nil {
						r.rows = append(r.rows, []string{b[0], "-", "-", "-", "-"})
						continue
					}
					r.rows = append(r.rows, []string{b[0], strconv.FormatInt(w.BrokerOffset, 10), strconv.FormatInt(w.ConsumerOffset, 10),
						strconv.FormatInt(w.BrokerOffset-w.ConsumerOffset, 10), liteTime(w.LastTimestamp)})
				}
				byCount = append(byCount, info.LagCountTopK...)
				byTime = append(byTime, info.LagTimestampTopK...)
			}
			if liteTopic == "" {
				slices.SortStableFunc(byCount, func(x, y protocol.LiteLagInfo) int { return cmp.Compare(y.LagCount, x.LagCount) })
				slices.SortStableFunc(byTime, func(x, y protocol.LiteLagInfo) int {
					return cmp.Compare(x.EarliestUnconsumedTimestamp, y.EarliestUnconsumedTimestamp)
				})
				for i, l := range byCount {
					r.rows = append(r.rows, []string{"lagCount", strconv.Itoa(i + 1), l.LiteTopic, strconv.FormatInt(l.LagCount, 10), liteTime(l.EarliestUnconsumedTimestamp)})
				}
				for i, l := range byTime {
					r.rows = append(r.rows, []string{"lagTime", strconv.Itoa(i + 1), l.LiteTopic, strconv.FormatInt(l.LagCount, 10), liteTime(l.EarliestUnconsumedTimestamp)})
				}
			}
			r.text = "Lite Group Info: [" + group + "] [" + parent + "]\nTotal Lag Count: " + strconv.FormatInt(total, 10)
			if liteTopic == "" {
				r.text += "\nMin Unconsumed Timestamp: " + strconv.FormatInt(earliest, 10)
			}
			r.value = map[string]any{"brokers": all, "totalLagCount": total, "earliestUnconsumedTimestamp": earliest}
			return r, nil
		})
}

// cmdTriggerLiteDispatch is mqadmin triggerLiteDispatch: -p parent, -g
// group, optional -c client id and -b broker name.
func cmdTriggerLiteDispatch(g *globalFlags, af *adminFlags) *cobra.Command {
	var parent, group, clientID, brokerName string
	return adminCommand(g, af, "triggerLiteDispatch", "Queue a lite group's (or one client's) backlog again on the parent's brokers",
		func(c *cobra.Command) {
			liteParentGroupFlags(c, &parent, &group)
			c.Flags().StringVarP(&clientID, "clientId", "c", "", "client id (default: every client of the group)")
			c.Flags().StringVarP(&brokerName, "brokerName", "b", "", "only this broker")
		},
		func(ctx context.Context, a *admin.Admin) (*result, error) {
			brokers, err := liteRouteBrokers(ctx, a, parent)
			if err != nil {
				return nil, err
			}
			r := &result{header: []string{"#Broker", "#Result"}}
			all := map[string]string{}
			for _, b := range brokers {
				if brokerName != "" && b[0] != brokerName {
					continue
				}
				res := "dispatched"
				if err := a.TriggerLiteDispatch(ctx, b[1], group, clientID); err != nil {
					res = "error: " + err.Error()
				}
				all[b[0]] = res
				r.rows = append(r.rows, []string{b[0], res})
			}
			r.value = all
			return r, nil
		})
}
