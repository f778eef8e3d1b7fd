package broker

import (
	"context"
	"encoding/binary"
	"math"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apogeemq/apogee/internal/names"
	"github.com/apogeemq/apogee/internal/protocol"
	"github.com/apogeemq/apogee/internal/remoting"
	"github.com/apogeemq/apogee/internal/testutil"
)

func adminReq(code protocol.RequestCode, ext map[string]string) *protocol.Command {
	return protocol.NewRequest(code, ext, nil)
}

// TestQueryCorrectionOffset: QUERY_CORRECTION_OFFSET (docs/protocol.md §3.7)
// answers per queue the smallest offset of the topic's groups, without
// filterGroups, and Long.MAX_VALUE where that is beyond compareGroup.
func TestQueryCorrectionOffset(t *testing.T) {
	b := startBroker(t, testConfig(t, t.TempDir()))
	c := newClient(t)
	for range 3 {
		mustCode(t, invoke(t, c, b.Addr(), sendReq("Corr", 0, []byte("m"), nil)), protocol.Success)
		mustCode(t, invoke(t, c, b.Addr(), sendReq("Corr", 1, []byte("m"), nil)), protocol.Success)
	}
	waitDispatched(t, b, "Corr", 1, 3)
	b.Offsets.Commit("slow", "Corr", 0, 1)
	b.Offsets.Commit("slow", "Corr", 1, 2)
	b.Offsets.Commit("fast", "Corr", 0, 3)
	b.Offsets.Commit("fast", "Corr", 1, 3)
	b.Offsets.Commit("cmp", "Corr", 0, 0)
	tests := []struct {
		name   string
		ext    map[string]string
		want   map[int32]int64
		status protocol.ResponseCode
	}{
		{name: "min over groups", ext: map[string]string{"topic": "Corr", "compareGroup": "fast"},
			want: map[int32]int64{0: 0, 1: 2}},
		{name: "filtered", ext: map[string]string{"topic": "Corr", "compareGroup": "fast", "filterGroups": "slow,cmp"},
			want: map[int32]int64{0: 3, 1: 3}},
		{name: "compare group behind", ext: map[string]string{"topic": "Corr", "compareGroup": "cmp", "filterGroups": "cmp"},
			want: map[int32]int64{0: math.MaxInt64, 1: 2}},
		{name: "missing topic", ext: map[string]string{"compareGroup": "x"}, status: protocol.InvalidParameter},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			resp := invoke(t, c, b.Addr(), adminReq(protocol.QueryCorrectionOffset, tc.ext))
			if tc.status != protocol.Success {
				mustCode(t, resp, tc.status)
				return
			}
			mustCode(t, resp, protocol.Success)
			var body struct {
				CorrectionOffsets map[int32]int64 `json:"correctionOffsets"`
			}
			if err := protocol.UnmarshalFastJSON(resp.Body, &body); err != nil {
				t.Fatal(err)
			}
			if len(body.CorrectionOffsets) != len(tc.want) {
				t.Fatalf("offsets = %v, want %v", body.CorrectionOffsets, tc.want)
			}
			for q, off := range tc.want {
				if body.CorrectionOffsets[q] != off {
					t.Fatalf("queue %d = %d, want %d (all %v)", q, body.CorrectionOffsets[q], off, body.CorrectionOffsets)
				}
			}
		})
	}
}

// TestQueryConsumeQueue: QUERY_CONSUME_QUEUE lists units (commit-log
// offset, size, tag hash) and evaluates the group's tag filter.
func TestQueryConsumeQueue(t *testing.T) {
	b := startBroker(t, testConfig(t, t.TempDir()))
	c := newClient(t)
	for i, tag := range []string{"a", "b", "a"} {
		mustCode(t, invoke(t, c, b.Addr(), sendReq("CQ", 0, []byte("body-"+strconv.Itoa(i)), map[string]string{"TAGS": tag})), protocol.Success)
	}
	waitDispatched(t, b, "CQ", 0, 3)
	body, _ := protocol.MarshalJSON(&protocol.HeartbeatData{ClientID: "cq-client", ConsumerDataSet: []protocol.ConsumerData{{
		GroupName: "cqg", ConsumeType: protocol.ConsumePassively, MessageModel: protocol.MessageModelClustering,
		ConsumeFromWhere:    protocol.ConsumeFromLastOffset,
		SubscriptionDataSet: []protocol.SubscriptionData{{Topic: "CQ", SubString: "a", TagsSet: []string{"a"}, CodeSet: []int32{int32('a')}}},
	}}})
	mustCode(t, invoke(t, c, b.Addr(), protocol.NewRequest(protocol.HeartBeat, nil, body)), protocol.Success)
	tests := []struct {
		name     string
		ext      map[string]string
		units    int
		evals    []bool
		code     protocol.ResponseCode
		firstPhy int64
	}{
		{name: "all", ext: map[string]string{"topic": "CQ", "queueId": "0", "index": "0", "count": "10"}, units: 3},
		{name: "window", ext: map[string]string{"topic": "CQ", "queueId": "0", "index": "1", "count": "1"}, units: 1, firstPhy: -1},
		{name: "with group", ext: map[string]string{"topic": "CQ", "queueId": "0", "index": "0", "count": "3", "consumerGroup": "cqg"},
			units: 3, evals: []bool{true, false, true}},
		{name: "unknown topic", ext: map[string]string{"topic": "Nope", "queueId": "0", "index": "0", "count": "1"}, code: protocol.SystemError},
		{name: "bad index", ext: map[string]string{"topic": "CQ", "queueId": "0", "index": "x", "count": "1"}, code: protocol.InvalidParameter},
	}
	var phy0 int64 = -1
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			resp := invoke(t, c, b.Addr(), adminReq(protocol.QueryConsumeQueue, tc.ext))
			if tc.code != protocol.Success {
				mustCode(t, resp, tc.code)
				return
			}
			mustCode(t, resp, protocol.Success)
			var out queryConsumeQueueBody
			if err := protocol.UnmarshalFastJSON(resp.Body, &out); err != nil {
				t.Fatal(err)
			}
			if len(out.QueueData) != tc.units || out.MaxQueueIndex != 3 || out.MinQueueIndex != 0 {
				t.Fatalf("body = %s", resp.Body)
			}
			for i, d := range out.QueueData {
				if d.PhysicSize <= 0 || d.PhysicOffset < 0 {
					t.Fatalf("unit %d = %+v", i, d)
				}
				if i > 0 && d.PhysicOffset <= out.QueueData[i-1].PhysicOffset {
					t.Fatalf("units out of order: %s", resp.Body)
				}
			}
			if tc.name == "all" {
				phy0 = out.QueueData[0].PhysicOffset
				if out.QueueData[0].TagsCode != int64('a') || out.QueueData[1].TagsCode != int64('b') {
					t.Fatalf("tags codes: %s", resp.Body)
				}
			}
			if tc.firstPhy == -1 && out.QueueData[0].PhysicOffset <= phy0 {
				t.Fatalf("index 1 starts at %d, not after unit 0 (%d)", out.QueueData[0].PhysicOffset, phy0)
			}
			if tc.evals != nil {
				if out.SubscriptionData == nil || out.FilterData != "a" {
					t.Fatalf("subscription missing: %s", resp.Body)
				}
				for i, want := range tc.evals {
					if out.QueueData[i].Eval != want {
						t.Fatalf("unit %d eval = %v, want %v", i, out.QueueData[i].Eval, want)
					}
				}
			}
		})
	}
}

// TestViewBrokerStatsData: VIEW_BROKER_STATS_DATA answers sums over the
// sampled window for broker, topic and topic@group statistics and
// SYSTEM_ERROR for unknown ones; the rings are exercised with a fake clock.
func TestViewBrokerStatsData(t *testing.T) {
	// The clock runs skew ahead of real time; set before Start (the
	// broker's goroutines read b.now).
	var skew atomic.Int64
	b, err := New(testConfig(t, t.TempDir()), testutil.Logger(t))
	if err != nil {
		t.Fatal(err)
	}
	b.now = func() time.Time { return time.Now().Add(time.Duration(skew.Load())) }
	if err := b.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	c := newClient(t)
	mustCode(t, invoke(t, c, b.Addr(), sendReq("St", 0, []byte("x"), nil)), protocol.Success)
	waitDispatched(t, b, "St", 0, 1)
	b.Offsets.Commit("sg", "St", 0, 1)
	view := func(name, key string) (brokerStatsData, *protocol.Command) {
		t.Helper()
		resp := invoke(t, c, b.Addr(), adminReq(protocol.ViewBrokerStatsData, map[string]string{"statsName": name, "statsKey": key}))
		var d brokerStatsData
		if resp.Code == int32(protocol.Success) {
			if err := protocol.UnmarshalFastJSON(resp.Body, &d); err != nil {
				t.Fatal(err)
			}
		}
		return d, resp
	}
	// Start took the first sample (before topic St existed); this one is
	// the topic's baseline: nothing yet.
	b.sampleStats()
	if d, resp := view(statsTopicPutNums, "St"); resp.Code != int32(protocol.Success) || d.StatsMinute.Sum != 0 {
		t.Fatalf("first view: %d %s", resp.Code, resp.Body)
	}
	for range 4 {
		mustCode(t, invoke(t, c, b.Addr(), sendReq("St", 0, []byte("x"), nil)), protocol.Success)
	}
	waitDispatched(t, b, "St", 0, 5)
	b.Offsets.Commit("sg", "St", 0, 3)
	skew.Add(int64(20 * time.Second))
	tests := []struct {
		name, key string
		minuteSum int64
		code      protocol.ResponseCode
	}{
		{name: statsTopicPutNums, key: "St", minuteSum: 4},
		{name: statsGroupGetNums, key: "St@sg", minuteSum: 2},
		{name: statsBrokerPutNums, key: "DefaultCluster", minuteSum: 5}, // its baseline is Start's sample
		{name: statsTopicPutNums, key: "NoSuchTopic", code: protocol.SystemError},
		{name: "TOPIC_PUT_SIZE", key: "NoSuchTopic", code: protocol.SystemError},
		{name: statsGroupGetNums, key: "St@nobody", code: protocol.SystemError},
	}
	// TOPIC_PUT_SIZE: the bytes of the four stored records (same size each).
	if d, resp := view(statsTopicPutSize, "St"); resp.Code != int32(protocol.Success) || d.StatsMinute.Sum <= 0 || d.StatsMinute.Sum%4 != 0 {
		t.Fatalf("TOPIC_PUT_SIZE: %d %s", resp.Code, resp.Body)
	}
	for _, tc := range tests {
		t.Run(tc.name+"/"+tc.key, func(t *testing.T) {
			d, resp := view(tc.name, tc.key)
			if tc.code != protocol.Success {
				mustCode(t, resp, tc.code)
				return
			}
			mustCode(t, resp, protocol.Success)
			if d.StatsMinute.Sum != tc.minuteSum || d.StatsHour.Sum != tc.minuteSum || d.StatsDay.Sum != tc.minuteSum {
				t.Fatalf("stats = %s, want sums %d", resp.Body, tc.minuteSum)
			}
			if want := float64(tc.minuteSum) / 20; math.Abs(d.StatsMinute.TPS-want) > want*0.05 {
				t.Fatalf("tps = %v, want %v", d.StatsMinute.TPS, want)
			}
		})
	}
	if d, _ := view(statsBrokerPutNums, "x"); d.StatsMinute.AvgPT != 1 {
		t.Fatalf("avgpt = %v, want 1 message per send", d.StatsMinute.AvgPT)
	}
	// Sampling every 10 s for 2 minutes: the minute window slides, the
	// hour and day windows still reach the baseline.
	for range 12 {
		skew.Add(int64(statsSampleInterval))
		b.sampleStats()
	}
	d, _ := view(statsTopicPutNums, "St")
	if d.StatsMinute.Sum != 0 || d.StatsHour.Sum != 4 || d.StatsDay.Sum != 4 {
		t.Fatalf("after 2 idle minutes: %+v", d)
	}
}

// TestPointRing: rings keep one sample per interval and at most size.
func TestPointRing(t *testing.T) {
	r := pointRing{every: 10 * time.Minute, size: 3}
	for i := range 100 {
		r.add(statsPoint{at: int64(i) * 60_000, value: int64(i)})
	}
	if len(r.pts) != 3 || r.pts[2].at-r.pts[1].at != 600_000 {
		t.Fatalf("ring = %+v", r.pts)
	}
	s := r.snapshot(statsPoint{at: 99 * 60_000, value: 99, times: 0})
	if s.Sum != 99-r.pts[0].value || s.AvgPT != 0 {
		t.Fatalf("snapshot = %+v", s)
	}
}

// TestTimerCheckPointAndMetrics: GET_TIMER_CHECK_POINT answers the 56-byte
// TimerCheckpoint layout and GET_TIMER_METRICS counts waiting timers per
// real topic; both fail with SYSTEM_ERROR when the wheel is off.
func TestTimerCheckPointAndMetrics(t *testing.T) {
	cfg := testConfig(t, t.TempDir())
	cfg.TimerPrecisionMs = 100
	cfg.TimerFlushIntervalMs = 100
	cfg.MappedFileSizeTimerLog = 64 << 10
	b := startBroker(t, cfg)
	c := newClient(t)
	for range 2 {
		mustCode(t, invoke(t, c, b.Addr(), sendReq("Later", 0, []byte("x"), map[string]string{"TIMER_DELAY_SEC": "3600"})), protocol.Success)
	}
	mustCode(t, invoke(t, c, b.Addr(), sendReq("Later2", 0, []byte("x"), map[string]string{"TIMER_DELAY_SEC": "3600"})), protocol.Success)
	waitDispatched(t, b, names.TopicTimerWheel, 0, 3)
	testutil.Eventually(t, 5*time.Second, func() bool { st, _ := b.TimerStats(); return st.QueueOffset == 3 }, "timers not enqueued")

	resp := invoke(t, c, b.Addr(), adminReq(protocol.GetTimerCheckPoint, nil))
	mustCode(t, resp, protocol.Success)
	if len(resp.Body) != timerCheckpointSize {
		t.Fatalf("checkpoint is %d bytes", len(resp.Body))
	}
	readMs := int64(binary.BigEndian.Uint64(resp.Body))
	if readMs <= 0 || binary.BigEndian.Uint64(resp.Body[16:]) != 3 || binary.BigEndian.Uint64(resp.Body[24:]) != 3 {
		t.Fatalf("checkpoint = %x", resp.Body)
	}

	resp = invoke(t, c, b.Addr(), adminReq(protocol.GetTimerMetrics, nil))
	mustCode(t, resp, protocol.Success)
	var m struct {
		TimingCount map[string]timerMetric `json:"timingCount"`
		DataVersion protocol.DataVersion   `json:"dataVersion"`
	}
	if err := protocol.UnmarshalFastJSON(resp.Body, &m); err != nil {
		t.Fatal(err)
	}
	if m.TimingCount["Later"].Count != 2 || m.TimingCount["Later2"].Count != 1 || len(m.TimingCount) != 2 {
		t.Fatalf("metrics = %s", resp.Body)
	}

	cfg2 := testConfig(t, t.TempDir())
	cfg2.TimerWheelEnable = false
	b2 := startBroker(t, cfg2)
	for _, code := range []protocol.RequestCode{protocol.GetTimerCheckPoint, protocol.GetTimerMetrics} {
		mustCode(t, invoke(t, c, b2.Addr(), adminReq(code, nil)), protocol.SystemError)
	}
}

// TestGetConsumerStatus: INVOKE_BROKER_TO_GET_CONSUMER_STATUS asks every
// consumer of the group (221) and collects the tables by client id; the
// clientAddr filter asks only one; a group without consumers fails.
func TestGetConsumerStatus(t *testing.T) {
	b := startBroker(t, testConfig(t, t.TempDir()))
	ids := []string{"client-a", "client-b"}
	for i, id := range ids {
		cl := newClient(t)
		cl.RegisterProcessor(protocol.GetConsumerStatusFromClient, func(_ context.Context, _ *remoting.Conn, req *protocol.Command) (*protocol.Command, error) {
			if req.Ext("topic") == "Broken" && i == 1 {
				return nil, protocol.Errorf(protocol.SystemError, "the consumer group csg not exist in this consumer")
			}
			fe := []protocol.FastJSONEntry{{Key: protocol.MessageQueue{Topic: req.Ext("topic"), BrokerName: "broker-a", QueueID: int32(i)}, Value: int64(10 + i)}}
			body, err := protocol.AppendObjectKeyMap([]byte(`{"messageQueueTable":`), fe)
			if err != nil {
				return nil, err
			}
			resp := protocol.NewResponse(req, protocol.Success, "")
			resp.Body = append(body, '}')
			return resp, nil
		})
		hb, _ := protocol.MarshalJSON(&protocol.HeartbeatData{ClientID: id, ConsumerDataSet: []protocol.ConsumerData{{
			GroupName: "csg", ConsumeType: protocol.ConsumePassively, MessageModel: protocol.MessageModelClustering,
			ConsumeFromWhere: protocol.ConsumeFromLastOffset, SubscriptionDataSet: []protocol.SubscriptionData{{Topic: "T", SubString: "*"}},
		}}})
		mustCode(t, invoke(t, cl, b.Addr(), protocol.NewRequest(protocol.HeartBeat, nil, hb)), protocol.Success)
	}
	admin := newClient(t)
	tests := []struct {
		name string
		ext  map[string]string
		want map[string]int64 // client id -> its one offset
		code protocol.ResponseCode
	}{
		{name: "every client", ext: map[string]string{"topic": "T", "group": "csg"}, want: map[string]int64{"client-a": 10, "client-b": 11}},
		{name: "one client", ext: map[string]string{"topic": "T", "group": "csg", "clientAddr": "client-b"}, want: map[string]int64{"client-b": 11}},
		{name: "failing client left out", ext: map[string]string{"topic": "Broken", "group": "csg"}, want: map[string]int64{"client-a": 10}},
		{name: "no consumer", ext: map[string]string{"topic": "T", "group": "nobody"}, code: protocol.SystemError},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			resp := invoke(t, admin, b.Addr(), adminReq(protocol.InvokeBrokerToGetConsumerStatus, tc.ext))
			if tc.code != protocol.Success {
				mustCode(t, resp, tc.code)
				return
			}
			mustCode(t, resp, protocol.Success)
			if _, ok := tc.want["client-a"]; ok && !strings.Contains(string(resp.Body), `{"topic":"`+tc.ext["topic"]+`","brokerName":"broker-a","queueId":0}:10`) {
				t.Fatalf("body lacks the object-keyed queue: %s", resp.Body)
			}
			var out struct {
				ConsumerTable map[string]map[string]int64 `json:"consumerTable"`
			}
			if err := protocol.UnmarshalFastJSON(resp.Body, &out); err != nil {
				t.Fatal(err)
			}
			if len(out.ConsumerTable) != len(tc.want) {
				t.Fatalf("table = %s", resp.Body)
			}
			for id, off := range tc.want {
				if len(out.ConsumerTable[id]) != 1 {
					t.Fatalf("client %s: %s", id, resp.Body)
				}
				for _, got := range out.ConsumerTable[id] {
					if got != off {
						t.Fatalf("client %s offset %d, want %d", id, got, off)
					}
				}
			}
		})
	}
}
