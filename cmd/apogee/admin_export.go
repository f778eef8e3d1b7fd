package main

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/apogeemq/apogee/client/admin"
	"github.com/apogeemq/apogee/internal/message"
	"github.com/apogeemq/apogee/internal/names"
	"github.com/apogeemq/apogee/internal/protocol"
)

// mqadmin's export*, consumer, consumerStatus, producer,
// updateSubGroupList and DecodeMessageId.

func init() {
	adminCommands = append(adminCommands, cmdExportConfigs, cmdExportMetadata, cmdExportMetrics,
		cmdUpdateSubGroupList, cmdConsumer, cmdConsumerStatus, cmdProducer, cmdDecodeMessageID, cmdResetOffsetByTimeOld)
}

// defaultExportDir is mqadmin's default -f of the export commands.
const defaultExportDir = "/tmp/rocketmq/export"

// writeExport writes v as indented JSON to dir/name (creating dir) and
// returns mqadmin's confirmation line.
func writeExport(dir, name string, v any) (*result, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	b, err := json.MarshalIndent(v, "", "\t")
	if err != nil {
		return nil, err
	}
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, append(b, '\n'), 0o644); err != nil {
		return nil, err
	}
	return &result{value: map[string]any{"ok": true, "path": path}, text: fmt.Sprintf("export %s success", path)}, nil
}

// masterAddrs returns the master address of every broker of cluster, by
// broker name, and how many slaves they have.
func masterAddrs(ctx context.Context, a *admin.Admin, cluster string) (map[string]string, int, error) {
	ci, err := a.ClusterInfo(ctx)
	if err != nil {
		return nil, 0, err
	}
	brokers, ok := ci.Clusters[cluster]
	if !ok {
		return nil, 0, fmt.Errorf("cluster %s not found", cluster)
	}
	out := map[string]string{}
	slaves := 0
	for _, name := range brokers {
		b := ci.Brokers[name]
		if addr := b.MasterAddr(); addr != "" {
			out[name] = addr
			slaves += len(b.Addrs) - 1
		}
	}
	return out, slaves, nil
}

// exportedBrokerKeys are the broker.conf keys exportConfigs keeps, as
// mqadmin does.
var exportedBrokerKeys = []string{"brokerClusterName", "brokerId", "brokerName", "brokerRole", "fileReservedTime",
	"filterServerNums", "flushDiskType", "maxMessageSize", "messageDelayLevel", "msgTraceTopicName",
	"slaveReadEnable", "traceOn", "traceTopicEnable", "useTLS", "autoCreateTopicEnable", "autoCreateSubscriptionGroup"}

func cmdExportConfigs(g *globalFlags, af *adminFlags) *cobra.Command {
	var cluster, dir string
	return adminCommand(g, af, "exportConfigs", "Export the name servers' count and every master's main broker.conf keys to configs.json",
		func(c *cobra.Command) {
			c.Flags().StringVarP(&cluster, "clusterName", "c", "", "cluster to export (required)")
			c.Flags().StringVarP(&dir, "filePath", "f", defaultExportDir, "directory of configs.json")
			c.MarkFlagRequired("clusterName")
		},
		func(ctx context.Context, a *admin.Admin) (*result, error) {
			masters, slaves, err := masterAddrs(ctx, a, cluster)
			if err != nil {
				return nil, err
			}
			configs := map[string]map[string]string{}
			for name, addr := range masters {
				conf, err := a.BrokerConfig(ctx, addr)
				if err != nil {
					return nil, err
				}
				kept := map[string]string{}
				for _, k := range exportedBrokerKeys {
					if v, ok := conf[k]; ok {
						kept[k] = v
					}
				}
				if n := conf["brokerName"]; n != "" {
					name = n
				}
				configs[name] = kept
			}
			return writeExport(dir, "configs.json", map[string]any{
				"brokerConfigs": configs,
				"clusterScale": map[string]int{
					"namesrvSize":      len(splitList(strings.ReplaceAll(af.namesrv, ";", ","))),
					"masterBrokerSize": len(masters),
					"slaveBrokerSize":  slaves,
				},
			})
		})
}

// userTopics drops the broker's own topics from a topic table, and the
// retry and dead-letter topics unless special, as mqadmin's
// getUserTopicConfig does (the cluster's and brokers' own names are
// system topics too).
func userTopics(table map[string]json.RawMessage, special bool, own map[string]bool) {
	for t := range table {
		retryOrDLQ := names.IsRetryTopic(t) || strings.HasPrefix(t, names.DLQGroupTopicPrefix)
		if names.IsSystemTopic(t) || own[t] || (retryOrDLQ && !special) {
			delete(table, t)
		}
	}
}

// userGroups drops the system groups, as mqadmin's getUserSubscriptionGroup.
func userGroups(table map[string]json.RawMessage) {
	for g := range table {
		if names.IsSystemGroup(g) {
			delete(table, g)
		}
	}
}

// ownNames are the cluster's and its brokers' names, which brokers create
// as topics of their own.
func ownNames(ctx context.Context, a *admin.Admin) (map[string]bool, error) {
	ci, err := a.ClusterInfo(ctx)
	if err != nil {
		return nil, err
	}
	own := map[string]bool{}
	for c, brokers := range ci.Clusters {
		own[c] = true
		for _, b := range brokers {
			own[b] = true
		}
	}
	return own, nil
}

// addNumber adds src[key] to dst[key] where both are JSON numbers.
func addNumber(dst, src map[string]any, key string) {
	x, ok1 := dst[key].(float64)
	y, ok2 := src[key].(float64)
	if ok1 && ok2 {
		dst[key] = x + y
	}
}

func decodeObjects(table map[string]json.RawMessage) (map[string]map[string]any, error) {
	out := make(map[string]map[string]any, len(table))
	for k, raw := range table {
		var m map[string]any
		if err := json.Unmarshal(raw, &m); err != nil {
			return nil, fmt.Errorf("%s: %w", k, err)
		}
		out[k] = m
	}
	return out, nil
}

func cmdExportMetadata(g *globalFlags, af *adminFlags) *cobra.Command {
	var cluster, broker, dir string
	var topicOnly, groupOnly, special bool
	return adminCommand(g, af, "exportMetadata", "Export topics and consumer groups of a cluster (-c) or broker (-b) to JSON",
		func(c *cobra.Command) {
			f := c.Flags()
			f.StringVarP(&cluster, "clusterName", "c", "", "cluster to export (queue counts summed over its masters)")
			f.StringVarP(&broker, "brokerAddr", "b", "", "broker to export (with -t or -g)")
			f.StringVarP(&dir, "filePath", "f", defaultExportDir, "directory of the JSON file")
			f.BoolVarP(&topicOnly, "topic", "t", false, "only topics (topic.json)")
			f.BoolVarP(&groupOnly, "subscriptionGroup", "g", false, "only consumer groups (subscriptionGroup.json)")
			f.BoolVarP(&special, "specialTopic", "s", false, "keep the retry and dead-letter topics")
		},
		func(ctx context.Context, a *admin.Admin) (*result, error) {
			own, err := ownNames(ctx, a)
			if err != nil {
				return nil, err
			}
			if broker != "" {
				switch {
				case topicOnly:
					topics, err := a.TopicConfigTable(ctx, broker)
					if err != nil {
						return nil, err
					}
					userTopics(topics, special, own)
					return writeExport(dir, "topic.json", map[string]any{"topicConfigTable": topics})
				case groupOnly:
					groups, err := a.GroupConfigTable(ctx, broker)
					if err != nil {
						return nil, err
					}
					userGroups(groups)
					return writeExport(dir, "subscriptionGroup.json", map[string]any{"subscriptionGroupTable": groups})
				}
				return nil, fmt.Errorf("with -b give -t (topics) or -g (consumer groups)")
			}
			if cluster == "" {
				return nil, fmt.Errorf("give -c clusterName or -b brokerAddr")
			}
			masters, _, err := masterAddrs(ctx, a, cluster)
			if err != nil {
				return nil, err
			}
			topics, groups := map[string]map[string]any{}, map[string]map[string]any{}
			for _, name := range slices.Sorted(maps.Keys(masters)) {
				addr := masters[name]
				tt, err := a.TopicConfigTable(ctx, addr)
				if err != nil {
					return nil, err
				}
				userTopics(tt, special, own)
				gt, err := a.GroupConfigTable(ctx, addr)
				if err != nil {
					return nil, err
				}
				userGroups(gt)
				td, err := decodeObjects(tt)
				if err != nil {
					return nil, err
				}
				gd, err := decodeObjects(gt)
				if err != nil {
					return nil, err
				}
				// Queue counts add up over the masters, as mqadmin reports
				// a topic's cluster-wide size.
				for t, tc := range td {
					if prev, ok := topics[t]; ok {
						addNumber(tc, prev, "readQueueNums")
						addNumber(tc, prev, "writeQueueNums")
					}
					topics[t] = tc
				}
				for gname, gc := range gd {
					if prev, ok := groups[gname]; ok {
						addNumber(gc, prev, "retryQueueNums")
					}
					groups[gname] = gc
				}
			}
			out := map[string]any{"exportTime": time.Now().UnixMilli()}
			file := "metadata.json"
			switch {
			case topicOnly:
				out["topicConfigTable"], file = topics, "topic.json"
			case groupOnly:
				out["subscriptionGroupTable"], file = groups, "subscriptionGroup.json"
			default:
				out["topicConfigTable"], out["subscriptionGroupTable"] = topics, groups
			}
			return writeExport(dir, file, out)
		})
}

// firstFloat parses the first field of a runtime-info value such as
// putTps ("12.5 11.0 10.2"), 0 when absent.
func firstFloat(s string) float64 {
	f := strings.Fields(s)
	if len(f) == 0 {
		return 0
	}
	v, _ := strconv.ParseFloat(f[0], 64)
	return v
}

func parseInt(s string) int64 {
	v, _ := strconv.ParseInt(strings.TrimSpace(s), 10, 64)
	return v
}

func cmdExportMetrics(g *globalFlags, af *adminFlags) *cobra.Command {
	var cluster, dir string
	return adminCommand(g, af, "exportMetrics", "Export each master's load, quotas and client versions to metrics.json",
		func(c *cobra.Command) {
			c.Flags().StringVarP(&cluster, "clusterName", "c", "", "cluster to export (required)")
			c.Flags().StringVarP(&dir, "filePath", "f", defaultExportDir, "directory of metrics.json")
			c.MarkFlagRequired("clusterName")
		},
		func(ctx context.Context, a *admin.Admin) (*result, error) {
			masters, _, err := masterAddrs(ctx, a, cluster)
			if err != nil {
				return nil, err
			}
			own, err := ownNames(ctx, a)
			if err != nil {
				return nil, err
			}
			totalTps := map[string]float64{"totalNormalInTps": 0, "totalNormalOutTps": 0, "totalTransInTps": 0, "totalScheduleInTps": 0}
			totalDay := map[string]int64{"normalOneDayInNum": 0, "normalOneDayOutNum": 0, "transOneDayInNum": 0, "scheduleOneDayInNum": 0}
			report := map[string]any{}
			for _, name := range slices.Sorted(maps.Keys(masters)) {
				addr := masters[name]
				kv, err := a.BrokerRuntimeInfo(ctx, addr)
				if err != nil {
					return nil, err
				}
				conf, err := a.BrokerConfig(ctx, addr)
				if err != nil {
					return nil, err
				}
				topics, err := a.TopicConfigTable(ctx, addr)
				if err != nil {
					return nil, err
				}
				userTopics(topics, false, own)
				groups, err := a.GroupConfigTable(ctx, addr)
				if err != nil {
					return nil, err
				}
				userGroups(groups)
				// Transactional and scheduled inflow: the minute TPS of the
				// half and schedule topics, and their put count over the
				// last 24 hours, where the broker has samples.
				transTps, transDay := statsOf(ctx, a, addr, names.TopicTransHalf)
				schedTps, schedDay := statsOf(ctx, a, addr, names.TopicSchedule)
				inTps, outTps := firstFloat(kv["putTps"]), firstFloat(kv["getTransferredTps"])
				inDay := parseInt(kv["msgPutTotalTodayMorning"]) - parseInt(kv["msgPutTotalYesterdayMorning"])
				outDay := parseInt(kv["msgGetTotalTodayMorning"]) - parseInt(kv["msgGetTotalYesterdayMorning"])
				totalTps["totalNormalInTps"] += inTps
				totalTps["totalNormalOutTps"] += outTps
				totalTps["totalTransInTps"] += transTps
				totalTps["totalScheduleInTps"] += schedTps
				totalDay["normalOneDayInNum"] += inDay
				totalDay["normalOneDayOutNum"] += outDay
				totalDay["transOneDayInNum"] += transDay
				totalDay["scheduleOneDayInNum"] += schedDay
				clients := map[string]bool{}
				for gname := range groups {
					cc, err := a.ConsumerConnections(ctx, gname)
					if err != nil {
						continue // no consumer online
					}
					for _, c := range cc.Connections {
						clients[c.Language+"%"+protocol.VersionDesc(c.Version)] = true
					}
				}
				report[name] = map[string]any{
					"runtimeEnv": map[string]any{
						"cpuNum":         conf["clientCallbackExecutorThreads"],
						"totalMemKBytes": kv["totalMemKBytes"],
					},
					"runtimeQuota": map[string]any{
						"diskRatio": map[string]any{
							"commitLogDiskRatio":    kv["commitLogDiskRatio"],
							"consumeQueueDiskRatio": kv["consumeQueueDiskRatio"],
						},
						"tps": map[string]float64{"normalInTps": inTps, "normalOutTps": outTps,
							"transInTps": transTps, "scheduleInTps": schedTps},
						"oneDayNum": map[string]int64{"normalOneDayInNum": inDay, "normalOneDayOutNum": outDay,
							"transOneDayInNum": transDay, "scheduleOneDayInNum": schedDay},
						"messageAverageSize": kv["putMessageAverageSize"],
						"topicSize":          len(topics),
						"groupSize":          len(groups),
					},
					"runtimeVersion": map[string]any{
						"rocketmqVersion": kv["brokerVersionDesc"],
						"clientInfo":      slices.Sorted(maps.Keys(clients)),
					},
				}
			}
			return writeExport(dir, "metrics.json", map[string]any{
				"evaluateReport": report,
				"totalData":      map[string]any{"totalTps": totalTps, "totalOneDayNum": totalDay},
			})
		})
}

// statsOf returns a topic's put TPS of the current minute and its puts
// over the last 24 hours (VIEW_BROKER_STATS_DATA TOPIC_PUT_NUMS); zeros
// when the broker has no samples of it.
func statsOf(ctx context.Context, a *admin.Admin, addr, topic string) (float64, int64) {
	sd, err := a.BrokerStatsData(ctx, addr, "TOPIC_PUT_NUMS", topic)
	if err != nil {
		return 0, 0
	}
	// mqadmin's compute24HourSum: the day's sum, else scaled up from the
	// hour or the minute.
	switch {
	case sd.Day.Sum != 0:
		return sd.Minute.TPS, sd.Day.Sum
	case sd.Hour.Sum != 0:
		return sd.Minute.TPS, sd.Hour.Sum * 24
	}
	return sd.Minute.TPS, sd.Minute.Sum * 60 * 24
}

func cmdUpdateSubGroupList(g *globalFlags, af *adminFlags) *cobra.Command {
	var cluster, broker, file string
	return adminCommand(g, af, "updateSubGroupList", "Create or update consumer groups in batch from a JSON array of SubscriptionGroupConfig",
		func(c *cobra.Command) {
			brokerTargetFlags(c, &broker, &cluster)
			c.Flags().StringVarP(&file, "filename", "f", "", "JSON file: an array of SubscriptionGroupConfig objects (required)")
			c.MarkFlagRequired("filename")
		},
		func(ctx context.Context, a *admin.Admin) (*result, error) {
			if (broker == "") == (cluster == "") {
				return nil, fmt.Errorf("give -b brokerAddr or -c clusterName")
			}
			b, err := os.ReadFile(file)
			if err != nil {
				return nil, err
			}
			var groups []json.RawMessage
			if err := json.Unmarshal(b, &groups); err != nil {
				return nil, fmt.Errorf("%s: want a JSON array of SubscriptionGroupConfig: %w", file, err)
			}
			if err := a.CreateSubscriptionGroups(ctx, groups, target(cluster, broker)); err != nil {
				return nil, err
			}
			where := broker
			if where == "" {
				where = "cluster " + cluster
			}
			return &result{value: map[string]any{"ok": true, "groups": len(groups)},
				text: fmt.Sprintf("create or update %d subscription groups on %s success", len(groups), where)}, nil
		})
}

// runningInfos asks every live client of group for its running info.
func runningInfos(ctx context.Context, a *admin.Admin, group, brokerAddr string, jstack bool) (*admin.ConsumerConnections, []*admin.RunningInfo, error) {
	cc, err := a.ConsumerConnectionsOn(ctx, group, brokerAddr)
	if err != nil {
		return nil, nil, err
	}
	var infos []*admin.RunningInfo
	var lastErr error
	for _, c := range cc.Connections {
		ri, err := a.ConsumerRunningInfo(ctx, group, c.ClientID, jstack)
		if err != nil {
			lastErr = err
			continue
		}
		infos = append(infos, ri)
	}
	if len(infos) == 0 && lastErr != nil {
		return nil, nil, lastErr
	}
	return cc, infos, nil
}

// sameSubscriptions reports whether every client subscribes the same
// topics with the same expressions (mqadmin's analyzeSubscription).
func sameSubscriptions(infos []*admin.RunningInfo) bool {
	for _, ri := range infos[1:] {
		if !slices.Equal(ri.Subscriptions, infos[0].Subscriptions) {
			return false
		}
	}
	return true
}

// runningInfoText renders one client's running info in the sections of
// RocketMQ's ConsumerRunningInfo.formatString.
func runningInfoText(ri *admin.RunningInfo) string {
	var b strings.Builder
	b.WriteString("#Consumer Properties#\n")
	for _, k := range slices.Sorted(maps.Keys(ri.Properties)) {
		fmt.Fprintf(&b, "%-40s: %s\n", k, ri.Properties[k])
	}
	b.WriteString("\n#Consumer Subscription#\n")
	for i, s := range ri.Subscriptions {
		fmt.Fprintf(&b, "%03d Topic: %-40s ClassFilter: %-8v SubExpression: %s(%s)\n", i+1, s.Topic, false, s.Expression, s.ExpressionType)
	}
	b.WriteString("\n#Consumer Offset#\n")
	fmt.Fprintf(&b, "%-64s  %-32s  %-20s\n", "#Topic", "#Broker Name", "#QID:#Consumer Offset")
	for _, q := range ri.Queues {
		fmt.Fprintf(&b, "%-64s  %-32s  QID: %d OFFSET: %v\n", q.Queue.Topic, q.Queue.BrokerName, q.Queue.QueueID, q.State["commitOffset"])
	}
	b.WriteString("\n#Consumer MQ Detail#\n")
	for _, q := range ri.Queues {
		d, _ := json.Marshal(q.State)
		fmt.Fprintf(&b, "%-64s  %-32s  %-4d  %s\n", q.Queue.Topic, q.Queue.BrokerName, q.Queue.QueueID, d)
	}
	if len(ri.Status) > 0 {
		b.WriteString("\n#Consumer RT&TPS#\n")
		for _, t := range slices.Sorted(maps.Keys(ri.Status)) {
			fmt.Fprintf(&b, "%-32s  %s\n", t, ri.Status[t])
		}
	}
	if ri.Jstack != "" {
		b.WriteString("\n#Consumer jstack#\n")
		b.WriteString(ri.Jstack)
	}
	return b.String()
}

func cmdConsumerStatus(g *globalFlags, af *adminFlags) *cobra.Command {
	var group, clientID, broker string
	var jstack bool
	return adminCommand(g, af, "consumerStatus", "Ask a group's live consumers for their internal state (one client with -i)",
		func(c *cobra.Command) {
			c.Flags().StringVarP(&group, "consumerGroup", "g", "", "consumer group (required)")
			c.Flags().StringVarP(&clientID, "clientId", "i", "", "only this client id: print its whole state")
			c.Flags().BoolVarP(&jstack, "jstack", "s", false, "include the client's stack dump")
			c.Flags().StringVarP(&broker, "brokerAddr", "b", "", "list the group's clients from this broker (default: the group's brokers)")
			c.MarkFlagRequired("consumerGroup")
		},
		func(ctx context.Context, a *admin.Admin) (*result, error) {
			if clientID != "" {
				ri, err := a.ConsumerRunningInfo(ctx, group, clientID, jstack)
				if err != nil {
					return nil, err
				}
				return &result{value: ri, text: runningInfoText(ri)}, nil
			}
			cc, infos, err := runningInfos(ctx, a, group, broker, jstack)
			if err != nil {
				return nil, err
			}
			version := map[string]int32{}
			for _, c := range cc.Connections {
				version[c.ClientID] = c.Version
			}
			r := &result{value: infos, header: []string{"#Index", "#ClientId", "#Version", "#Queues"}}
			for i, ri := range infos {
				r.rows = append(r.rows, []string{strconv.Itoa(i + 1), ri.ClientID, protocol.VersionDesc(version[ri.ClientID]), strconv.Itoa(len(ri.Queues))})
			}
			if len(infos) > 0 {
				if sameSubscriptions(infos) {
					r.text = "Same subscription in the same group of consumer\n"
				} else {
					r.text = "WARN: Different subscription in the same group of consumer!!!\n"
				}
			}
			return r, nil
		})
}

func cmdConsumer(g *globalFlags, af *adminFlags) *cobra.Command {
	var group string
	var jstack bool
	return adminCommand(g, af, "consumer", "Show a consumer group's clients: connection, subscriptions and queues",
		func(c *cobra.Command) {
			c.Flags().StringVarP(&group, "consumerGroup", "g", "", "consumer group (required)")
			c.Flags().BoolVarP(&jstack, "jstack", "s", false, "include each client's stack dump")
			c.MarkFlagRequired("consumerGroup")
		},
		func(ctx context.Context, a *admin.Admin) (*result, error) {
			cc, infos, err := runningInfos(ctx, a, group, "", jstack)
			if err != nil {
				return nil, err
			}
			byID := map[string]*admin.RunningInfo{}
			for _, ri := range infos {
				byID[ri.ClientID] = ri
			}
			r := &result{value: map[string]any{"connections": cc, "runningInfo": infos},
				header: []string{"#ClientId", "#ClientAddr", "#Language", "#Version", "#ConsumeType", "#Subscriptions", "#Queues"}}
			for _, c := range cc.Connections {
				consumeType, subs, queues := "", "", "-"
				if ri := byID[c.ClientID]; ri != nil {
					consumeType = ri.Properties["PROP_CONSUME_TYPE"]
					var s []string
					for _, x := range ri.Subscriptions {
						s = append(s, x.Topic+"("+x.Expression+")")
					}
					subs, queues = strings.Join(s, ","), strconv.Itoa(len(ri.Queues))
				}
				r.rows = append(r.rows, []string{c.ClientID, c.ClientAddr, c.Language, protocol.VersionDesc(c.Version), consumeType, subs, queues})
			}
			if len(infos) > 1 && !sameSubscriptions(infos) {
				r.text = "WARN: Different subscription in the same group of consumer!!!\n"
			}
			if jstack {
				var b strings.Builder
				for _, ri := range infos {
					fmt.Fprintf(&b, "#%s jstack#\n%s\n", ri.ClientID, ri.Jstack)
				}
				r.text += b.String()
			}
			return r, nil
		})
}

func cmdProducer(g *globalFlags, af *adminFlags) *cobra.Command {
	var broker string
	return adminCommand(g, af, "producer", "List every producer client of a broker by producer group",
		func(c *cobra.Command) {
			c.Flags().StringVarP(&broker, "broker", "b", "", "broker address (required)")
			c.MarkFlagRequired("broker")
		},
		func(ctx context.Context, a *admin.Admin) (*result, error) {
			all, err := a.AllProducers(ctx, broker)
			if err != nil {
				return nil, err
			}
			r := &result{value: all, header: []string{"#ProducerGroup", "#ClientId", "#RemoteIP", "#Language", "#Version", "#LastUpdate"}}
			for _, grp := range slices.Sorted(maps.Keys(all)) {
				for _, p := range all[grp] {
					r.rows = append(r.rows, []string{grp, p.ClientID, p.RemoteIP, p.Language, protocol.VersionDesc(p.Version),
						fmtTime(time.UnixMilli(p.LastUpdateTimestamp))})
				}
			}
			if len(all) == 0 {
				r.text = "no producer on " + broker
			}
			return r, nil
		})
}

func cmdDecodeMessageID(_ *globalFlags, af *adminFlags) *cobra.Command {
	var id string
	cmd := &cobra.Command{
		Use:   "DecodeMessageId",
		Short: "Decode a unique message id (UNIQ_KEY): the producer's IP, PID and when it was made",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			u, err := message.ParseUniqID(strings.TrimSpace(id))
			if err != nil {
				return oneLine(err)
			}
			when := u.Time(time.Now())
			r := &result{
				value: map[string]any{"ip": u.IP.String(), "pid": u.PID, "date": when.Format(time.RFC3339Nano), "counter": u.Counter},
				text:  fmt.Sprintf("ip=%s\npid=%d\ndate=%s", u.IP, u.PID, when.Format("2006-01-02#15:04:05:000")),
			}
			return r.print(cmd.OutOrStdout(), af.json)
		},
	}
	cmd.Flags().StringVarP(&id, "messageId", "i", "", "unique message id (required)")
	cmd.MarkFlagRequired("messageId")
	return cmd
}

func cmdResetOffsetByTimeOld(g *globalFlags, af *adminFlags) *cobra.Command {
	var group, topic, ts, cluster string
	var force bool
	return adminCommand(g, af, "resetOffsetByTimeOld", "Rewrite a group's committed offsets to a time without telling its consumers (RocketMQ's first reset)",
		func(c *cobra.Command) {
			c.Flags().StringVarP(&group, "group", "g", "", "consumer group (required)")
			c.Flags().StringVarP(&topic, "topic", "t", "", "topic (required)")
			c.Flags().StringVarP(&ts, "timestamp", "s", "", "ms since the epoch, now, yyyy-MM-dd#HH:mm:ss:SSS, or -1 for the end (required)")
			boolArgVarP(c, &force, "force", "f", true, "also move offsets backwards")
			c.Flags().StringVarP(&cluster, "cluster", "c", "", "cluster (accepted for mqadmin's flags; the topic's route decides)")
			c.MarkFlagRequired("group")
			c.MarkFlagRequired("topic")
			c.MarkFlagRequired("timestamp")
		},
		func(ctx context.Context, a *admin.Admin) (*result, error) {
			var t time.Time // zero: the end of each queue
			if ts != "-1" {
				var err error
				if t, err = parseTimestamp(ts); err != nil {
					return nil, err
				}
			}
			stats, err := a.ResetOffsetByTimeOld(ctx, topic, group, t, force)
			if err != nil {
				return nil, err
			}
			r := &result{value: stats, header: []string{"#brokerName", "#queueId", "#brokerOffset", "#consumerOffset", "#timestampOffset", "#resetOffset"}}
			for _, s := range stats {
				r.rows = append(r.rows, []string{s.BrokerName, strconv.Itoa(s.QueueID), strconv.FormatInt(s.BrokerOffset, 10),
					strconv.FormatInt(s.ConsumerOffset, 10), strconv.FormatInt(s.TimestampOffset, 10), strconv.FormatInt(s.RollbackOffset, 10)})
			}
			r.text = fmt.Sprintf("reset consumer offset of %s on %s by timestamp %s", group, topic, ts)
			return r, nil
		})
}
