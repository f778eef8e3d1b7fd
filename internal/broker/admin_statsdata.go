package broker

import (
	"context"
	"sync"
	"time"

	"github.com/apogeemq/apogee/internal/protocol"
	"github.com/apogeemq/apogee/internal/remoting"
	"github.com/apogeemq/apogee/internal/run"
)

// VIEW_BROKER_STATS_DATA (315) statistics. RocketMQ's BrokerStatsManager
// counts every put and get per topic and per topic@group on the hot path
// and samples the counters every 10 s, 10 min and 1 h
// (docs/broker.md §1.16). We keep the hot path untouched: the
// counters are values the broker already has — broker-wide message totals
// (brokerStats), per topic the sum of the queues' max offsets (messages
// ever put), per topic@group the sum of committed offsets (messages
// consumed) — and a background sampler records them into three small
// rings. A window's sum is the live value minus the ring's oldest sample.
//
//	statsName          statsKey        value                     times
//	BROKER_PUT_NUMS    cluster (any)   messages stored           send requests
//	BROKER_GET_NUMS    cluster (any)   messages pulled           pulls that found messages
//	TOPIC_PUT_NUMS     topic           sum of max queue offsets  -
//	GROUP_GET_NUMS     topic@group     sum of committed offsets  -
//
// Sizes (TOPIC_PUT_SIZE, GROUP_GET_SIZE: bytes stored by sends and bytes
// pulled) come from the per-topic and per-group meters that also feed
// rocketmq_throughput_in/out_total; with metricsExporterType=DISABLE
// there are no meters and they answer SYSTEM_ERROR like any unknown
// statistic.

const (
	statsBrokerPutNums = "BROKER_PUT_NUMS"
	statsBrokerGetNums = "BROKER_GET_NUMS"
	statsTopicPutNums  = "TOPIC_PUT_NUMS"
	statsGroupGetNums  = "GROUP_GET_NUMS"
	statsTopicPutSize  = "TOPIC_PUT_SIZE" // bytes stored, from the metrics meters (meters.go)
	statsGroupGetSize  = "GROUP_GET_SIZE" // bytes pulled, from the metrics meters

	statsSampleInterval = 10 * time.Second
)

// statsPoint is one sample of a counter.
type statsPoint struct {
	at    int64 // ms since the epoch
	value int64
	times int64
}

// pointRing keeps samples at least every apart, at most size of them: the
// oldest is then about every*(size-1) old, the ring's window.
type pointRing struct {
	every time.Duration
	size  int
	pts   []statsPoint // oldest first
}

func (r *pointRing) add(p statsPoint) {
	if n := len(r.pts); n > 0 && p.at-r.pts[n-1].at < r.every.Milliseconds()-statsSampleInterval.Milliseconds()/2 {
		return
	}
	if len(r.pts) == r.size {
		copy(r.pts, r.pts[1:])
		r.pts = r.pts[:r.size-1]
	}
	r.pts = append(r.pts, p)
}

// snapshot compares live with the oldest sample.
func (r *pointRing) snapshot(live statsPoint) statsSnapshot {
	if len(r.pts) == 0 {
		return statsSnapshot{}
	}
	old := r.pts[0]
	s := statsSnapshot{Sum: max(live.value-old.value, 0)}
	if ms := live.at - old.at; ms > 0 {
		s.TPS = float64(s.Sum) * 1000 / float64(ms)
	}
	if t := live.times - old.times; t > 0 {
		s.AvgPT = float64(s.Sum) / float64(t)
	}
	return s
}

// statsSeries is one counter's minute, hour and day rings.
type statsSeries struct {
	minute, hour, day pointRing
	seen              bool // found by the latest sampling pass
}

func newStatsSeries() *statsSeries {
	return &statsSeries{
		minute: pointRing{every: statsSampleInterval, size: 7},
		hour:   pointRing{every: 10 * time.Minute, size: 7},
		day:    pointRing{every: time.Hour, size: 25},
	}
}

func (s *statsSeries) add(p statsPoint) {
	s.minute.add(p)
	s.hour.add(p)
	s.day.add(p)
}

// statsSnapshot is Java's BrokerStatsItem.
type statsSnapshot struct {
	Sum   int64   `json:"sum"`
	TPS   float64 `json:"tps"`
	AvgPT float64 `json:"avgpt"`
}

// brokerStatsData is the body of VIEW_BROKER_STATS_DATA.
type brokerStatsData struct {
	StatsMinute statsSnapshot `json:"statsMinute"`
	StatsHour   statsSnapshot `json:"statsHour"`
	StatsDay    statsSnapshot `json:"statsDay"`
}

// statsSampler holds the series; the sampling goroutine starts with the
// first VIEW_BROKER_STATS_DATA request (Broker.start is not ours to
// extend), so windows fill from then on.
type statsSampler struct {
	once sync.Once
	// mu guards series; held for one sampling pass or one lookup, never
	// while calling the store.
	mu     sync.Mutex
	series map[string]*statsSeries // statsName + "\x00" + statsKey
}

func statsSeriesKey(name, key string) string { return name + "\x00" + key }

// statsValue reads the live value of one statistic.
func (b *Broker) statsValue(name, key string) (statsPoint, bool) {
	p := statsPoint{at: b.now().UnixMilli()}
	switch name {
	case statsBrokerPutNums:
		p.value, p.times = b.stats.messagesIn.Load(), b.stats.sendRequests.Load()
	case statsBrokerGetNums:
		p.value, p.times = b.stats.messagesOut.Load(), b.stats.pullFound.Load()
	case statsTopicPutNums:
		tc, ok := b.Topics.Get(key)
		if !ok {
			return p, false
		}
		for q := range max(tc.WriteQueueNums, tc.ReadQueueNums) {
			p.value += max(b.Store.MaxOffsetInQueue(key, q), 0)
		}
	case statsGroupGetNums:
		topic, group, ok := splitTopicGroup(key)
		if !ok {
			return p, false
		}
		offsets := b.Offsets.QueryAll(group, topic)
		if len(offsets) == 0 {
			return p, false
		}
		for _, off := range offsets {
			p.value += max(off, 0)
		}
	case statsTopicPutSize:
		tm := b.meters.existingTopic(key) // meters.go
		if tm == nil {
			return p, false
		}
		for t := range tm.bytes {
			p.value += tm.bytes[t].Load()
		}
	case statsGroupGetSize:
		topic, group, ok := splitTopicGroup(key)
		if !ok {
			return p, false
		}
		gm := b.meters.existingGroup(topic, group) // meters.go
		if gm == nil {
			return p, false
		}
		p.value = gm.bytes.Load()
	default:
		return p, false
	}
	return p, true
}

func splitTopicGroup(key string) (topic, group string, ok bool) {
	for i := len(key) - 1; i >= 0; i-- {
		if key[i] == '@' {
			return key[:i], key[i+1:], i > 0 && i < len(key)-1
		}
	}
	return "", "", false
}

// sampleStats records every statistic once; series that no longer exist
// (deleted topics, groups without offsets) are dropped.
func (b *Broker) sampleStats() {
	type sample struct {
		key string
		p   statsPoint
	}
	var all []sample
	add := func(name, key string) {
		if p, ok := b.statsValue(name, key); ok {
			all = append(all, sample{statsSeriesKey(name, key), p})
		}
	}
	add(statsBrokerPutNums, b.cfg.BrokerClusterName)
	add(statsBrokerGetNums, b.cfg.BrokerClusterName)
	groups := b.Offsets.GroupsByTopic()
	for _, topic := range b.Topics.Names() {
		add(statsTopicPutNums, topic)
		add(statsTopicPutSize, topic)
		for _, g := range groups[topic] {
			add(statsGroupGetNums, topic+"@"+g)
			add(statsGroupGetSize, topic+"@"+g)
		}
	}
	s := &b.dyn.statsData
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.series == nil {
		s.series = make(map[string]*statsSeries)
	}
	for _, x := range s.series {
		x.seen = false
	}
	for _, x := range all {
		ser := s.series[x.key]
		if ser == nil {
			ser = newStatsSeries()
			s.series[x.key] = ser
		}
		ser.add(x.p)
		ser.seen = true
	}
	for k, x := range s.series {
		if !x.seen {
			delete(s.series, k)
		}
	}
}

// startStatsSampler takes the first sample and starts the sampling loop,
// once; Start calls it, and so does a 315 request (harmless repeat).
func (b *Broker) startStatsSampler() {
	b.dyn.statsData.once.Do(func() {
		b.sampleStats()
		select {
		case <-b.quit: // closing: goFunc would refuse anyway
		default:
			b.goFunc("stats-sample", b.statsSampleLoop)
		}
	})
}

// statsSampleLoop samples every statsSampleInterval until the broker closes.
func (b *Broker) statsSampleLoop() {
	run.Every(b.baseCtx, statsSampleInterval, func(context.Context) { b.sampleStats() })
}

// viewStats answers one statistic from the live value and the rings.
func (b *Broker) viewStats(name, key string) (brokerStatsData, bool) {
	if name == statsBrokerPutNums || name == statsBrokerGetNums {
		key = b.cfg.BrokerClusterName
	}
	live, ok := b.statsValue(name, key)
	if !ok {
		return brokerStatsData{}, false
	}
	s := &b.dyn.statsData
	s.mu.Lock()
	defer s.mu.Unlock()
	ser := s.series[statsSeriesKey(name, key)]
	if ser == nil {
		return brokerStatsData{}, true
	}
	return brokerStatsData{
		StatsMinute: ser.minute.snapshot(live),
		StatsHour:   ser.hour.snapshot(live),
		StatsDay:    ser.day.snapshot(live),
	}, true
}

// processViewBrokerStatsData serves VIEW_BROKER_STATS_DATA (315;
// statsName, statsKey): sum, tps and average per call over the last
// minute, hour and day (see the table above). SYSTEM_ERROR when the
// statistic does not exist.
func (b *Broker) processViewBrokerStatsData(_ context.Context, _ *remoting.Conn, req *protocol.Command) (*protocol.Command, error) {
	b.startStatsSampler()
	name, key := req.Ext("statsName"), req.Ext("statsKey")
	data, ok := b.viewStats(name, key)
	if !ok {
		return nil, protocol.Errorf(protocol.SystemError, "The stats <%s> <%s> not exist", name, key)
	}
	body, err := protocol.MarshalJSON(&data)
	if err != nil {
		return nil, err
	}
	return bodyResponse(req, body), nil
}
