package main

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
	"unicode/utf8"

	"github.com/spf13/cobra"

	"github.com/apogeemq/apogee/client"
	"github.com/apogeemq/apogee/client/admin"
	"github.com/apogeemq/apogee/internal/names"
	"github.com/apogeemq/apogee/internal/protocol"
)

func init() { register(newAdminCmd) }

// adminFlags are shared by every `apogee admin` command.
type adminFlags struct {
	namesrv string
	json    bool
	timeout time.Duration
	secure  secureFlags // --ak, --sk, --tls (admin_auth.go)
}

// defaultNamesrv is $NAMESRV_ADDR, else the local standalone's address.
func defaultNamesrv() string {
	if a := os.Getenv("NAMESRV_ADDR"); a != "" {
		return a
	}
	return "127.0.0.1:9876"
}

// result is what an admin command prints: a table for people, or a value
// encoded as JSON with --json.
type result struct {
	value  any        // --json
	header []string   // table columns
	rows   [][]string // table rows
	text   string     // a message instead of a table
}

func (r *result) print(w io.Writer, asJSON bool) error {
	if asJSON {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		v := r.value
		if v == nil {
			v = map[string]any{"ok": true, "message": r.text}
		}
		return enc.Encode(v)
	}
	if r.text != "" {
		fmt.Fprintln(w, r.text)
	}
	if r.header == nil {
		return nil
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, strings.Join(r.header, "\t"))
	for _, row := range r.rows {
		fmt.Fprintln(tw, strings.Join(row, "\t"))
	}
	return tw.Flush()
}

func newAdminCmd(g *globalFlags) *cobra.Command {
	af := &adminFlags{}
	cmd := &cobra.Command{
		Use:   "admin",
		Short: "Administer a cluster with mqadmin's commands (updateTopic, topicList, consumerProgress, ...)",
		Long: `Administer a cluster with mqadmin's commands. Command lines are mqadmin's unchanged:
the same command names, option letters, long names and arities (an option
that takes a value in mqadmin takes one here, "updateTopic -o true"; a switch
stays a switch, "topicList -c"). -n is also --namesrvAddr, mqadmin's -bn is
--brokerName, and -i interval repeats a command until interrupted. --json
prints data for scripts instead of tables.

Not served (README.md, "mqadmin commands not served"): the RocksDB, cold-data,
static-topic, broker-container, compaction-log and monitoring commands.
setCommitLogReadAheadMode and resetMasterFlushOffset are sent as RocketMQ's
requests; Apogee brokers answer REQUEST_CODE_NOT_SUPPORTED.`,
	}
	pf := cmd.PersistentFlags()
	pf.StringVarP(&af.namesrv, "namesrvAddr", "n", defaultNamesrv(), "name server address(es), host:port;host:port (also --namesrv)")
	pf.BoolVar(&af.json, "json", false, "print JSON instead of tables")
	pf.DurationVar(&af.timeout, "timeout", 10*time.Second, "timeout of each request")
	af.secure.register(pf)
	for _, add := range adminCommands {
		sub := add(g, af)
		if sub.GlobalNormalizationFunc() == nil {
			flagAliases(sub) // admin_compat.go: --namesrv for -n
		}
		showMultiLetterShorts(sub)
		cmd.AddCommand(sub)
	}
	return cmd
}

// adminCommand builds one `apogee admin` subcommand whose run function gets
// a started Admin.
func adminCommand(g *globalFlags, af *adminFlags, use, short string, flags func(*cobra.Command),
	run func(ctx context.Context, a *admin.Admin) (*result, error)) *cobra.Command {
	cmd := &cobra.Command{
		Use:   use,
		Short: short,
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			period, err := repeatInterval(cmd)
			if err != nil {
				return err
			}
			logger, err := g.logger(os.Stderr)
			if err != nil {
				return err
			}
			opts, err := af.secure.adminOptions()
			if err != nil {
				return err
			}
			a, err := admin.New(append([]admin.Option{admin.WithNameServers(af.namesrv), admin.WithTimeout(af.timeout), admin.WithLogger(logger)}, opts...)...)
			if err != nil {
				return err
			}
			if err := a.Start(); err != nil {
				return err
			}
			defer a.Close()
			once := func() error {
				res, err := run(cmd.Context(), a)
				if err != nil {
					return oneLine(err)
				}
				return res.print(cmd.OutOrStdout(), af.json)
			}
			if period > 0 {
				return repeat(cmd.Context(), period, once)
			}
			return once()
		},
	}
	if flags != nil {
		flags(cmd)
	}
	return cmd
}

var adminCommands = []func(*globalFlags, *adminFlags) *cobra.Command{
	cmdUpdateTopic, cmdUpdateTopicList, cmdDeleteTopic, cmdTopicList, cmdTopicRoute, cmdTopicStatus, cmdClusterList,
	cmdConsumerProgress, cmdConsumerConnection, cmdUpdateSubGroup, cmdDeleteSubGroup, cmdBrokerStatus,
	cmdQueryMsgByID, cmdQueryMsgByKey, cmdResetOffsetByTime, cmdSendMessage, cmdConsumeMessage, cmdProducerConnection,
	cmdGetBrokerLiteInfo, cmdGetParentTopicInfo, cmdGetLiteTopicInfo, // admin_lite.go
	cmdGetLiteClientInfo, cmdGetLiteGroupInfo, cmdTriggerLiteDispatch,
}

func cmdProducerConnection(g *globalFlags, af *adminFlags) *cobra.Command {
	var group, cluster, topic string
	return adminCommand(g, af, "producerConnection", "List a producer group's live clients on the masters of a topic (-t) or a cluster (-c)", func(c *cobra.Command) {
		c.Flags().StringVarP(&group, "producerGroup", "g", "", "producer group (required)")
		c.Flags().StringVarP(&topic, "topic", "t", "", "ask the masters of this topic's route (as mqadmin)")
		c.Flags().StringVarP(&cluster, "clusterName", "c", "DefaultCluster", "without -t: ask every master of this cluster")
		c.MarkFlagRequired("producerGroup")
	}, func(ctx context.Context, a *admin.Admin) (*result, error) {
		ci, err := a.ClusterInfo(ctx)
		if err != nil {
			return nil, err
		}
		brokers := ci.Clusters[cluster]
		if topic != "" {
			rt, err := a.TopicRoute(ctx, topic)
			if err != nil {
				return nil, err
			}
			brokers = nil
			for _, b := range rt.Brokers {
				brokers = append(brokers, b.Name)
			}
		}
		type row struct {
			Broker string `json:"broker"`
			admin.Connection
		}
		var rows []row
		var lastErr error
		for _, name := range brokers {
			addr := ci.Brokers[name].MasterAddr()
			if addr == "" {
				continue
			}
			conns, err := a.ProducerConnections(ctx, group, addr)
			if err != nil {
				lastErr = err
				continue
			}
			for _, c := range conns {
				rows = append(rows, row{name, c})
			}
		}
		if len(rows) == 0 && lastErr != nil {
			return nil, lastErr
		}
		r := &result{value: rows, header: []string{"#BROKER", "#CLIENT_ID", "#CLIENT_ADDR", "#LANGUAGE", "#VERSION"}}
		for _, x := range rows {
			r.rows = append(r.rows, []string{x.Broker, x.ClientID, x.ClientAddr, x.Language, strconv.Itoa(int(x.Version))})
		}
		return r, nil
	})
}

// oneLine flattens an error onto one line (broker remarks may hold
// newlines): scripts read a single-line reason from stderr.
func oneLine(err error) error {
	if err == nil {
		return nil
	}
	return errors.New(strings.Join(strings.Fields(err.Error()), " "))
}

func target(cluster, broker string) admin.Target {
	return admin.Target{Cluster: cluster, BrokerAddr: broker}
}

func cmdUpdateTopic(g *globalFlags, af *adminFlags) *cobra.Command {
	var tc admin.TopicConfig
	var cluster, broker string
	var unit, unitSub bool
	return adminCommand(g, af, "updateTopic", "Create or update a topic on a cluster (-c) or one broker (-b)", func(c *cobra.Command) {
		f := c.Flags()
		f.StringVarP(&tc.Topic, "topic", "t", "", "topic name (required)")
		f.StringVarP(&cluster, "clusterName", "c", "", "create on every master of this cluster")
		f.StringVarP(&broker, "brokerAddr", "b", "", "create on this broker address")
		f.IntVarP(&tc.ReadQueues, "readQueueNums", "r", 8, "read queue count")
		f.IntVarP(&tc.WriteQueues, "writeQueueNums", "w", 8, "write queue count")
		f.IntVarP(&tc.Perm, "perm", "p", 6, "permission: 2 write, 4 read, 6 read+write")
		boolArgVarP(c, &tc.Order, "order", "o", false, "ordered topic (true|false)")
		f.StringVarP(&tc.Attributes, "attributes", "a", "", "topic attributes, +key=value,-key (e.g. +message.type=FIFO)")
		boolArgVarP(c, &unit, "unit", "u", false, "unit topic: sets topicSysFlag bit 1")
		boolArgVarP(c, &unitSub, "hasUnitSub", "s", false, "has unit subscriptions: sets topicSysFlag bit 2")
		c.MarkFlagRequired("topic")
	}, func(ctx context.Context, a *admin.Admin) (*result, error) {
		tc.SysFlag = 0
		if unit {
			tc.SysFlag |= admin.TopicSysFlagUnit
		}
		if unitSub {
			tc.SysFlag |= admin.TopicSysFlagUnitSub
		}
		if err := a.CreateTopic(ctx, tc, target(cluster, broker)); err != nil {
			return nil, err
		}
		return &result{text: fmt.Sprintf("create topic %s success: read %d write %d perm %d", tc.Topic, tc.ReadQueues, tc.WriteQueues, tc.Perm),
			value: map[string]any{"ok": true, "topic": tc.Topic, "readQueueNums": tc.ReadQueues, "writeQueueNums": tc.WriteQueues, "perm": tc.Perm}}, nil
	})
}

// cmdUpdateTopicList is mqadmin updateTopicList (RocketMQ 5.3): -f names a
// JSON file holding a list of RocketMQ TopicConfig objects
// ([{"topicName":"T","readQueueNums":4,"writeQueueNums":4,"perm":6},...]).
func cmdUpdateTopicList(g *globalFlags, af *adminFlags) *cobra.Command {
	var file, cluster, broker string
	return adminCommand(g, af, "updateTopicList", "Create or update topics in batch from a JSON file (-f) on a cluster (-c) or one broker (-b)", func(c *cobra.Command) {
		f := c.Flags()
		f.StringVarP(&file, "filename", "f", "", "JSON file with a list of TopicConfig (required)")
		f.StringVarP(&cluster, "clusterName", "c", "", "create on every master of this cluster")
		f.StringVarP(&broker, "brokerAddr", "b", "", "create on this broker address")
		c.MarkFlagRequired("filename")
	}, func(ctx context.Context, a *admin.Admin) (*result, error) {
		data, err := os.ReadFile(file)
		if err != nil {
			return nil, err
		}
		var list []struct {
			TopicName      string `json:"topicName"`
			ReadQueueNums  int    `json:"readQueueNums"`
			WriteQueueNums int    `json:"writeQueueNums"`
			Perm           int    `json:"perm"`
			Order          bool   `json:"order"`
		}
		if err := json.Unmarshal(data, &list); err != nil {
			return nil, fmt.Errorf("%s: want a JSON list of TopicConfig: %w", file, err)
		}
		tcs := make([]admin.TopicConfig, 0, len(list))
		for _, t := range list {
			tcs = append(tcs, admin.TopicConfig{Topic: t.TopicName, ReadQueues: t.ReadQueueNums, WriteQueues: t.WriteQueueNums, Perm: t.Perm, Order: t.Order})
		}
		if err := a.CreateTopics(ctx, tcs, target(cluster, broker)); err != nil {
			return nil, err
		}
		return &result{text: fmt.Sprintf("submit batch of %d topic config(s) success", len(tcs)),
			value: map[string]any{"ok": true, "topics": len(tcs)}}, nil
	})
}

func cmdDeleteTopic(g *globalFlags, af *adminFlags) *cobra.Command {
	var topic, cluster string
	return adminCommand(g, af, "deleteTopic", "Delete a topic from a cluster's brokers and the name servers", func(c *cobra.Command) {
		c.Flags().StringVarP(&topic, "topic", "t", "", "topic name (required)")
		c.Flags().StringVarP(&cluster, "clusterName", "c", "", "cluster name (required)")
		c.MarkFlagRequired("topic")
		c.MarkFlagRequired("clusterName")
	}, func(ctx context.Context, a *admin.Admin) (*result, error) {
		if err := a.DeleteTopic(ctx, topic, cluster); err != nil {
			return nil, err
		}
		return &result{text: fmt.Sprintf("delete topic %s from cluster %s success", topic, cluster)}, nil
	})
}

// cmdTopicList is mqadmin's topicList; -c (clusterModel) prints each
// topic's cluster and consuming groups instead of the bare names.
func cmdTopicList(g *globalFlags, af *adminFlags) *cobra.Command {
	var cluster string
	var clusterModel bool
	return adminCommand(g, af, "topicList", "List every topic the name server knows (-c: with its cluster and consumer groups)", func(c *cobra.Command) {
		c.Flags().BoolVarP(&clusterModel, "clusterModel", "c", false, "print cluster, topic and consumer group of each topic")
		c.Flags().StringVar(&cluster, "clusterName", "", "only topics of this cluster")
	},
		func(ctx context.Context, a *admin.Admin) (*result, error) {
			var topics []string
			var err error
			if cluster != "" {
				topics, err = a.TopicsByCluster(ctx, cluster)
			} else {
				topics, err = a.Topics(ctx)
			}
			if err != nil {
				return nil, err
			}
			if clusterModel {
				return topicClusterRows(ctx, a, topics)
			}
			r := &result{value: map[string]any{"topics": topics}, header: []string{"#TOPIC"}}
			for _, t := range topics {
				r.rows = append(r.rows, []string{t})
			}
			return r, nil
		})
}

// topicClusterRow is one line of topicList -c.
type topicClusterRow struct {
	Cluster string `json:"clusterName"`
	Topic   string `json:"topic"`
	Group   string `json:"consumerGroup"`
}

// topicClusterRows is topicList -c: retry and dead-letter topics are left
// out; a topic's cluster is the one holding the first broker of its route;
// a topic without consumers gets one line with an empty group.
func topicClusterRows(ctx context.Context, a *admin.Admin, topics []string) (*result, error) {
	ci, err := a.ClusterInfo(ctx)
	if err != nil {
		return nil, err
	}
	clusterOf := map[string]string{}
	for c, names := range ci.Clusters {
		for _, n := range names {
			clusterOf[n] = c
		}
	}
	rows := []topicClusterRow{}
	for _, t := range topics {
		if names.IsRetryTopic(t) || names.IsDLQTopic(t) {
			continue
		}
		cluster := ""
		var groups []string
		if rt, err := a.TopicRoute(ctx, t); err == nil && len(rt.Brokers) > 0 {
			cluster = clusterOf[rt.Brokers[0].Name]
			groups, _ = a.TopicConsumers(ctx, t) // none is shown as one empty group
		}
		if len(groups) == 0 {
			groups = []string{""}
		}
		for _, grp := range groups {
			rows = append(rows, topicClusterRow{cluster, t, grp})
		}
	}
	r := &result{value: rows, header: []string{"#Cluster Name", "#Topic", "#Consumer Group"}}
	for _, x := range rows {
		r.rows = append(r.rows, []string{x.Cluster, x.Topic, x.Group})
	}
	return r, nil
}

// cmdTopicRoute is mqadmin's topicRoute: the route as RocketMQ's
// TopicRouteData JSON; -l prints mqadmin's list format (cluster, broker,
// addresses, queues, perm and a total line). --json prints Apogee's
// admin.TopicRoute, as before.
func cmdTopicRoute(g *globalFlags, af *adminFlags) *cobra.Command {
	var topic string
	var list bool
	return adminCommand(g, af, "topicRoute", "Show a topic's route as RocketMQ's TopicRouteData JSON (-l: mqadmin's list format)", func(c *cobra.Command) {
		c.Flags().StringVarP(&topic, "topic", "t", "", "topic name (required)")
		c.Flags().BoolVarP(&list, "list", "l", false, "print one line per broker with its cluster and a total line")
		c.MarkFlagRequired("topic")
	}, func(ctx context.Context, a *admin.Admin) (*result, error) {
		rt, err := a.TopicRoute(ctx, topic)
		if err != nil {
			return nil, err
		}
		addrs := map[string]string{}
		for _, b := range rt.Brokers {
			var parts []string
			ids := make([]int64, 0, len(b.Addrs))
			for id := range b.Addrs {
				ids = append(ids, id)
			}
			sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
			for _, id := range ids {
				parts = append(parts, fmt.Sprintf("%d=%s", id, b.Addrs[id]))
			}
			addrs[b.Name] = strings.Join(parts, ",")
		}
		if list {
			return routeList(rt, addrs), nil
		}
		// As mqadmin: the route as RocketMQ's TopicRouteData JSON.
		rd, err := a.RouteData(ctx, topic)
		if err != nil {
			return nil, err
		}
		raw, err := json.MarshalIndent(rd, "", "\t")
		if err != nil {
			return nil, fmt.Errorf("topic %s: encode route: %w", topic, err)
		}
		return &result{value: rt, text: string(raw)}, nil
	})
}

// routeList is topicRoute -l: one line per broker, sorted by name, then
// the number of brokers and the queue totals.
func routeList(rt *admin.TopicRoute, addrs map[string]string) *result {
	queues := map[string]admin.QueueData{}
	for _, q := range rt.Queues {
		queues[q.BrokerName] = q
	}
	brokers := slices.Clone(rt.Brokers)
	slices.SortFunc(brokers, func(x, y admin.Broker) int { return strings.Compare(x.Name, y.Name) })
	type row struct {
		Cluster     string `json:"clusterName"`
		Broker      string `json:"brokerName"`
		Addrs       string `json:"brokerAddrs"`
		ReadQueues  int    `json:"readQueueNums"`
		WriteQueues int    `json:"writeQueueNums"`
		Perm        int    `json:"perm"`
	}
	var rows []row
	r := &result{header: []string{"#ClusterName", "#BrokerName", "#BrokerAddrs", "#ReadQueue", "#WriteQueue", "#Perm"}}
	read, write := 0, 0
	for _, b := range brokers {
		q := queues[b.Name]
		read += q.ReadQueues
		write += q.WriteQueues
		rows = append(rows, row{b.Cluster, b.Name, addrs[b.Name], q.ReadQueues, q.WriteQueues, q.Perm})
		r.rows = append(r.rows, []string{b.Cluster, b.Name, addrs[b.Name], strconv.Itoa(q.ReadQueues), strconv.Itoa(q.WriteQueues), strconv.Itoa(q.Perm)})
	}
	r.rows = append(r.rows, []string{"Total:", strconv.Itoa(len(queues)), "", strconv.Itoa(read), strconv.Itoa(write), ""})
	r.value = map[string]any{"brokers": rows, "brokerCount": len(queues), "totalReadQueueNums": read, "totalWriteQueueNums": write}
	return r
}

func fmtTime(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.Format("2006-01-02 15:04:05.000")
}

func cmdTopicStatus(g *globalFlags, af *adminFlags) *cobra.Command {
	var topic, cluster string
	return adminCommand(g, af, "topicStatus", "Show the min/max offsets of every queue of a topic", func(c *cobra.Command) {
		c.Flags().StringVarP(&topic, "topic", "t", "", "topic name (required)")
		c.Flags().StringVarP(&cluster, "cluster", "c", "", "only the queues on this cluster's brokers (LMQ parent topics are not served)")
		c.MarkFlagRequired("topic")
	}, func(ctx context.Context, a *admin.Admin) (*result, error) {
		stats, err := a.TopicStats(ctx, topic)
		if err != nil {
			return nil, err
		}
		if cluster != "" {
			ci, err := a.ClusterInfo(ctx)
			if err != nil {
				return nil, err
			}
			in, ok := ci.Clusters[cluster]
			if !ok {
				return nil, fmt.Errorf("cluster %s not found on the name server", cluster)
			}
			stats = slices.DeleteFunc(stats, func(s admin.QueueStat) bool { return !slices.Contains(in, s.Queue.BrokerName) })
		}
		r := &result{value: stats, header: []string{"#BROKER_NAME", "#QID", "#MIN_OFFSET", "#MAX_OFFSET", "#LAST_UPDATED"}}
		for _, s := range stats {
			r.rows = append(r.rows, []string{s.Queue.BrokerName, strconv.Itoa(s.Queue.QueueID),
				strconv.FormatInt(s.MinOffset, 10), strconv.FormatInt(s.MaxOffset, 10), fmtTime(s.LastUpdate)})
		}
		return r, nil
	})
}

// cmdClusterList is mqadmin's clusterList: every broker with its role and
// epoch; -m the message totals of yesterday and today instead; -c one
// cluster; -i repeat every interval seconds.
func cmdClusterList(g *globalFlags, af *adminFlags) *cobra.Command {
	var only string
	var more bool
	return adminCommand(g, af, "clusterList", "List clusters and their brokers (-m: message totals of yesterday and today)", func(c *cobra.Command) {
		c.Flags().BoolVarP(&more, "moreStats", "m", false, "print messages in and out yesterday and today per broker")
		c.Flags().StringVarP(&only, "clusterName", "c", "", "only this cluster")
		intervalFlag(c, 1)
	},
		func(ctx context.Context, a *admin.Admin) (*result, error) {
			ci, err := a.ClusterInfo(ctx)
			if err != nil {
				return nil, err
			}
			clusters := make([]string, 0, len(ci.Clusters))
			for c := range ci.Clusters {
				if only == "" || c == only {
					clusters = append(clusters, c)
				}
			}
			sort.Strings(clusters)
			if only != "" && len(clusters) == 0 {
				return nil, fmt.Errorf("cluster %s not found on the name server", only)
			}
			r := &result{value: ci, header: []string{"#CLUSTER_NAME", "#BROKER_NAME", "#BID", "#ADDR", "#ROLE", "#EPOCH"}}
			if only != "" {
				r.value = &admin.ClusterInfo{Clusters: map[string][]string{only: ci.Clusters[only]}, Brokers: map[string]admin.Broker{}}
				for _, name := range ci.Clusters[only] {
					r.value.(*admin.ClusterInfo).Brokers[name] = ci.Brokers[name]
				}
			}
			type moreRow struct {
				Cluster       string `json:"clusterName"`
				Broker        string `json:"brokerName"`
				Addr          string `json:"brokerAddr"`
				InTotalYest   int64  `json:"inTotalYest"`
				OutTotalYest  int64  `json:"outTotalYest"`
				InTotalToday  int64  `json:"inTotalToday"`
				OutTotalToday int64  `json:"outTotalToday"`
			}
			var moreRows []moreRow
			if more {
				r.header = []string{"#Cluster Name", "#Broker Name", "#InTotalYest", "#OutTotalYest", "#InTotalToday", "#OutTotalToday"}
			}
			for _, c := range clusters {
				for _, name := range ci.Clusters[c] {
					b := ci.Brokers[name]
					ids := make([]int64, 0, len(b.Addrs))
					for id := range b.Addrs {
						ids = append(ids, id)
					}
					sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
					for _, id := range ids {
						if more {
							x := moreRow{Cluster: c, Broker: name, Addr: b.Addrs[id]}
							x.InTotalYest, x.OutTotalYest, x.InTotalToday, x.OutTotalToday = dayTotals(ctx, a, b.Addrs[id])
							moreRows = append(moreRows, x)
							r.rows = append(r.rows, []string{c, name, strconv.FormatInt(x.InTotalYest, 10), strconv.FormatInt(x.OutTotalYest, 10),
								strconv.FormatInt(x.InTotalToday, 10), strconv.FormatInt(x.OutTotalToday, 10)})
							continue
						}
						role, epoch := brokerRoleEpoch(ctx, a, id, b.Addrs[id]) // admin_controller.go
						r.rows = append(r.rows, []string{c, name, strconv.FormatInt(id, 10), b.Addrs[id], role, epoch})
					}
				}
			}
			if more {
				r.value = moreRows
			}
			return r, nil
		})
}

// dayTotals is clusterList -m for one broker: messages put and got
// yesterday and today, from the broker's day-boundary counters (0 when the
// broker does not answer, as mqadmin).
func dayTotals(ctx context.Context, a *admin.Admin, addr string) (inYest, outYest, inToday, outToday int64) {
	kv, err := a.BrokerRuntimeInfo(ctx, addr)
	if err != nil {
		return 0, 0, 0, 0
	}
	n := func(k string) int64 { v, _ := strconv.ParseInt(kv[k], 10, 64); return v }
	return n("msgPutTotalTodayMorning") - n("msgPutTotalYesterdayMorning"),
		n("msgGetTotalTodayMorning") - n("msgGetTotalYesterdayMorning"),
		n("msgPutTotalTodayNow") - n("msgPutTotalTodayMorning"),
		n("msgGetTotalTodayNow") - n("msgGetTotalTodayMorning")
}

// cmdConsumerProgress is mqadmin's consumerProgress for one group:
// -s true adds the client each queue is assigned to (from the clients'
// running info), -c keeps the queues of one cluster's brokers.
func cmdConsumerProgress(g *globalFlags, af *adminFlags) *cobra.Command {
	var group, topic, cluster string
	var showClientIP bool
	return adminCommand(g, af, "consumerProgress", "Show a consumer group's offsets and lag per queue (without -g: every group's summary)", func(c *cobra.Command) {
		c.Flags().StringVarP(&group, "groupName", "g", "", "consumer group (default: one summary line per group)")
		c.Flags().StringVarP(&topic, "topic", "t", "", "only this topic")
		boolArgVarP(c, &showClientIP, "showClientIP", "s", false, "show the client IP each queue is assigned to")
		c.Flags().StringVarP(&cluster, "cluster", "c", "", "only queues on this cluster's brokers")
		flagAliases(c, "topic", "topicName")
	}, func(ctx context.Context, a *admin.Admin) (*result, error) {
		if group == "" {
			return allGroupsProgress(ctx, a)
		}
		cp, err := a.ConsumerProgress(ctx, group, topic)
		if err != nil {
			return nil, err
		}
		if cluster != "" {
			if cp, err = progressInCluster(ctx, a, cp, cluster); err != nil {
				return nil, err
			}
		}
		var owner map[client.MessageQueue]string
		if showClientIP {
			owner = queueOwners(ctx, a, group)
		}
		type row struct {
			admin.QueueProgress
			ClientIP string `json:"clientIP,omitempty"`
		}
		rows := make([]row, 0, len(cp.Queues))
		r := &result{header: []string{"#TOPIC", "#BROKER_NAME", "#QID", "#BROKER_OFFSET", "#CONSUMER_OFFSET", "#DIFF", "#LAST_TIME"}}
		if showClientIP {
			r.header = []string{"#TOPIC", "#BROKER_NAME", "#QID", "#BROKER_OFFSET", "#CONSUMER_OFFSET", "#CLIENT_IP", "#DIFF", "#LAST_TIME"}
		}
		for _, q := range cp.Queues {
			line := []string{q.Queue.Topic, q.Queue.BrokerName, strconv.Itoa(q.Queue.QueueID),
				strconv.FormatInt(q.BrokerOffset, 10), strconv.FormatInt(q.ConsumerOffset, 10)}
			ip := ""
			if showClientIP {
				ip = owner[q.Queue]
				line = append(line, cmp.Or(ip, "N/A"))
			}
			rows = append(rows, row{q, ip})
			r.rows = append(r.rows, append(line, strconv.FormatInt(q.Lag, 10), fmtTime(q.LastTimestamp)))
		}
		pad := make([]string, len(r.header)-3)
		r.rows = append(r.rows, append(append([]string{}, pad...), "Consume TPS:", strconv.FormatFloat(cp.ConsumeTPS, 'f', 2, 64), ""),
			append(append([]string{}, pad...), "Diff Total:", strconv.FormatInt(cp.TotalLag, 10), ""))
		if showClientIP {
			r.value = map[string]any{"Group": cp.Group, "Queues": rows, "TotalLag": cp.TotalLag, "ConsumeTPS": cp.ConsumeTPS}
		} else {
			r.value = cp
		}
		return r, nil
	})
}

// groupSummary is a line of consumerProgress without -g.
type groupSummary struct {
	Group     string  `json:"group"`
	Count     int     `json:"count"`
	Version   string  `json:"version"`
	Type      string  `json:"consumeType"`
	Model     string  `json:"messageModel"`
	TPS       float64 `json:"consumeTps"`
	DiffTotal int64   `json:"diffTotal"`
}

// allGroupsProgress is mqadmin's consumerProgress without -g: one line per
// group that has a retry topic (every subscribed group), with its live
// clients (OFFLINE without), lowest client version, consume type, model,
// TPS and total lag. A group whose brokers do not answer keeps zeros.
func allGroupsProgress(ctx context.Context, a *admin.Admin) (*result, error) {
	topics, err := a.Topics(ctx)
	if err != nil {
		return nil, err
	}
	rows := []groupSummary{}
	for _, t := range topics {
		if !names.IsRetryTopic(t) {
			continue
		}
		grp, _, _ := strings.Cut(strings.TrimPrefix(t, names.RetryGroupTopicPrefix), "+") // POP v2 retry topics: group+topic
		x := groupSummary{Group: grp, Version: "OFFLINE"}
		if cp, err := a.ConsumerProgress(ctx, grp, ""); err == nil {
			x.TPS, x.DiffTotal = cp.ConsumeTPS, cp.TotalLag
		}
		if cc, err := a.ConsumerConnections(ctx, grp); err == nil && len(cc.Connections) > 0 {
			x.Count = len(cc.Connections)
			lowest := cc.Connections[0].Version
			for _, c := range cc.Connections {
				lowest = min(lowest, c.Version)
			}
			x.Version = protocol.VersionDesc(lowest)
			x.Type = "PUSH"
			if cc.ConsumeType == "CONSUME_ACTIVELY" {
				x.Type = "PULL"
			} else {
				x.Model = cc.MessageModel
			}
		}
		rows = append(rows, x)
	}
	r := &result{value: rows, header: []string{"#Group", "#Count", "#Version", "#Type", "#Model", "#TPS", "#Diff Total"}}
	for _, x := range rows {
		r.rows = append(r.rows, []string{x.Group, strconv.Itoa(x.Count), x.Version, x.Type, x.Model,
			strconv.Itoa(int(x.TPS)), strconv.FormatInt(x.DiffTotal, 10)})
	}
	return r, nil
}

// progressInCluster keeps the queues of cp on brokers of cluster.
func progressInCluster(ctx context.Context, a *admin.Admin, cp *admin.ConsumerProgress, cluster string) (*admin.ConsumerProgress, error) {
	ci, err := a.ClusterInfo(ctx)
	if err != nil {
		return nil, err
	}
	in := map[string]bool{}
	for _, n := range ci.Clusters[cluster] {
		in[n] = true
	}
	if len(in) == 0 {
		return nil, fmt.Errorf("cluster %s not found on the name server", cluster)
	}
	out := &admin.ConsumerProgress{Group: cp.Group, ConsumeTPS: cp.ConsumeTPS}
	for _, q := range cp.Queues {
		if in[q.Queue.BrokerName] {
			out.Queues = append(out.Queues, q)
			out.TotalLag += q.Lag
		}
	}
	return out, nil
}

// queueOwners maps each queue a live client of group holds to that
// client's IP (the client id before its '@'), from every client's running
// info. A client that does not answer owns nothing (shown N/A).
func queueOwners(ctx context.Context, a *admin.Admin, group string) map[client.MessageQueue]string {
	owner := map[client.MessageQueue]string{}
	cc, err := a.ConsumerConnections(ctx, group)
	if err != nil {
		return owner
	}
	for _, c := range cc.Connections {
		ri, err := a.ConsumerRunningInfo(ctx, group, c.ClientID, false)
		if err != nil {
			continue
		}
		ip, _, _ := strings.Cut(c.ClientID, "@")
		for _, q := range ri.Queues {
			owner[q.Queue] = ip
		}
	}
	return owner
}

func cmdConsumerConnection(g *globalFlags, af *adminFlags) *cobra.Command {
	var group, broker string
	return adminCommand(g, af, "consumerConnection", "List a consumer group's live clients and subscriptions", func(c *cobra.Command) {
		c.Flags().StringVarP(&group, "consumerGroup", "g", "", "consumer group (required)")
		c.Flags().StringVarP(&broker, "brokerAddr", "b", "", "ask this broker (default: the group's brokers)")
		c.MarkFlagRequired("consumerGroup")
	}, func(ctx context.Context, a *admin.Admin) (*result, error) {
		cc, err := a.ConsumerConnectionsOn(ctx, group, broker)
		if err != nil {
			return nil, err
		}
		r := &result{value: cc, header: []string{"#CLIENT_ID", "#CLIENT_ADDR", "#LANGUAGE", "#VERSION"}}
		for _, c := range cc.Connections {
			r.rows = append(r.rows, []string{c.ClientID, c.ClientAddr, c.Language, strconv.Itoa(int(c.Version))})
		}
		var subs []string
		for _, s := range cc.Subscriptions {
			subs = append(subs, fmt.Sprintf("%s %s(%s)", s.Topic, s.Expression, s.ExpressionType))
		}
		r.text = fmt.Sprintf("ConsumeType: %s  MessageModel: %s  ConsumeFromWhere: %s\nSubscriptions: %s",
			cc.ConsumeType, cc.MessageModel, cc.ConsumeFromWhere, strings.Join(subs, "; "))
		return r, nil
	})
}

func cmdUpdateSubGroup(g *globalFlags, af *adminFlags) *cobra.Command {
	var gc admin.GroupConfig
	var cluster, broker string
	var consumeEnable, broadcastEnable, fromMin, notify bool
	return adminCommand(g, af, "updateSubGroup", "Create or update a consumer group on a cluster (-c) or broker (-b)", func(c *cobra.Command) {
		f := c.Flags()
		f.StringVarP(&gc.Group, "groupName", "g", "", "consumer group (required)")
		f.StringVarP(&cluster, "clusterName", "c", "", "every master of this cluster")
		f.StringVarP(&broker, "brokerAddr", "b", "", "this broker address")
		boolArgVarP(c, &consumeEnable, "consumeEnable", "s", true, "consumption enabled")
		boolArgVarP(c, &broadcastEnable, "consumeBroadcastEnable", "d", true, "broadcasting allowed")
		boolArgVarP(c, &gc.Orderly, "consumeMessageOrderly", "o", false, "orderly consumption")
		f.IntVarP(&gc.RetryQueueNums, "retryQueueNums", "q", 1, "retry queue count")
		f.IntVarP(&gc.RetryMaxTimes, "retryMaxTimes", "r", 16, "max retries before the dead-letter queue")
		f.Int64VarP(&gc.BrokerID, "brokerId", "i", 0, "broker id consumers pull from")
		f.Int64VarP(&gc.WhichBrokerSlowly, "whichBrokerWhenConsumeSlowly", "w", 1, "broker id when consuming slowly")
		boolArgVarP(c, &fromMin, "consumeFromMinEnable", "m", false, "consume from the min offset")
		f.StringVarP(&gc.RetryPolicy, "groupRetryPolicy", "p", "", `retry policy JSON, e.g. {"type":"EXPONENTIAL","exponentialRetryPolicy":{"initial":5000,"max":7200000,"multiplier":2}} or {"type":"CUSTOMIZED","customizedRetryPolicy":{"next":[1000,5000]}}`)
		boolArgVarP(c, &notify, "notifyConsumerIdsChanged", "a", true, "tell the group's clients when members change")
		c.MarkFlagRequired("groupName")
	}, func(ctx context.Context, a *admin.Admin) (*result, error) {
		gc.ConsumeDisabled, gc.BroadcastDisabled = !consumeEnable, !broadcastEnable
		gc.ConsumeFromMinDisabled, gc.NotifyDisabled = !fromMin, !notify
		if err := a.CreateSubscriptionGroup(ctx, gc, target(cluster, broker)); err != nil {
			return nil, err
		}
		return &result{text: fmt.Sprintf("create subscription group %s success", gc.Group)}, nil
	})
}

func cmdDeleteSubGroup(g *globalFlags, af *adminFlags) *cobra.Command {
	var group, cluster, broker string
	var clean bool
	return adminCommand(g, af, "deleteSubGroup", "Delete a consumer group from a cluster (-c) or broker (-b)", func(c *cobra.Command) {
		f := c.Flags()
		f.StringVarP(&group, "groupName", "g", "", "consumer group (required)")
		f.StringVarP(&cluster, "clusterName", "c", "", "every master of this cluster")
		f.StringVarP(&broker, "brokerAddr", "b", "", "this broker address")
		boolArgVarP(c, &clean, "removeOffset", "r", false, "also delete the group's offsets")
		c.MarkFlagRequired("groupName")
	}, func(ctx context.Context, a *admin.Admin) (*result, error) {
		if err := a.DeleteSubscriptionGroup(ctx, group, target(cluster, broker), clean); err != nil {
			return nil, err
		}
		return &result{text: fmt.Sprintf("delete subscription group %s success", group)}, nil
	})
}

func cmdBrokerStatus(g *globalFlags, af *adminFlags) *cobra.Command {
	var broker, cluster string
	return adminCommand(g, af, "brokerStatus", "Show a broker's runtime statistics (-b addr, or every broker of -c cluster)", func(c *cobra.Command) {
		c.Flags().StringVarP(&broker, "brokerAddr", "b", "", "broker address")
		c.Flags().StringVarP(&cluster, "clusterName", "c", "", "every broker of this cluster")
	}, func(ctx context.Context, a *admin.Admin) (*result, error) {
		addrs := []string{}
		if broker != "" {
			addrs = append(addrs, broker)
		} else {
			if cluster == "" {
				return nil, fmt.Errorf("give -b brokerAddr or -c clusterName")
			}
			ci, err := a.ClusterInfo(ctx)
			if err != nil {
				return nil, err
			}
			for _, name := range ci.Clusters[cluster] {
				for _, addr := range ci.Brokers[name].Addrs {
					addrs = append(addrs, addr)
				}
			}
			sort.Strings(addrs)
			if len(addrs) == 0 {
				return nil, fmt.Errorf("cluster %s has no broker", cluster)
			}
		}
		all := map[string]map[string]string{}
		r := &result{header: []string{"#BROKER", "#KEY", "#VALUE"}}
		for _, addr := range addrs {
			kv, err := a.BrokerRuntimeInfo(ctx, addr)
			if err != nil {
				return nil, err
			}
			all[addr] = kv
			keys := make([]string, 0, len(kv))
			for k := range kv {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			for _, k := range keys {
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

func messageRows(msgs []*client.MessageExt) *result {
	r := &result{value: msgs, header: []string{"#MSG_ID", "#TOPIC", "#BROKER", "#QID", "#OFFSET", "#TAGS", "#KEYS", "#STORE_TIME", "#BODY"}}
	for _, m := range msgs {
		body := string(m.Body)
		if len(body) > 64 {
			body = body[:64] + "..."
		}
		r.rows = append(r.rows, []string{m.MsgID, m.Topic, m.BrokerName, strconv.Itoa(int(m.QueueID)), strconv.FormatInt(m.QueueOffset, 10),
			m.Tag(), strings.Join(m.Keys(), " "), fmtTime(m.StoreTime), strconv.Quote(body)})
	}
	return r
}

// cmdQueryMsgByID is mqadmin's queryMsgById: -i takes one id or several,
// comma-separated. With -g and -d each message is pushed to that client of
// the group again (CONSUME_MESSAGE_DIRECTLY, through the broker storing
// it); with -s true it is sent to its topic again; otherwise it is shown,
// its body decoded with -f's charset.
func cmdQueryMsgByID(g *globalFlags, af *adminFlags) *cobra.Command {
	var ids, topic, group, clientID, resend, bodyFormat string
	return adminCommand(g, af, "queryMsgById", "Show messages by offset message id or UNIQ_KEY (-g -d: push to a consumer again; -s true: send again)", func(c *cobra.Command) {
		f := c.Flags()
		f.StringVarP(&ids, "msgId", "i", "", "message id(s), comma-separated (required)")
		f.StringVarP(&topic, "topic", "t", "", "topic (needed for a UNIQ_KEY)")
		f.StringVarP(&group, "consumerGroup", "g", "", "with -d: push the message to this group's client")
		f.StringVarP(&clientID, "clientId", "d", "", "with -g: the client id to push to")
		f.StringVarP(&resend, "sendMessage", "s", "", "true: send the message to its topic again")
		f.StringP("unitName", "u", "", "producer unit name for -s (accepted; Apogee producers have no unit)")
		f.StringVarP(&bodyFormat, "bodyFormat", "f", "", "print the body decoded with this charset (UTF-8, ISO-8859-1, US-ASCII)")
		f.StringP("cluster", "c", "", "cluster (accepted; the topic's route decides, LMQ parent topics are not served)")
		c.MarkFlagRequired("msgId")
	}, func(ctx context.Context, a *admin.Admin) (*result, error) {
		var list []string
		for id := range strings.SplitSeq(ids, ",") {
			if id = strings.TrimSpace(id); id != "" {
				list = append(list, id)
			}
		}
		if len(list) == 0 {
			return nil, fmt.Errorf("-i: no message id")
		}
		switch {
		case group != "" && clientID != "":
			return pushMessages(ctx, a, topic, group, clientID, list)
		case resend != "":
			ok, err := strconv.ParseBool(strings.TrimSpace(resend))
			if err != nil {
				return nil, fmt.Errorf("-s %q: want true or false", resend)
			}
			if !ok {
				return &result{value: []any{}}, nil // as mqadmin: -s false does nothing
			}
			return resendMessages(ctx, a, af, topic, list)
		}
		var decode func([]byte) (string, error)
		if bodyFormat != "" {
			var err error
			if decode, err = bodyDecoder(bodyFormat); err != nil {
				return nil, err
			}
		}
		var out *result
		var all []*client.MessageExt
		for _, id := range list {
			m, err := a.QueryMessageByID(ctx, topic, id)
			if err != nil {
				return nil, err
			}
			r := messageDetail(m) // admin_ops.go
			if decode != nil {
				text, err := decode(m.Body)
				if err != nil {
					return nil, err
				}
				r.rows = append(r.rows, []string{"Message Body", text})
			}
			all = append(all, m)
			if out == nil {
				out = r
			} else {
				out.rows = append(append(out.rows, []string{"", ""}), r.rows...)
			}
		}
		if len(all) > 1 {
			out.value = all
		}
		return out, nil
	})
}

// bodyDecoder returns the decoder of a charset name, as Java's
// Charset.forName spells them (case-insensitive).
func bodyDecoder(name string) (func([]byte) (string, error), error) {
	switch strings.ToUpper(strings.TrimSpace(name)) {
	case "UTF-8", "UTF8":
		return func(b []byte) (string, error) { return strings.ToValidUTF8(string(b), "\ufffd"), nil }, nil
	case "ISO-8859-1", "ISO8859-1", "ISO_8859_1", "LATIN1":
		return func(b []byte) (string, error) {
			r := make([]rune, len(b))
			for i, c := range b {
				r[i] = rune(c)
			}
			return string(r), nil
		}, nil
	case "US-ASCII", "ASCII":
		return func(b []byte) (string, error) {
			r := make([]rune, len(b))
			for i, c := range b {
				r[i] = rune(c)
				if c >= 0x80 {
					r[i] = utf8.RuneError // not ASCII, as Java's decoder replaces it
				}
			}
			return string(r), nil
		}, nil
	}
	return nil, fmt.Errorf("-f %q: charset not supported (UTF-8, ISO-8859-1, US-ASCII)", name)
}

// pushMessages is queryMsgById -g -d: each message goes again to one
// client of group, through the broker that stores it. A client that is
// not a push consumer is refused, as mqadmin.
func pushMessages(ctx context.Context, a *admin.Admin, topic, group, clientID string, ids []string) (*result, error) {
	ri, err := a.ConsumerRunningInfo(ctx, group, clientID, false)
	if err != nil {
		return nil, err
	}
	if t := ri.Properties["PROP_CONSUME_TYPE"]; t != "" && t != "CONSUME_PASSIVELY" {
		return nil, fmt.Errorf("this %s client is not push consumer, not support direct push", clientID)
	}
	type row struct {
		MsgID         string `json:"msgId"`
		ConsumeResult string `json:"consumeResult"`
	}
	var rows []row
	r := &result{header: []string{"#MSG_ID", "#CONSUME_RESULT"}}
	for _, id := range ids {
		m, err := a.QueryMessageByID(ctx, topic, id)
		if err != nil {
			return nil, err
		}
		res, err := a.ConsumeMessageDirectly(ctx, m.StoreHost, group, clientID, m.Topic, m.OffsetMsgID)
		if err != nil {
			return nil, err
		}
		rows = append(rows, row{id, res})
		r.rows = append(r.rows, []string{id, res})
	}
	r.value = rows
	return r, nil
}

// resendMessages is queryMsgById -s true: each message is sent to its
// topic again with its tags, keys and properties (its UNIQ_KEY included,
// as mqadmin's producer keeps it).
func resendMessages(ctx context.Context, a *admin.Admin, af *adminFlags, topic string, ids []string) (*result, error) {
	var msgs []*client.MessageExt
	for _, id := range ids {
		m, err := a.QueryMessageByID(ctx, topic, id)
		if err != nil {
			return nil, err
		}
		msgs = append(msgs, m)
	}
	p, err := probeProducer(af, "ReSendMsgById") // admin_ops.go
	if err != nil {
		return nil, err
	}
	defer p.Close()
	type row struct {
		OriginalMsgID string `json:"originalMsgId"`
		Status        string `json:"status"`
		MsgID         string `json:"msgId"`
		BrokerName    string `json:"brokerName"`
		QueueID       int    `json:"queueId"`
		QueueOffset   int64  `json:"queueOffset"`
	}
	var rows []row
	r := &result{header: []string{"#ORIGINAL_MSG_ID", "#STATUS", "#MSG_ID", "#BROKER_NAME", "#QID", "#QUEUE_OFFSET"}}
	for i, m := range msgs {
		out := client.NewMessage(m.Topic, m.Body)
		for k, v := range m.Properties {
			out.SetProperty(k, v)
		}
		out.Flag = m.Flag
		res, err := p.Send(ctx, out)
		if err != nil {
			return nil, fmt.Errorf("resend %s: %w", ids[i], err)
		}
		x := row{ids[i], res.Status.String(), res.MsgID, res.Queue.BrokerName, res.Queue.QueueID, res.QueueOffset}
		rows = append(rows, x)
		r.rows = append(r.rows, []string{x.OriginalMsgID, x.Status, x.MsgID, x.BrokerName, strconv.Itoa(x.QueueID), strconv.FormatInt(x.QueueOffset, 10)})
	}
	r.value = rows
	return r, nil
}

// cmdQueryMsgByKey is mqadmin's queryMsgByKey: -m at most this many,
// -b / -e the store-time range, -c the cluster.
func cmdQueryMsgByKey(g *globalFlags, af *adminFlags) *cobra.Command {
	var topic, key, cluster, b, e string
	var maxNum int
	return adminCommand(g, af, "queryMsgByKey", "Find messages of a topic by key", func(c *cobra.Command) {
		c.Flags().StringVarP(&topic, "topic", "t", "", "topic (required)")
		c.Flags().StringVarP(&key, "msgKey", "k", "", "key (required)")
		c.Flags().IntVarP(&maxNum, "maxNum", "m", 64, "at most this many messages")
		c.Flags().StringVarP(&b, "beginTimestamp", "b", "", "stored at or after: ms since the epoch (default 0), now or yyyy-MM-dd#HH:mm:ss:SSS")
		c.Flags().StringVarP(&e, "endTimestamp", "e", "", "stored at or before: ms since the epoch (default: no end)")
		c.Flags().StringVarP(&cluster, "cluster", "c", "", "only brokers of this cluster (LMQ parent topics are not served)")
		c.MarkFlagRequired("topic")
		c.MarkFlagRequired("msgKey")
	}, func(ctx context.Context, a *admin.Admin) (*result, error) {
		begin, end, err := timeRange(b, e) // admin_ops.go
		if err != nil {
			return nil, err
		}
		msgs, err := a.QueryMessageByKey(ctx, topic, key, maxNum, begin, end)
		if err != nil {
			return nil, err
		}
		if cluster != "" {
			if msgs, err = messagesInCluster(ctx, a, msgs, cluster); err != nil {
				return nil, err
			}
		}
		return messageRows(msgs), nil
	})
}

// messagesInCluster keeps the messages stored on brokers of cluster.
func messagesInCluster(ctx context.Context, a *admin.Admin, msgs []*client.MessageExt, cluster string) ([]*client.MessageExt, error) {
	ci, err := a.ClusterInfo(ctx)
	if err != nil {
		return nil, err
	}
	brokers, ok := ci.Clusters[cluster]
	if !ok {
		return nil, fmt.Errorf("cluster %s not found on the name server", cluster)
	}
	var out []*client.MessageExt
	for _, m := range msgs {
		if slices.Contains(brokers, m.BrokerName) {
			out = append(out, m)
		}
	}
	return out, nil
}

// parseTimestamp accepts ms since the epoch, "now", or mqadmin's
// yyyy-MM-dd#HH:mm:ss:SSS (local time).
func parseTimestamp(s string) (time.Time, error) {
	if s == "now" {
		return time.Now(), nil
	}
	if ms, err := strconv.ParseInt(s, 10, 64); err == nil {
		return time.UnixMilli(ms), nil
	}
	for _, layout := range []string{"2006-01-02#15:04:05:000", "2006-01-02#15:04:05", time.RFC3339} {
		if t, err := time.ParseInLocation(layout, s, time.Local); err == nil {
			return t, nil
		}
	}
	return time.Time{}, fmt.Errorf("bad timestamp %q: want ms since the epoch, now, or yyyy-MM-dd#HH:mm:ss:SSS", s)
}

func cmdResetOffsetByTime(g *globalFlags, af *adminFlags) *cobra.Command {
	var group, topic, ts, broker string
	var force bool
	var queueID int
	var offset int64
	return adminCommand(g, af, "resetOffsetByTime", "Move a group's offsets on a topic to a point in time (or one queue to an offset)", func(c *cobra.Command) {
		c.Flags().StringVarP(&group, "group", "g", "", "consumer group (required)")
		c.Flags().StringVarP(&topic, "topic", "t", "", "topic (required)")
		c.Flags().StringVarP(&ts, "timestamp", "s", "", "ms since the epoch, now, or yyyy-MM-dd#HH:mm:ss:SSS")
		boolArgVarP(c, &force, "force", "f", true, "also move offsets backwards")
		c.Flags().StringVarP(&broker, "broker", "b", "", "broker address (with -q and -o: reset one queue)")
		c.Flags().IntVarP(&queueID, "queue", "q", -1, "queue id (with -b and -o)")
		c.Flags().Int64VarP(&offset, "offset", "o", -1, "expected queue offset (with -b and -q)")
		c.Flags().StringP("cluster", "c", "", "cluster (accepted; the topic's route decides, LMQ parent topics are not served)")
		c.Flags().Bool("cplus", false, "reset C++ clients' offsets (deprecated in mqadmin; accepted, no effect: -c is --cluster)")
		c.MarkFlagRequired("group")
		c.MarkFlagRequired("topic")
	}, func(ctx context.Context, a *admin.Admin) (*result, error) {
		var offsets map[client.MessageQueue]int64
		var err error
		switch {
		case broker != "" || queueID >= 0 || offset >= 0:
			if broker == "" || queueID < 0 || offset < 0 {
				return nil, fmt.Errorf("a one-queue reset needs -b broker, -q queue and -o offset")
			}
			offsets, err = a.ResetQueueOffset(ctx, broker, topic, group, queueID, offset)
		case ts == "":
			return nil, fmt.Errorf("give -s timestamp, or -b, -q and -o for one queue")
		default:
			var t time.Time
			if t, err = parseTimestamp(ts); err != nil {
				return nil, err
			}
			offsets, err = a.ResetOffsetByTime(ctx, topic, group, t, force)
		}
		if err != nil {
			return nil, err
		}
		return offsetRows(offsets), nil // admin_ops.go
	})
}
