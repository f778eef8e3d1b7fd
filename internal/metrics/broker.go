package metrics

import (
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/apogeemq/apogee/internal/broker"
	"github.com/apogeemq/apogee/internal/names"
	"github.com/apogeemq/apogee/internal/store"
)

// RocketMQ 5's label names (BrokerMetricsConstant, RemotingMetricsConstant).
const (
	labelCluster       = "cluster"
	labelNodeType      = "node_type"
	labelNodeID        = "node_id"
	labelTopic         = "topic"
	labelConsumerGroup = "consumer_group"
	labelMessageType   = "message_type"
	labelIsSystem      = "is_system"
	labelIsRetry       = "is_retry"
	labelLanguage      = "language"
	labelVersion       = "version"
	labelConsumeMode   = "consume_mode"
	labelProtocolType  = "protocol_type"
	labelRequestCode   = "request_code"
	labelResponseCode  = "response_code"
	labelProcessor     = "processor"
	labelStorageType   = "storage_type"
	labelStorageMedium = "storage_medium"
	labelSlave         = "slave"
)

// metric is one family: its declaration (for the always-present # HELP and
// # TYPE) and the descriptor its series are built from.
type metric struct {
	family
	desc *prometheus.Desc
}

func newMetric(name, help string, typ dto.MetricType, constLabels prometheus.Labels, labels ...string) metric {
	return metric{
		family: family{name: name, help: help, typ: typ},
		desc:   prometheus.NewDesc(name, help, labels, constLabels),
	}
}

const (
	counter   = dto.MetricType_COUNTER
	gauge     = dto.MetricType_GAUGE
	histogram = dto.MetricType_HISTOGRAM
)

// BrokerCollector reads one broker's counters at scrape time.
type BrokerCollector struct {
	b   *broker.Broker
	now func() time.Time

	messagesIn, messagesOut, throughputIn, throughputOut, messageSize, rpcLatency    metric
	lagMessages, lagLatency, inflight, queueingLatency, readyMessages, sendToDLQ     metric
	producerConns, consumerConns, storageSize, flushBehind, dispatchBehind           metric
	reserveTime, topicNumber, groupNumber, watermark, brokerPermission               metric
	groupCommit, fsyncLatency, pageCacheBusy, haLag, timerBacklog, diskRatio, cqDisk metric
	flushFailed, diskFull                                                            metric
	popInflight, popAcked, popRevived, popDLQ                                        metric
	indexUnavailable, indexFailures, forcedMessages, forcedBytes                     metric
	liteTopics, liteSubscriptions                                                    metric // lite aggregates
}

// NewBrokerCollector builds the collector of b; every series carries
// RocketMQ's cluster, node_type="broker" and node_id (the broker name).
func NewBrokerCollector(b *broker.Broker) *BrokerCollector {
	cfg := b.Config()
	cl := prometheus.Labels{labelCluster: cfg.BrokerClusterName, labelNodeType: "broker", labelNodeID: cfg.BrokerName}
	m := func(name, help string, typ dto.MetricType, labels ...string) metric {
		return newMetric(name, help, typ, cl, labels...)
	}
	inLabels := []string{labelTopic, labelMessageType, labelIsSystem}
	outLabels := []string{labelTopic, labelConsumerGroup, labelIsRetry, labelIsSystem}
	return &BrokerCollector{
		b: b, now: time.Now,
		messagesIn:      m("rocketmq_messages_in_total", "Total number of incoming messages", counter, inLabels...),
		messagesOut:     m("rocketmq_messages_out_total", "Total number of outgoing messages", counter, outLabels...),
		throughputIn:    m("rocketmq_throughput_in_total", "Total traffic of incoming messages", counter, inLabels...),
		throughputOut:   m("rocketmq_throughput_out_total", "Total traffic of outgoing messages", counter, outLabels...),
		messageSize:     m("rocketmq_message_size", "Incoming messages size", histogram, inLabels...),
		rpcLatency:      m("rocketmq_rpc_latency", "Rpc latency", histogram, labelProtocolType, labelRequestCode, labelResponseCode),
		lagMessages:     m("rocketmq_consumer_lag_messages", "Consumer lag messages", gauge, outLabels...),
		lagLatency:      m("rocketmq_consumer_lag_latency", "Consumer lag time", gauge, outLabels...),
		inflight:        m("rocketmq_consumer_inflight_messages", "Consumer inflight messages", gauge, outLabels...),
		queueingLatency: m("rocketmq_consumer_queueing_latency", "Consumer queueing time", gauge, outLabels...),
		readyMessages:   m("rocketmq_consumer_ready_messages", "Consumer ready messages", gauge, outLabels...),
		sendToDLQ:       m("rocketmq_send_to_dlq_messages_total", "Consumer send to DLQ messages", counter, labelTopic, labelConsumerGroup, labelIsSystem),
		producerConns:   m("rocketmq_producer_connections", "Producer connections", gauge, labelLanguage, labelVersion, labelProtocolType),
		consumerConns: m("rocketmq_consumer_connections", "Consumer connections", gauge,
			labelConsumerGroup, labelLanguage, labelVersion, labelConsumeMode, labelProtocolType, labelIsSystem),
		storageSize:      m("rocketmq_storage_size", "Broker storage size", gauge, labelStorageType, labelStorageMedium),
		flushBehind:      m("rocketmq_storage_flush_behind_bytes", "Broker flush behind bytes", gauge, labelStorageType, labelStorageMedium),
		dispatchBehind:   m("rocketmq_storage_dispatch_behind_bytes", "Broker dispatch behind bytes", gauge, labelStorageType, labelStorageMedium),
		reserveTime:      m("rocketmq_storage_message_reserve_time", "Broker message reserve time", gauge, labelStorageType, labelStorageMedium),
		topicNumber:      m("rocketmq_topic_number", "Active topic number", gauge),
		groupNumber:      m("rocketmq_consumer_group_number", "Active subscription group number", gauge),
		watermark:        m("rocketmq_processor_watermark", "Request processor watermark", gauge, labelProcessor),
		brokerPermission: m("rocketmq_broker_permission", "Broker permission", gauge),
		groupCommit:      m("apogee_group_commit_size", "SYNC_FLUSH puts released by one commit-log flush", histogram),
		fsyncLatency:     m("apogee_fsync_latency_seconds", "Time of one commit-log flush (msync or fdatasync)", histogram),
		pageCacheBusy:    m("apogee_page_cache_busy_rejections_total", "Sends refused because the page cache was busy [PC_SYNCHRONIZED]", counter),
		haLag:            m("apogee_ha_lag_bytes", "Commit-log bytes a connected slave is behind the master", gauge, labelSlave),
		timerBacklog:     m("apogee_timer_backlog_messages", "Timer messages waiting for their delivery time", gauge),
		diskRatio:        m("apogee_commitlog_disk_ratio", "Used fraction of the commit log's file system (statfs)", gauge),
		cqDisk:           m("apogee_consumequeue_disk_ratio", "Used fraction of the consume queues' file system (statfs)", gauge),
		flushFailed:      m("apogee_store_flush_failed", "1 when a commit-log flush failed and the store refuses writes", gauge),
		diskFull:         m("apogee_store_disk_full", "1 while the store refuses writes because the disk is full", gauge),
		popInflight:      m("apogee_pop_inflight_messages", "POP messages popped and neither acked nor revived", gauge),
		popAcked:         m("apogee_pop_acked_messages_total", "POP messages acked", counter),
		popRevived:       m("apogee_pop_revived_messages_total", "POP messages revived to a retry topic after their invisible time", counter),
		popDLQ:           m("apogee_pop_dlq_messages_total", "POP messages moved to the dead-letter queue by the revive loop", counter),
		indexUnavailable: m("apogee_index_unavailable", "1 while no index file can be created (query by key misses new messages)", gauge),
		indexFailures:    m("apogee_index_create_failures_total", "Index files that could not be created", counter),
		forcedMessages:   m("apogee_forced_deleted_messages_total", "Messages deleted before their retention time by forced cleaning", counter, labelTopic),
		forcedBytes:      m("apogee_forced_deleted_bytes_total", "Bytes deleted before their retention time by forced cleaning", counter, labelTopic),
		// Lite topics: one series per LITE parent, never per lite topic; a
		// group's lag over a parent's lite topics is in rocketmq_consumer_lag_*.
		liteTopics:        m("apogee_lite_topics", "Lite topics of a LITE parent topic on this broker", gauge, labelTopic),
		liteSubscriptions: m("apogee_lite_subscriptions", "Lite subscriptions registered with this broker (LITE_SUBSCRIPTION_CTL)", gauge),
	}
}

func (c *BrokerCollector) metrics() []*metric {
	return []*metric{&c.messagesIn, &c.messagesOut, &c.throughputIn, &c.throughputOut, &c.messageSize, &c.rpcLatency,
		&c.lagMessages, &c.lagLatency, &c.inflight, &c.queueingLatency, &c.readyMessages, &c.sendToDLQ,
		&c.producerConns, &c.consumerConns, &c.storageSize, &c.flushBehind, &c.dispatchBehind,
		&c.reserveTime, &c.topicNumber, &c.groupNumber, &c.watermark, &c.brokerPermission,
		&c.groupCommit, &c.fsyncLatency, &c.pageCacheBusy, &c.haLag, &c.timerBacklog, &c.diskRatio, &c.cqDisk,
		&c.flushFailed, &c.diskFull, &c.popInflight, &c.popAcked, &c.popRevived, &c.popDLQ,
		&c.indexUnavailable, &c.indexFailures, &c.forcedMessages, &c.forcedBytes, &c.liteTopics, &c.liteSubscriptions}
}

// Families lists every family the collector declares.
func (c *BrokerCollector) families() []family {
	var out []family
	for _, m := range c.metrics() {
		out = append(out, m.family)
	}
	return out
}

// Describe implements prometheus.Collector.
func (c *BrokerCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, m := range c.metrics() {
		ch <- m.desc
	}
}

// Collect implements prometheus.Collector: one pass over the broker's
// snapshots.
func (c *BrokerCollector) Collect(ch chan<- prometheus.Metric) {
	b := c.b
	if b.Store == nil {
		return // not started
	}
	cnt := func(m metric, v int64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(m.desc, prometheus.CounterValue, float64(v), labels...)
	}
	gau := func(m metric, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(m.desc, prometheus.GaugeValue, v, labels...)
	}
	topics, groups := b.MeterSnapshot()
	for _, t := range topics {
		sys := strconv.FormatBool(names.IsSystemTopic(t.Topic))
		for mt := range t.Messages {
			if t.Messages[mt] == 0 {
				continue
			}
			typ := broker.MessageType(mt).String()
			cnt(c.messagesIn, t.Messages[mt], t.Topic, typ, sys)
			cnt(c.throughputIn, t.Bytes[mt], t.Topic, typ, sys)
			bounds := make([]float64, len(broker.MessageSizeBounds))
			for i, v := range broker.MessageSizeBounds {
				bounds[i] = float64(v)
			}
			ch <- constHistogram(c.messageSize.desc, bounds, t.Sizes[mt][:], float64(t.Bytes[mt]), t.Topic, typ, sys)
		}
	}
	for _, g := range groups {
		retry := strconv.FormatBool(names.IsRetryTopic(g.Topic))
		sys := strconv.FormatBool(isSystem(g.Topic, g.Group))
		if g.Messages > 0 {
			cnt(c.messagesOut, g.Messages, g.Topic, g.Group, retry, sys)
			cnt(c.throughputOut, g.Bytes, g.Topic, g.Group, retry, sys)
		}
		if g.SentToDLQ > 0 {
			cnt(c.sendToDLQ, g.SentToDLQ, g.Topic, g.Group, sys)
		}
	}
	rpcBounds := make([]float64, len(broker.RPCLatencyBounds))
	for i, d := range broker.RPCLatencyBounds {
		rpcBounds[i] = float64(d.Milliseconds())
	}
	for _, r := range b.RPCLatencies() {
		ch <- constHistogram(c.rpcLatency.desc, rpcBounds, r.Counts[:], float64(r.Sum)/float64(time.Millisecond),
			"remoting", strings.ToLower(r.Request.String()), strings.ToLower(r.Response.String()))
	}
	nowMs := c.now().UnixMilli()
	for _, l := range b.ConsumerLags() {
		labels := []string{l.Topic, l.Group, strconv.FormatBool(l.IsRetry), strconv.FormatBool(isSystem(l.Topic, l.Group))}
		gau(c.lagMessages, float64(l.Lag), labels...)
		gau(c.lagLatency, float64(since(nowMs, l.EarliestUnconsumed)), labels...)
		gau(c.inflight, float64(l.Inflight), labels...)
		gau(c.queueingLatency, float64(since(nowMs, l.EarliestUnpulled)), labels...)
		gau(c.readyMessages, float64(l.Ready), labels...)
	}
	c.collectConnections(gau)

	st := b.Store.Stats()
	gau(c.storageSize, float64(b.Store.StorageSize()), "local", "disk")
	gau(c.flushBehind, float64(max(st.MaxPhyOffset-st.FlushedOffset, 0)), "local", "disk")
	gau(c.dispatchBehind, float64(st.DispatchLagBytes), "local", "disk")
	if t := b.Store.EarliestMessageTimeInStore(); t > 0 {
		gau(c.reserveTime, float64(since(nowMs, t)), "local", "disk")
	}
	bs := b.Stats()
	gau(c.topicNumber, float64(bs.Topics))
	gau(c.groupNumber, float64(len(b.Groups.Names())))
	for name, n := range b.ProcessorWatermarks() {
		gau(c.watermark, float64(n), name)
	}
	gau(c.brokerPermission, float64(b.Permission()))

	fh := b.Store.FlushHistograms()
	gcBounds := make([]float64, len(fh.GroupCommitCounts)-1)
	for i := range gcBounds {
		gcBounds[i] = float64(store.GroupCommitBounds[i])
	}
	ch <- constHistogram(c.groupCommit.desc, gcBounds, fh.GroupCommitCounts, float64(fh.GroupCommitSum))
	fsBounds := make([]float64, len(fh.FsyncCounts)-1)
	for i := range fsBounds {
		fsBounds[i] = store.FsyncBounds[i].Seconds()
	}
	ch <- constHistogram(c.fsyncLatency.desc, fsBounds, fh.FsyncCounts, fh.FsyncSum.Seconds())
	cnt(c.pageCacheBusy, bs.PageCacheBusy)
	if hs := b.HAServer(); hs != nil {
		hst := hs.Stats()
		for _, sl := range hst.Slaves {
			lag := st.MaxPhyOffset - sl.AckOffset
			if sl.AckOffset < 0 {
				lag = st.MaxPhyOffset
			}
			gau(c.haLag, float64(max(lag, 0)), sl.Addr)
		}
	}
	if ts, ok := b.TimerStats(); ok {
		gau(c.timerBacklog, float64(ts.Pending+ts.QueueBehind))
	}
	cl, cq, _ := b.Store.DiskRatios()
	if cl >= 0 {
		gau(c.diskRatio, cl)
	}
	if cq >= 0 {
		gau(c.cqDisk, cq)
	}
	gau(c.flushFailed, b2f(st.FlushFailed))
	gau(c.diskFull, b2f(st.DiskFull))
	if inflight, acked, revived, dlq, ok := b.PopStats(); ok {
		gau(c.popInflight, float64(inflight))
		cnt(c.popAcked, acked)
		cnt(c.popRevived, revived)
		cnt(c.popDLQ, dlq)
	}
	gau(c.indexUnavailable, b2f(st.IndexUnavailable))
	cnt(c.indexFailures, st.IndexCreateFailures)
	for topic, d := range b.Store.ForcedDeletions() {
		cnt(c.forcedMessages, d.Messages, topic)
		cnt(c.forcedBytes, d.Bytes, topic)
	}
	ls := b.LiteStats()
	for parent, n := range ls.Parents {
		gau(c.liteTopics, float64(n), parent)
	}
	gau(c.liteSubscriptions, float64(ls.Subscriptions))
}

func (c *BrokerCollector) collectConnections(gau func(metric, float64, ...string)) {
	b := c.b
	type prodKey struct{ lang, version string }
	prod := map[prodKey]int{}
	for _, g := range b.Clients.ProducerGroups() {
		for _, ch := range b.Clients.ProducerChannels(g) {
			prod[prodKey{strings.ToLower(ch.Language.String()), versionDesc(ch.Version)}]++
		}
	}
	for k, n := range prod {
		gau(c.producerConns, float64(n), k.lang, k.version, "remoting")
	}
	type consKey struct{ group, lang, version, mode string }
	cons := map[consKey]int{}
	for _, g := range b.Clients.ConsumerGroups() {
		info, ok := b.Clients.ConsumerGroup(g)
		if !ok {
			continue
		}
		mode := consumeMode(info.ConsumeType)
		for _, ch := range info.Channels {
			cons[consKey{g, strings.ToLower(ch.Language.String()), versionDesc(ch.Version), mode}]++
		}
	}
	for k, n := range cons {
		gau(c.consumerConns, float64(n), k.group, k.lang, k.version, k.mode, "remoting", strconv.FormatBool(isSystemGroup(k.group)))
	}
}

// consumeMode is RocketMQ's ConsumeType.getTypeCN in lower case: "pull"
// for CONSUME_ACTIVELY, "push" for CONSUME_PASSIVELY, "pop" for CONSUME_POP.
func consumeMode(t string) string {
	switch t {
	case "CONSUME_ACTIVELY":
		return "pull"
	case "CONSUME_PASSIVELY":
		return "push"
	case "CONSUME_POP":
		return "pop"
	}
	return strings.ToLower(t)
}

// isSystem is RocketMQ's BrokerMetricsManager.isSystem: a system topic or
// a group named CID_RMQ_SYS_*.
func isSystem(topic, group string) bool { return names.IsSystemTopic(topic) || isSystemGroup(group) }

func isSystemGroup(group string) bool {
	return strings.HasPrefix(strings.ToLower(group), "cid_rmq_sys_")
}

func since(nowMs, ts int64) int64 {
	if ts <= 0 {
		return 0
	}
	return max(nowMs-ts, 0)
}

func b2f(v bool) float64 {
	if v {
		return 1
	}
	return 0
}

// constHistogram builds a histogram from per-bucket (not cumulative)
// counts; counts has one more entry than bounds (+Inf).
func constHistogram(desc *prometheus.Desc, bounds []float64, counts []int64, sum float64, labels ...string) prometheus.Metric {
	buckets := make(map[float64]uint64, len(bounds))
	var cum uint64
	for i, ub := range bounds {
		cum += uint64(counts[i])
		buckets[ub] = cum
	}
	total := cum + uint64(counts[len(counts)-1])
	if math.IsNaN(sum) {
		sum = 0
	}
	return prometheus.MustNewConstHistogram(desc, total, sum, buckets, labels...)
}
