package protocol

import (
	"encoding/json"
	"errors"
	"reflect"
	"slices"
	"strings"
	"testing"
)

func TestPopRetryTopicNames(t *testing.T) {
	// KeyBuilder.buildPopRetryTopicV1 / V2 and ExtraInfoUtil.getRetry.
	if got := PopRetryTopicV1("T", "G"); got != "%RETRY%G_T" {
		t.Fatalf("v1 = %q", got)
	}
	if got := PopRetryTopicV2("T", "G"); got != "%RETRY%G+T" {
		t.Fatalf("v2 = %q", got)
	}
	for _, tc := range []struct {
		topic string
		want  PopTopicType
	}{
		{"T", PopTopicNormal}, {"%RETRY%G_T", PopTopicRetry}, {"%RETRY%G+T", PopTopicRetryV2},
		{"%RETRY%G", PopTopicRetry}, {"%DLQ%G", PopTopicNormal},
	} {
		if got := PopTopicTypeOf(tc.topic); got != tc.want {
			t.Errorf("PopTopicTypeOf(%q) = %d, want %d", tc.topic, got, tc.want)
		}
	}
	for _, rt := range []string{PopRetryTopicV1("Topic_A", "G"), PopRetryTopicV2("Topic_A", "G")} {
		if got := PopNormalTopic(rt, "G"); got != "Topic_A" {
			t.Errorf("PopNormalTopic(%q) = %q", rt, got)
		}
		if got := PopTopicTypeOf(rt).RealTopic("Topic_A", "G"); got != rt {
			t.Errorf("RealTopic round trip %q -> %q", rt, got)
		}
	}
}

func TestReceiptHandleFormat(t *testing.T) {
	h := ReceiptHandle{CkQueueOffset: 10, PopTime: 1700000000000, InvisibleTime: 30000, ReviveQueueID: 3,
		TopicType: PopTopicRetryV2, BrokerName: "broker-a", QueueID: 2, QueueOffset: 12, CommitLogOffset: 4096}
	// The exact strings RocketMQ builds (ExtraInfoUtil.buildExtraInfo with the
	// message offset; ReceiptHandle.encode).
	if got, want := h.ExtraInfo(), "10 1700000000000 30000 3 2 broker-a 2 12"; got != want {
		t.Fatalf("ExtraInfo = %q, want %q", got, want)
	}
	if got, want := h.String(), "10 1700000000000 30000 3 2 broker-a 2 12 4096"; got != want {
		t.Fatalf("String = %q, want %q", got, want)
	}
	back, err := ParseReceiptHandle(h.String())
	if err != nil || back != h {
		t.Fatalf("round trip: %+v, %v", back, err)
	}
	if back.NextVisibleTime() != 1700000030000 || back.IsOrder() {
		t.Fatalf("next visible %d order %v", back.NextVisibleTime(), back.IsOrder())
	}
	if got := back.RealTopic("T", "G"); got != "%RETRY%G+T" {
		t.Fatalf("RealTopic = %q", got)
	}
}

func TestParseReceiptHandle(t *testing.T) {
	for _, tc := range []struct {
		name    string
		in      string
		extra   bool // ParseExtraInfo instead
		want    ReceiptHandle
		wantErr bool
	}{
		{name: "nine fields", in: "0 1 2 3 0 b 4 5 6",
			want: ReceiptHandle{0, 1, 2, 3, 0, "b", 4, 5, 6}},
		{name: "eight fields: no commit-log offset", in: "0 1 2 999 1 b 4 5",
			want: ReceiptHandle{0, 1, 2, 999, 1, "b", 4, 5, -1}},
		{name: "tenth field ignored", in: "0 1 2 3 0 b 4 5 6 7",
			want: ReceiptHandle{0, 1, 2, 3, 0, "b", 4, 5, 6}},
		{name: "extra info with seven fields", in: "0 1 2 3 0 b 4", extra: true,
			want: ReceiptHandle{0, 1, 2, 3, 0, "b", 4, -1, -1}},
		{name: "seven fields is not a receipt handle", in: "0 1 2 3 0 b 4", wantErr: true},
		{name: "empty", in: "", wantErr: true},
		{name: "not a number", in: "x 1 2 3 0 b 4 5 6", wantErr: true},
		{name: "bad topic type", in: "0 1 2 3 7 b 4 5 6", wantErr: true},
		{name: "empty broker", in: "0 1 2 3 0  4 5 6", wantErr: true},
		{name: "queue id overflows int32", in: "0 1 2 3 0 b 4294967296 5 6", wantErr: true},
		{name: "double space", in: "0  1 2 3 0 b 4 5 6", wantErr: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			parse := ParseReceiptHandle
			if tc.extra {
				parse = ParseExtraInfo
			}
			got, err := parse(tc.in)
			if tc.wantErr {
				if !errors.Is(err, ErrBadPopHandle) {
					t.Fatalf("err = %v, want ErrBadPopHandle", err)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("got %+v, %v; want %+v", got, err, tc.want)
			}
		})
	}
}

func TestPopOffsetInfo(t *testing.T) {
	var start, msg, order []byte
	start = AppendStartOffsetInfo(start, PopTopicNormal, 0, 100)
	start = AppendStartOffsetInfo(start, PopTopicRetryV2, 0, 7)
	msg = AppendMsgOffsetInfo(msg, PopTopicNormal, 0, []int64{100, 101, 103})
	msg = AppendMsgOffsetInfo(msg, PopTopicRetryV2, 0, []int64{7})
	order = AppendOrderCountInfo(order, PopTopicNormal, 1, -1, 2)
	order = AppendOrderCountInfo(order, PopTopicNormal, 1, 55, 3)
	if got, want := string(start), "0 0 100;2 0 7"; got != want {
		t.Fatalf("startOffsetInfo %q, want %q", got, want)
	}
	if got, want := string(msg), "0 0 100,101,103;2 0 7"; got != want {
		t.Fatalf("msgOffsetInfo %q, want %q", got, want)
	}
	if got, want := string(order), "0 1 2;0 qo1%55 3"; got != want {
		t.Fatalf("orderCountInfo %q, want %q", got, want)
	}
	so, err := ParseStartOffsetInfo(string(start))
	if err != nil || so[PopQueueKey{0, 0}] != 100 || so[PopQueueKey{2, 0}] != 7 || len(so) != 2 {
		t.Fatalf("start %v %v", so, err)
	}
	mo, err := ParseMsgOffsetInfo(string(msg))
	if err != nil || !slices.Equal(mo[PopQueueKey{0, 0}], []int64{100, 101, 103}) || len(mo) != 2 {
		t.Fatalf("msg %v %v", mo, err)
	}
	oc, err := ParseOrderCountInfo(string(order))
	if err != nil || oc[PopOrderCountKey{0, 1, -1}] != 2 || oc[PopOrderCountKey{0, 1, 55}] != 3 {
		t.Fatalf("order %v %v", oc, err)
	}
	if m, err := ParseStartOffsetInfo(""); m != nil || err != nil {
		t.Fatalf("empty: %v %v", m, err)
	}
	for _, bad := range []string{"0 0", "0 0 1;0 0 2", "9 0 1", "0 x 1", "0 0 1,", ";"} {
		if _, err := ParseStartOffsetInfo(bad); err == nil {
			t.Errorf("ParseStartOffsetInfo(%q) accepted", bad)
		}
		if _, err := ParseMsgOffsetInfo(bad); err == nil && bad != "0 0 1;0 0 2" {
			// (duplicates are refused by both; "0 0 1," has an empty offset)
			t.Errorf("ParseMsgOffsetInfo(%q) accepted", bad)
		}
	}
	if _, err := ParseOrderCountInfo("0 qo1 3"); err == nil {
		t.Error("order count key without % accepted")
	}
}

func TestRecallHandle(t *testing.T) {
	h := RecallHandle{Topic: "T", BrokerName: "broker-a", DeliverTimeMs: 1700000005000, MessageID: "7F0000010001ABCDEF"}
	s := EncodeRecallHandle(h)
	// URL-safe Base64 of "v1 T broker-a 1700000005000 7F0000010001ABCDEF".
	if want := "djEgVCBicm9rZXItYSAxNzAwMDAwMDA1MDAwIDdGMDAwMDAxMDAwMUFCQ0RFRg=="; s != want {
		t.Fatalf("handle %q, want %q", s, want)
	}
	back, err := ParseRecallHandle(s)
	if err != nil || back != h {
		t.Fatalf("round trip %+v %v", back, err)
	}
	if back, err := ParseRecallHandle(strings.TrimRight(s, "=")); err != nil || back != h {
		t.Fatalf("unpadded %+v %v", back, err)
	}
	for _, bad := range []string{"", "!!!", EncodeRecallHandle(RecallHandle{Topic: "T"})[:8], "djIgVCBiIDEgbQ=="} {
		if _, err := ParseRecallHandle(bad); !errors.Is(err, ErrBadPopHandle) {
			t.Errorf("ParseRecallHandle(%q) = %v", bad, err)
		}
	}
}

func TestBatchAckBody(t *testing.T) {
	a := BatchAck{ConsumerGroup: "G", Topic: "T", Retry: "0", QueueID: 1, ReviveQueueID: 2, PopTime: 5, InvisibleTime: 6}
	if err := a.SetOffsets([]int64{103, 100, 110}); err != nil {
		t.Fatal(err)
	}
	body := BatchAckMessageRequestBody{BrokerName: "b", Acks: []BatchAck{a}}
	raw, err := json.Marshal(body)
	if err != nil {
		t.Fatal(err)
	}
	// Short names and a Base64 little-endian bit set (bits 0, 3, 10).
	want := `{"brokerName":"b","acks":[{"c":"G","t":"T","r":"0","so":100,"q":1,"rq":2,"pt":5,"it":6,"b":"CQQ="}]}`
	if string(raw) != want {
		t.Fatalf("json %s\nwant %s", raw, want)
	}
	back, err := DecodeBatchAckBody(raw)
	if err != nil || !reflect.DeepEqual(*back, body) {
		t.Fatalf("decode %+v %v", back, err)
	}
	offs, err := back.Acks[0].Offsets()
	if err != nil || !slices.Equal(offs, []int64{100, 103, 110}) {
		t.Fatalf("offsets %v %v", offs, err)
	}
	long := `{"brokerName":"b","acks":[{"consumerGroup":"G","topic":"T","retry":"2","startOffset":4,"queueId":1,"reviveQueueId":0,"popTime":1,"invisibleTime":2,"bitSet":"AQ=="}]}`
	lb, err := DecodeBatchAckBody([]byte(long))
	if err != nil {
		t.Fatal(err)
	}
	if tt, _ := lb.Acks[0].TopicType(); tt != PopTopicRetryV2 || lb.Acks[0].StartOffset != 4 {
		t.Fatalf("long names %+v", lb.Acks[0])
	}
	var from BatchAck
	if err := from.SetOffsetsFrom(98, []int64{100, 103}); err != nil || from.StartOffset != 98 {
		t.Fatal(err)
	}
	if offs, _ := from.Offsets(); !slices.Equal(offs, []int64{100, 103}) {
		t.Fatalf("SetOffsetsFrom offsets %v", offs)
	}
	if err := from.SetOffsetsFrom(98, []int64{97}); err == nil {
		t.Fatal("offset before start accepted")
	}
	if err := (&BatchAck{}).SetOffsets([]int64{0, 1 << 20}); err == nil {
		t.Fatal("wide offsets accepted")
	}
	if _, err := (&BatchAck{BitSet: make([]byte, 1<<14)}).Offsets(); err == nil {
		t.Fatal("huge bit set accepted")
	}
}

func TestPopHeadersRoundTrip(t *testing.T) {
	pop := PopMessageRequestHeader{ConsumerGroup: "G", Topic: "T", QueueID: -1, MaxMsgNums: 32,
		InvisibleTime: 60000, PollTime: 15000, BornTime: 1, InitMode: PopInitModeMax, ExpType: "TAG", Exp: "a||b",
		Order: true, AttemptID: "x"}
	ext := EncodeHeader(&pop, false)
	if ext["consumerGroup"] != "G" || ext["queueId"] != "-1" || ext["order"] != "true" || ext["attemptId"] != "x" {
		t.Fatalf("ext %v", ext)
	}
	var back PopMessageRequestHeader
	if err := DecodeHeader(ext, &back, false); err != nil || back != pop {
		t.Fatalf("round trip %+v %v", back, err)
	}
	delete(ext, "invisibleTime")
	if err := DecodeHeader(ext, &back, false); err == nil {
		t.Fatal("missing invisibleTime accepted")
	}
	ack := map[string]string{"consumerGroup": "G", "topic": "T", "queueId": "0", "extraInfo": "0 1 2 3 0 b 0 5", "offset": "5"}
	var ah AckMessageRequestHeader
	if err := DecodeHeader(ack, &ah, false); err != nil || ah.Offset != 5 || ah.ExtraInfo != ack["extraInfo"] {
		t.Fatalf("ack %+v %v", ah, err)
	}
	ack["invisibleTime"] = "0"
	var ch ChangeInvisibleTimeRequestHeader
	if err := DecodeHeader(ack, &ch, false); err != nil || ch.InvisibleTime != 0 {
		t.Fatalf("change %+v %v", ch, err)
	}
	ack["offset"] = "five"
	var e *Error
	if err := DecodeHeader(ack, &ah, false); !errors.As(err, &e) || e.Code != SystemError {
		t.Fatalf("bad offset: %v", err)
	}
}

// TestPopFastHeadersMatchReflect: the typed POP codecs give what the
// reflect walk gives, errors included.
func TestPopFastHeadersMatchReflect(t *testing.T) {
	full := map[string]string{"consumerGroup": "G", "topic": "T", "queueId": "-1", "maxMsgNums": "32",
		"invisibleTime": "60000", "pollTime": "1000", "bornTime": "5", "initMode": "1", "expType": "SQL92",
		"exp": "a > 1", "order": "TRUE", "attemptId": "x", "extraInfo": "0 1 2 3 0 b 0 5", "offset": "5"}
	cases := []map[string]string{full, {}, {"consumerGroup": "G", "topic": "T", "queueId": "x"}}
	for i, ext := range cases {
		var fp, rp PopMessageRequestHeader
		fe, re := DecodePopHeader(ext, &fp), decodeHeaderReflect(ext, &rp, false)
		if fp != rp || (fe == nil) != (re == nil) || fe != nil && fe.Error() != re.Error() {
			t.Fatalf("case %d pop: %+v %v vs %+v %v", i, fp, fe, rp, re)
		}
		var fa, ra AckMessageRequestHeader
		fe, re = DecodeAckHeader(ext, &fa), decodeHeaderReflect(ext, &ra, false)
		if fa != ra || (fe == nil) != (re == nil) || fe != nil && fe.Error() != re.Error() {
			t.Fatalf("case %d ack: %+v %v vs %+v %v", i, fa, fe, ra, re)
		}
	}
	for _, h := range []*PopMessageResponseHeader{{}, {PopTime: 1, InvisibleTime: 2, ReviveQid: 3, RestNum: 4,
		StartOffsetInfo: "0 0 1", MsgOffsetInfo: "0 0 1,2", OrderCountInfo: "0 0 1"}} {
		got, want := AppendPopResponseHeader(nil, h), appendHeaderReflect(nil, h, false)
		if !slices.Equal(got, want) {
			t.Fatalf("append %v, want %v", got, want)
		}
	}
}
