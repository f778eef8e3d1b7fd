package broker

import (
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/apogeemq/apogee/internal/message"
	"github.com/apogeemq/apogee/internal/names"
	"github.com/apogeemq/apogee/internal/protocol"
	"github.com/apogeemq/apogee/internal/store"
)

// The tables below hold the answers RocketMQ 5's processors give, in their
// order of checks (ConsumerManageProcessor, PullMessageProcessor with
// DefaultPullMessageResultHandler and the store's offset correction,
// SendMessageProcessor's msgCheck and the commit log's batch checks). A
// row names the request and the code, remark and header fields the Java
// broker answers with.

// answer is what a conformance row expects: the code, the remark (exactly,
// or as a prefix when it ends in "*") and some ext fields.
type answer struct {
	code   protocol.ResponseCode
	remark string
	ext    map[string]string
}

func checkAnswer(t *testing.T, resp *protocol.Command, want answer) {
	t.Helper()
	mustCode(t, resp, want.code)
	if p, ok := strings.CutSuffix(want.remark, "*"); ok {
		if !strings.HasPrefix(resp.Remark, p) {
			t.Errorf("remark %q, want prefix %q", resp.Remark, p)
		}
	} else if want.remark != "-" && resp.Remark != want.remark {
		t.Errorf("remark %q, want %q", resp.Remark, want.remark)
	}
	for k, v := range want.ext {
		if got := resp.Ext(k); got != v {
			t.Errorf("%s = %q, want %q", k, got, v)
		}
	}
}

func offsetReq(code protocol.RequestCode, fields ...string) *protocol.Command {
	ext := map[string]string{}
	for i := 0; i+1 < len(fields); i += 2 {
		ext[fields[i]] = fields[i+1]
	}
	return protocol.NewRequest(code, ext, nil)
}

// TestConsumerManageConformance: QUERY_CONSUMER_OFFSET,
// UPDATE_CONSUMER_OFFSET and GET_CONSUMER_LIST_BY_GROUP.
func TestConsumerManageConformance(t *testing.T) {
	b := startBroker(t, testConfig(t, t.TempDir()))
	c := newClient(t)
	mustCode(t, invoke(t, c, b.Addr(), sendReq("CM", 0, []byte("x"), nil)), protocol.Success)
	waitDispatched(t, b, "CM", 0, 1)
	if _, _, err := b.Groups.FindOrCreate("G", true); err != nil {
		t.Fatal(err)
	}
	q, u := protocol.QueryConsumerOffset, protocol.UpdateConsumerOffset
	tests := []struct {
		name string
		req  *protocol.Command
		want answer
	}{
		{"query: no offset, young queue", offsetReq(q, "consumerGroup", "G", "topic", "CM", "queueId", "0"),
			answer{protocol.Success, "", map[string]string{"offset": "0"}}},
		{"query: setZeroIfNotFound=false", offsetReq(q, "consumerGroup", "G", "topic", "CM", "queueId", "0", "setZeroIfNotFound", "false"),
			answer{protocol.QueryNotFound, "Not found, do not set to zero, maybe this group boot first", nil}},
		{"query: setZeroIfNotFound not a boolean reads false", offsetReq(q, "consumerGroup", "G", "topic", "CM", "queueId", "0", "setZeroIfNotFound", "yes"),
			answer{protocol.QueryNotFound, "Not found, do not set to zero, maybe this group boot first", nil}},
		{"query: queueId missing", offsetReq(q, "consumerGroup", "G", "topic", "CM"),
			answer{protocol.SystemError, "the custom field <queueId> is null", nil}},
		{"update: group missing", offsetReq(u, "consumerGroup", "NoSuchGroup", "topic", "CM", "queueId", "0", "commitOffset", "1"),
			answer{protocol.SubscriptionGroupNotExist, "Group NoSuchGroup not exist!", nil}},
		{"update: group checked before fields", offsetReq(u, "consumerGroup", "NoSuchGroup", "topic", "NoSuchTopic", "queueId", "x", "commitOffset", "1"),
			answer{protocol.SubscriptionGroupNotExist, "Group NoSuchGroup not exist!", nil}},
		{"update: topic missing", offsetReq(u, "consumerGroup", "G", "topic", "NoSuchTopic", "queueId", "0", "commitOffset", "1"),
			answer{protocol.TopicNotExist, "Topic NoSuchTopic not exist!", nil}},
		{"update: queueId not a number", offsetReq(u, "consumerGroup", "G", "topic", "CM", "queueId", "x", "commitOffset", "1"),
			answer{protocol.InvalidParameter, "QueueId is null, topic is CM", nil}},
		{"update: commitOffset not a number", offsetReq(u, "consumerGroup", "G", "topic", "CM", "queueId", "0", "commitOffset", "x"),
			answer{protocol.InvalidParameter, "Offset is null, topic is CM", nil}},
		{"update: commitOffset missing", offsetReq(u, "consumerGroup", "G", "topic", "CM", "queueId", "0"),
			answer{protocol.SystemError, "the custom field <commitOffset> is null", nil}},
		{"update: ok", offsetReq(u, "consumerGroup", "G", "topic", "CM", "queueId", "0", "commitOffset", "1"),
			answer{protocol.Success, "", nil}},
		{"query: the committed offset", offsetReq(q, "consumerGroup", "G", "topic", "CM", "queueId", "0", "setZeroIfNotFound", "false"),
			answer{protocol.Success, "", map[string]string{"offset": "1"}}},
		{"consumer list: no consumer", offsetReq(protocol.GetConsumerListByGroup, "consumerGroup", "G"),
			answer{protocol.SystemError, "no consumer for this group, G", nil}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			checkAnswer(t, invoke(t, c, b.Addr(), tc.req), tc.want)
		})
	}
	if _, ok := b.Groups.Get("NoSuchGroup"); ok {
		t.Error("UPDATE_CONSUMER_OFFSET created the group")
	}
}

// TestPullConformance: PullMessageProcessor's checks and offset correction
// on a master and on slaves.
func TestPullConformance(t *testing.T) {
	cfg := testConfig(t, t.TempDir())
	cfg.AutoCreateSubscriptionGroup = false
	b := startBroker(t, cfg)
	c := newClient(t)
	ct := protocol.CreateTopicRequestHeader{Topic: "PT", ReadQueueNums: 2, WriteQueueNums: 2, Perm: 6}
	mustCode(t, invoke(t, c, b.Addr(), protocol.NewRequest(protocol.UpdateAndCreateTopic, protocol.EncodeHeader(&ct, false), nil)), protocol.Success)
	for range 3 {
		mustCode(t, invoke(t, c, b.Addr(), sendReq("PT", 0, []byte("x"), nil)), protocol.Success)
	}
	waitDispatched(t, b, "PT", 0, 3)
	g, _, err := b.Groups.FindOrCreate("PG", true)
	if err != nil {
		t.Fatal(err)
	}
	g.BrokerID = 1 // only read with slaveReadEnable
	if err := b.Groups.Update(g); err != nil {
		t.Fatal(err)
	}
	sub := int32(protocol.PullFlagSubscription)
	lite := func(r *protocol.Command) *protocol.Command { r.Code = int32(protocol.LitePullMessage); return r }
	tests := []struct {
		name string
		req  *protocol.Command
		want answer
	}{
		{"found", pullReq("PG", "PT", 0, 0, sub, 0, "*"),
			answer{protocol.Success, "FOUND", map[string]string{"nextBeginOffset": "3", "suggestWhichBrokerId": "0"}}},
		{"offset == max", pullReq("PG", "PT", 0, 3, sub, 0, "*"),
			answer{protocol.PullNotFound, "OFFSET_OVERFLOW_ONE", map[string]string{"nextBeginOffset": "3"}}},
		{"offset > max, queue from 0: corrected to max", pullReq("PG", "PT", 0, 9, sub, 0, "*"),
			answer{protocol.PullOffsetMoved, "OFFSET_OVERFLOW_BADLY", map[string]string{"nextBeginOffset": "3", "maxOffset": "3"}}},
		{"configured queue never written, offset 0", pullReq("PG", "PT", 1, 0, sub, 0, "*"),
			answer{protocol.PullNotFound, "NO_MESSAGE_IN_QUEUE", map[string]string{"nextBeginOffset": "0"}}},
		{"configured queue never written, offset 5", pullReq("PG", "PT", 1, 5, sub, 0, "*"),
			answer{protocol.PullOffsetMoved, "NO_MESSAGE_IN_QUEUE", map[string]string{"nextBeginOffset": "0"}}},
		{"group missing", pullReq("NoGroup", "PT", 0, 0, sub, 0, "*"),
			answer{protocol.SubscriptionGroupNotExist, "subscription group [NoGroup] does not exist, " + faqSuffix, nil}},
		{"topic missing", pullReq("PG", "NoTopic", 0, 0, sub, 0, "*"),
			answer{protocol.TopicNotExist, "topic[NoTopic] not exist, apply first please! " + faqSuffix, nil}},
		{"queueId out of range", pullReq("PG", "PT", 2, 0, sub, 0, "*"),
			answer{protocol.InvalidParameter, "queueId[2] is illegal, topic:[PT] topicConfig.readQueueNums:[2] consumer:[*", nil}},
		{"no subscription flag, no heartbeat", pullReq("PG", "PT", 0, 0, 0, 0, ""),
			answer{protocol.SubscriptionNotExist, "the consumer's group info not exist" + faqSuffix, nil}},
		{"SQL92 with property filtering off", sqlPullReq("PG", "PT", 0, "a > 1"),
			answer{protocol.SystemError, "The broker does not support consumer to filter message by SQL92", nil}},
		{"lite pull served", lite(pullReq("PG", "PT", 0, 0, sub, 0, "*")),
			answer{protocol.Success, "FOUND", nil}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			checkAnswer(t, invoke(t, c, b.Addr(), tc.req), tc.want)
		})
	}

	t.Run("lite pull disabled", func(t *testing.T) {
		cfg := testConfig(t, t.TempDir())
		cfg.LitePullMessageEnable = false
		nb := startBroker(t, cfg)
		checkAnswer(t, invoke(t, c, nb.Addr(), lite(pullReq("g", names.TopicSelfTest, 0, 0, sub, 0, "*"))),
			answer{protocol.NoPermission, "the broker[" + nb.addr + "] for lite pull consumer is forbidden",
				map[string]string{"forbiddenType": "1"}})
	})
	slave := func(t *testing.T, read bool) *Broker {
		cfg := testConfig(t, t.TempDir())
		cfg.BrokerID = 1
		cfg.Store.BrokerRole = store.RoleSlave
		cfg.SlaveReadEnable = read
		return startBroker(t, cfg)
	}
	t.Run("slave without slaveReadEnable", func(t *testing.T) {
		s := slave(t, false)
		checkAnswer(t, invoke(t, c, s.Addr(), pullReq("g", names.TopicSelfTest, 0, 5, sub, 0, "*")),
			answer{protocol.SystemBusy, "[REJECTREQUEST]system busy, start flow control for a while", nil})
	})
	t.Run("slave does not correct offsets", func(t *testing.T) {
		s := slave(t, true)
		checkAnswer(t, invoke(t, c, s.Addr(), pullReq("g", names.TopicSelfTest, 0, 5, sub, 0, "*")),
			answer{protocol.PullRetryImmediately, "NO_MESSAGE_IN_QUEUE",
				map[string]string{"nextBeginOffset": "5", "suggestWhichBrokerId": "0"}})
	})
}

// batchReq is a SEND_BATCH_MESSAGE of n small messages.
func batchReq(topic string, sysFlag int32, props map[string]string, n int) *protocol.Command {
	msgs := make([]message.Message, n)
	for i := range msgs {
		msgs[i] = message.Message{Topic: topic, Body: []byte("m" + strconv.Itoa(i))}
	}
	h := protocol.SendMessageRequestHeader{
		ProducerGroup: "pg", Topic: topic, DefaultTopic: names.TopicAutoCreate, DefaultTopicQueueNums: 4,
		QueueID: 0, SysFlag: sysFlag, BornTimestamp: 1, Properties: message.EncodeProperties(props), Batch: true,
	}
	return protocol.NewRequest(protocol.SendBatchMessage, protocol.EncodeHeader(&h, true), message.EncodeBatch(msgs))
}

// TestSendConformance: SendMessageProcessor's msgCheck and the store's
// batch and size checks.
func TestSendConformance(t *testing.T) {
	cfg := testConfig(t, t.TempDir())
	b := startBroker(t, cfg)
	c := newClient(t)
	create := func(topic string, perm int32, order bool) {
		ct := protocol.CreateTopicRequestHeader{Topic: topic, ReadQueueNums: 1, WriteQueueNums: 1, Perm: perm, Order: order}
		mustCode(t, invoke(t, c, b.Addr(), protocol.NewRequest(protocol.UpdateAndCreateTopic, protocol.EncodeHeader(&ct, false), nil)), protocol.Success)
	}
	create("ST", 6, false)
	create("ST_RO", 4, false)
	create("ST_ORDER", 6, true)
	brokerPerm := func(p int) func() {
		return func() {
			mustCode(t, invoke(t, c, b.Addr(), protocol.NewRequest(protocol.UpdateBrokerConfig, nil,
				[]byte("brokerPermission="+strconv.Itoa(p)+"\n"))), protocol.Success)
		}
	}
	illegal := messageIllegalRemark(cfg.Store.MaxMessageSize)
	long := strings.Repeat("t", names.MaxTopicLength+1)
	tests := []struct {
		name   string
		before func()
		req    *protocol.Command
		want   answer
	}{
		{"batch", nil, batchReq("ST", 0, nil, 3), answer{protocol.Success, "", nil}},
		{"batch marked transaction prepared", nil, batchReq("ST", message.SysFlagTransactionPreparedType, nil, 2),
			answer{protocol.MessageIllegal, illegal, nil}},
		{"batch marked transaction commit", nil, batchReq("ST", message.SysFlagTransactionCommitType, nil, 2),
			answer{protocol.MessageIllegal, illegal, nil}},
		{"batch with a delay level", nil, batchReq("ST", 0, map[string]string{message.PropertyDelayTimeLevel: "3"}, 2),
			answer{protocol.MessageIllegal, illegal, nil}},
		{"batch to a retry topic", nil, batchReq("%RETRY%G", 0, nil, 2),
			answer{protocol.MessageIllegal, "batch request does not support retry group %RETRY%G", nil}},
		{"body over maxMessageSize", nil, sendReq("ST", 0, make([]byte, cfg.Store.MaxMessageSize+1), nil),
			answer{protocol.MessageIllegal, illegal, nil}},
		{"topic with illegal characters", nil, sendReq("bad topic!", 0, []byte("x"), nil),
			answer{protocol.InvalidParameter, "The specified topic: bad topic!, contains illegal characters, allowing only ^[%|a-zA-Z0-9_-]+$", nil}},
		{"topic too long", nil, sendReq(long, 0, []byte("x"), nil),
			answer{protocol.InvalidParameter, "The specified topic: " + long + ", is longer than topic max length: 127", nil}},
		{"system topic", nil, sendReq(names.TopicSchedule, 0, []byte("x"), nil),
			answer{protocol.NoPermission, "Sending message to topic[" + names.TopicSchedule + "] is forbidden.", nil}},
		{"no template", nil, protocol.NewRequest(protocol.SendMessage, protocol.EncodeHeader(&protocol.SendMessageRequestHeader{
			ProducerGroup: "pg", Topic: "NoTemplate", BornTimestamp: 1}, false), []byte("x")),
			answer{protocol.TopicNotExist, "topic[NoTemplate] not exist, apply first please!" + faqSuffix, nil}},
		{"queue out of range", nil, sendReq("ST", 5, []byte("x"), nil),
			answer{protocol.InvalidParameter, "request queueId[5] is illegal, TopicConfig [topicName=ST, readQueueNums=1, writeQueueNums=1, perm=RW-, topicFilterType=SINGLE_TAG, topicSysFlag=0, order=false, attributes={}] Producer: 127.0.0.1:*", nil}},
		{"read-only topic: the route stops producers, not the broker", nil, sendReq("ST_RO", 0, []byte("x"), nil),
			answer{protocol.Success, "", nil}},
		{"read-only broker, ordered topic", brokerPerm(4), sendReq("ST_ORDER", 0, []byte("x"), nil),
			answer{protocol.NoPermission, "the broker[" + b.addr + "] sending message is forbidden", nil}},
		{"read-only broker, other topic: in-flight sends land", nil, sendReq("ST", 0, []byte("x"), nil),
			answer{protocol.Success, "", nil}},
		{"writable again", brokerPerm(6), sendReq("ST_ORDER", 0, []byte("x"), nil),
			answer{protocol.Success, "", nil}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if tc.before != nil {
				tc.before()
			}
			checkAnswer(t, invoke(t, c, b.Addr(), tc.req), tc.want)
		})
	}
}

// TestQueueFastFailure: the pull, lite pull, heartbeat, transaction, ack
// and admin queues fail requests that waited past their
// waitTimeMillsIn*Queue with SYSTEM_BUSY [TIMEOUT_CLEAN_QUEUE] (RocketMQ 5's
// BrokerFastFailure; waitTimeMillsInPullQueue used to be read nowhere), and
// the limits and the switch change at run time through UPDATE_BROKER_CONFIG.
func TestQueueFastFailure(t *testing.T) {
	cfg := testConfig(t, t.TempDir())
	cfg.WaitTimeMillsInPullQueue = time.Nanosecond
	cfg.WaitTimeMillsInLitePullQueue = time.Nanosecond
	cfg.WaitTimeMillsInHeartbeatQueue = time.Nanosecond
	cfg.WaitTimeMillsInTransactionQueue = time.Nanosecond
	cfg.WaitTimeMillsInAckQueue = time.Nanosecond
	b := startBroker(t, cfg)
	c := newClient(t)
	lite := pullReq("g", names.TopicSelfTest, 0, 0, protocol.PullFlagSubscription, 0, "*")
	lite.Code = int32(protocol.LitePullMessage)
	hb, err := protocol.MarshalJSON(&protocol.HeartbeatData{ClientID: "c1"})
	if err != nil {
		t.Fatal(err)
	}
	update := func(body string) {
		t.Helper()
		mustCode(t, invoke(t, c, b.Addr(), protocol.NewRequest(protocol.UpdateBrokerConfig, nil, []byte(body))), protocol.Success)
	}
	reqs := []struct {
		name string
		req  func() *protocol.Command
	}{
		{"pull", func() *protocol.Command {
			return pullReq("g", names.TopicSelfTest, 0, 0, protocol.PullFlagSubscription, 0, "*")
		}},
		{"lite pull", func() *protocol.Command { return protocol.NewRequest(protocol.LitePullMessage, lite.ExtFields, nil) }},
		{"heartbeat", func() *protocol.Command { return protocol.NewRequest(protocol.HeartBeat, nil, hb) }},
		{"end transaction", func() *protocol.Command {
			return protocol.NewRequest(protocol.EndTransaction, map[string]string{"producerGroup": "pg"}, nil)
		}},
		{"ack", func() *protocol.Command { return protocol.NewRequest(protocol.AckMessage, map[string]string{}, nil) }},
	}
	for _, r := range reqs {
		t.Run(r.name, func(t *testing.T) {
			resp := invoke(t, c, b.Addr(), r.req())
			checkAnswer(t, resp, answer{protocol.SystemBusy, "[TIMEOUT_CLEAN_QUEUE]broker busy, start flow control for a while, period in queue: *", nil})
		})
	}
	// Admin: 0 ms fails every queued request, as RocketMQ's behind >= wait.
	update("waitTimeMillsInAdminBrokerQueue=0\n")
	checkAnswer(t, invoke(t, c, b.Addr(), protocol.NewRequest(protocol.GetBrokerConfig, nil, nil)),
		answer{protocol.SystemBusy, "[TIMEOUT_CLEAN_QUEUE]*", nil})
	// The limits are run-time keys: generous ones serve again (the update
	// itself travels the admin queue, so the switch goes first).
	b.dyn.waitAdmin.Store(int64(time.Minute)) // the admin queue refuses its own repair
	update("waitTimeMillsInPullQueue=60000\nwaitTimeMillsInLitePullQueue=60000\n")
	mustCode(t, invoke(t, c, b.Addr(), reqs[0].req()), protocol.PullNotFound) // served: the queue is empty
	mustCode(t, invoke(t, c, b.Addr(), reqs[1].req()), protocol.PullNotFound)
	update("brokerFastFailureEnable=false\n")
	mustCode(t, invoke(t, c, b.Addr(), reqs[2].req()), protocol.Success)
	resp := invoke(t, c, b.Addr(), protocol.NewRequest(protocol.GetBrokerConfig, nil, nil))
	for _, want := range []string{"brokerFastFailureEnable=false\n", "waitTimeMillsInPullQueue=60000\n", "waitTimeMillsInHeartbeatQueue=0\n"} {
		if !strings.Contains(string(resp.Body), want) {
			t.Errorf("GET_BROKER_CONFIG lacks %q", want)
		}
	}
}

// TestGroupForbidden: UPDATE_AND_GET_GROUP_FORBIDDEN (353) forbids a group
// reading a topic (its pulls without a posted subscription answer
// NO_PERMISSION, forbiddenType 5), reads the state without readable,
// allows again, and the table survives a restart.
func TestGroupForbidden(t *testing.T) {
	dir := t.TempDir()
	b := startBroker(t, testConfig(t, dir))
	c := newClient(t)
	mustCode(t, invoke(t, c, b.Addr(), sendReq("FT", 0, []byte("x"), nil)), protocol.Success)
	waitDispatched(t, b, "FT", 0, 1)
	hb, err := protocol.MarshalJSON(&protocol.HeartbeatData{ClientID: "fc", ConsumerDataSet: []protocol.ConsumerData{{
		GroupName: "FG", ConsumeType: protocol.ConsumePassively, MessageModel: protocol.MessageModelClustering,
		ConsumeFromWhere:    protocol.ConsumeFromLastOffset,
		SubscriptionDataSet: []protocol.SubscriptionData{{Topic: "FT", SubString: "*"}},
	}}})
	if err != nil {
		t.Fatal(err)
	}
	mustCode(t, invoke(t, c, b.Addr(), protocol.NewRequest(protocol.HeartBeat, nil, hb)), protocol.Success)
	forbid := func(fields ...string) protocol.GroupForbidden {
		t.Helper()
		resp := invoke(t, c, b.Addr(), offsetReq(protocol.UpdateAndGetGroupForbidden, fields...))
		mustCode(t, resp, protocol.Success)
		var g protocol.GroupForbidden
		if err := protocol.UnmarshalFastJSON(resp.Body, &g); err != nil {
			t.Fatal(err)
		}
		return g
	}
	pull := func(b *Broker) *protocol.Command { return invoke(t, c, b.Addr(), pullReq("FG", "FT", 0, 0, 0, 0, "")) }
	if g := forbid("group", "FG", "topic", "FT"); !g.Readable || g.Group != "FG" || g.Topic != "FT" {
		t.Fatalf("initial state %+v", g)
	}
	mustCode(t, pull(b), protocol.Success)
	if g := forbid("group", "FG", "topic", "FT", "readable", "false"); g.Readable {
		t.Fatalf("after readable=false: %+v", g)
	}
	checkAnswer(t, pull(b), answer{protocol.NoPermission, "the consumer group[FG] is forbidden for topic[FT]",
		map[string]string{"forbiddenType": "5"}})
	// A pull that posts its subscription is not checked (as in RocketMQ).
	mustCode(t, invoke(t, c, b.Addr(), pullReq("FG", "FT", 0, 0, protocol.PullFlagSubscription, 0, "*")), protocol.Success)
	checkAnswer(t, invoke(t, c, b.Addr(), offsetReq(protocol.UpdateAndGetGroupForbidden, "group", "FG")),
		answer{protocol.SystemError, "the custom field <topic> is null", nil})

	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	b = startBroker(t, testConfig(t, dir))
	if g := forbid("group", "FG", "topic", "FT"); g.Readable {
		t.Fatalf("forbidden lost in a restart: %+v", g)
	}
	if g := forbid("group", "FG", "topic", "FT", "readable", "true"); !g.Readable {
		t.Fatalf("after readable=true: %+v", g)
	}
	mustCode(t, invoke(t, c, b.Addr(), protocol.NewRequest(protocol.HeartBeat, nil, hb)), protocol.Success)
	mustCode(t, pull(b), protocol.Success)
}

// TestMessageRequestMode: SET_MESSAGE_REQUEST_MODE (401) with RocketMQ's
// checks, QUERY_ASSIGNMENT (400) honouring the mode (PULL: AVG among the
// group's consumers; POP with popShareQueueNum 0: every queue as -1), GET_ALL
// (402), and the table surviving a restart.
func TestMessageRequestMode(t *testing.T) {
	dir := t.TempDir()
	cfg := testConfig(t, dir)
	cfg.AutoCreateSubscriptionGroup = false
	b := startBroker(t, cfg)
	c := newClient(t)
	ct := protocol.CreateTopicRequestHeader{Topic: "MT", ReadQueueNums: 4, WriteQueueNums: 4, Perm: 6}
	mustCode(t, invoke(t, c, b.Addr(), protocol.NewRequest(protocol.UpdateAndCreateTopic, protocol.EncodeHeader(&ct, false), nil)), protocol.Success)
	if _, _, err := b.Groups.FindOrCreate("MG", true); err != nil {
		t.Fatal(err)
	}
	heartbeat := func(b *Broker, cid string) {
		hb, _ := protocol.MarshalJSON(&protocol.HeartbeatData{ClientID: cid, ConsumerDataSet: []protocol.ConsumerData{{
			GroupName: "MG", ConsumeType: protocol.ConsumePassively, MessageModel: protocol.MessageModelClustering,
			SubscriptionDataSet: []protocol.SubscriptionData{{Topic: "MT", SubString: "*"}},
		}}})
		mustCode(t, invoke(t, newClient(t), b.Addr(), protocol.NewRequest(protocol.HeartBeat, nil, hb)), protocol.Success)
	}
	heartbeat(b, "c1")
	heartbeat(b, "c2")
	set := func(b *Broker, topic, group, mode string, share int) *protocol.Command {
		body, _ := protocol.MarshalJSON(&protocol.MessageRequestMode{Topic: topic, ConsumerGroup: group, Mode: mode, PopShareQueueNum: share})
		return invoke(t, c, b.Addr(), protocol.NewRequest(protocol.SetMessageRequestMode, nil, body))
	}
	query := func(b *Broker, cid string) []protocol.MessageQueueAssignment {
		body, _ := protocol.MarshalJSON(&protocol.QueryAssignmentRequestBody{Topic: "MT", ConsumerGroup: "MG", ClientID: cid,
			StrategyName: "AVG", MessageModel: protocol.MessageModelClustering})
		resp := invoke(t, c, b.Addr(), protocol.NewRequest(protocol.QueryAssignment, nil, body))
		mustCode(t, resp, protocol.Success)
		var out protocol.QueryAssignmentResponseBody
		if err := protocol.UnmarshalFastJSON(resp.Body, &out); err != nil {
			t.Fatal(err)
		}
		return out.MessageQueueAssignments
	}
	for _, tc := range []struct {
		name               string
		topic, group, mode string
		want               answer
	}{
		{"retry topic", "%RETRY%MG", "MG", "POP", answer{protocol.NoPermission, "retry topic is not allowed to set mode", nil}},
		{"unknown topic", "NoTopic", "MG", "POP", answer{protocol.TopicNotExist, "topic[NoTopic] not exist", nil}},
		{"unknown group", "MT", "NoGroup", "POP", answer{protocol.SubscriptionGroupNotExist, "subscription group does not exist", nil}},
		{"bad mode", "MT", "MG", "PUSH", answer{protocol.InvalidParameter, "*", nil}},
	} {
		t.Run(tc.name, func(t *testing.T) { checkAnswer(t, set(b, tc.topic, tc.group, tc.mode, 0), tc.want) })
	}
	// Default PULL: AVG splits 4 queues 2 / 2.
	if got := query(b, "c1"); len(got) != 2 || got[0].Mode != "PULL" || got[0].MessageQueue.QueueID != 0 || got[1].MessageQueue.QueueID != 1 {
		t.Fatalf("PULL assignment of c1: %+v", got)
	}
	mustCode(t, set(b, "MT", "MG", "POP", 0), protocol.Success)
	got := query(b, "c2")
	if len(got) != 4 || got[0].Mode != "POP" || got[0].MessageQueue.QueueID != -1 {
		t.Fatalf("POP assignment of c2: %+v", got)
	}
	resp := invoke(t, c, b.Addr(), protocol.NewRequest(protocol.GetAllMessageRequestMode, nil, nil))
	mustCode(t, resp, protocol.Success)
	if !strings.Contains(string(resp.Body), `"MG":{"topic":"MT","consumerGroup":"MG","mode":"POP"`) {
		t.Fatalf("GET_ALL_MESSAGE_REQUEST_MODE body %s", resp.Body)
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	b = startBroker(t, cfg)
	heartbeat(b, "c1")
	if got := query(b, "c1"); len(got) != 4 || got[0].Mode != "POP" {
		t.Fatalf("after a restart: %+v", got)
	}
}

// TestAssignQueues: QueryAssignmentProcessor's allocation (doLoadBalance's
// CLUSTERING branch and allocate4Pop) for PULL and POP, by strategy.
func TestAssignQueues(t *testing.T) {
	mqs := make([]protocol.MessageQueue, 4)
	for i := range mqs {
		mqs[i] = protocol.MessageQueue{Topic: "T", BrokerName: "b", QueueID: int32(i)}
	}
	ids := func(qs []protocol.MessageQueue) []int32 {
		out := make([]int32, len(qs))
		for i, q := range qs {
			out[i] = q.QueueID
		}
		return out
	}
	pop := func(n int) protocol.MessageRequestMode {
		return protocol.MessageRequestMode{Mode: RequestModePop, PopShareQueueNum: n}
	}
	pull := protocol.MessageRequestMode{Mode: RequestModePull}
	three := []string{"a", "b", "c"}
	tests := []struct {
		name     string
		strategy string
		cid      string
		cids     []string
		mode     protocol.MessageRequestMode
		want     []int32
	}{
		{"pull AVG first", "AVG", "a", three, pull, []int32{0, 1}},
		{"pull AVG last", "AVG", "c", three, pull, []int32{3}},
		{"pull AVG_BY_CIRCLE", "AVG_BY_CIRCLE", "a", three, pull, []int32{0, 3}},
		{"unknown strategy", "CONSISTENT_HASH", "a", three, pull, []int32{}},
		{"not a member", "AVG", "z", three, pull, []int32{}},
		{"pop share 0: every queue as -1", "AVG", "b", three, pop(0), []int32{-1, -1, -1, -1}},
		{"pop share covers the others: every queue", "AVG", "b", three, pop(2), []int32{-1, -1, -1, -1}},
		{"pop share 1: own and the next one's", "AVG", "b", three, pop(1), []int32{2, 3}},
		{"pop share 1 wraps", "AVG", "c", three, pop(1), []int32{3, 0, 1}},
		{"pop, more consumers than queues: one each", "AVG", "e", []string{"a", "b", "c", "d", "e", "f"}, pop(1), []int32{0}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := ids(assignQueues(tc.strategy, tc.cid, mqs, tc.cids, tc.mode))
			if !slices.Equal(got, tc.want) {
				t.Fatalf("got %v, want %v", got, tc.want)
			}
		})
	}
}
