package protocol

import (
	"errors"
	"reflect"
	"strings"
	"testing"
)

func TestDecodeSendHeaderV1AndV2(t *testing.T) {
	want := SendMessageRequestHeader{
		ProducerGroup: "pg", Topic: "T", DefaultTopic: "TBW102", DefaultTopicQueueNums: 4,
		QueueID: 3, SysFlag: 1, BornTimestamp: 1700000000123, Flag: 7, Properties: "TAGS\x01a\x02",
		ReconsumeTimes: 2, UnitMode: false, MaxReconsumeTimes: 16, Batch: true, BrokerName: "b",
	}
	for _, v2 := range []bool{false, true} {
		ext := EncodeHeader(&want, v2)
		if v2 {
			if ext["a"] != "pg" || ext["m"] != "true" || ext["producerGroup"] != "" {
				t.Fatalf("v2 ext = %v", ext)
			}
		} else if ext["producerGroup"] != "pg" || ext["bname"] != "b" {
			t.Fatalf("v1 ext = %v", ext)
		}
		var got SendMessageRequestHeader
		if err := DecodeHeader(ext, &got, v2); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("v2=%v: got %+v, want %+v", v2, got, want)
		}
	}
}

func TestDecodeHeaderErrors(t *testing.T) {
	tests := []struct {
		name   string
		ext    map[string]string
		remark string
	}{
		{"missing required", map[string]string{"topic": "T"}, "<consumerGroup> is null"},
		{"bad number", map[string]string{"consumerGroup": "g", "topic": "T", "queueId": "x", "commitOffset": "1"}, "<queueId> has a bad value"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var h UpdateConsumerOffsetRequestHeader
			err := DecodeHeader(tc.ext, &h, false)
			var pe *Error
			if !errors.As(err, &pe) || pe.Code != SystemError || !strings.Contains(pe.Remark, tc.remark) {
				t.Fatalf("err = %v, want SYSTEM_ERROR containing %q", err, tc.remark)
			}
		})
	}
}

func TestDecodeHeaderOptionalPointerAndJavaBool(t *testing.T) {
	var h QueryConsumerOffsetRequestHeader
	if err := DecodeHeader(map[string]string{"consumerGroup": "g", "topic": "T", "queueId": "1"}, &h, false); err != nil {
		t.Fatal(err)
	}
	if h.SetZeroIfNotFound != nil {
		t.Fatalf("absent optional field set: %v", *h.SetZeroIfNotFound)
	}
	if err := DecodeHeader(map[string]string{"consumerGroup": "g", "topic": "T", "queueId": "1", "setZeroIfNotFound": "TRUE"}, &h, false); err != nil {
		t.Fatal(err)
	}
	if h.SetZeroIfNotFound == nil || !*h.SetZeroIfNotFound {
		t.Fatal("Boolean.parseBoolean(\"TRUE\") must be true")
	}
	if err := DecodeHeader(map[string]string{"consumerGroup": "g", "topic": "T", "queueId": "1", "setZeroIfNotFound": "yes"}, &h, false); err != nil {
		t.Fatal(err)
	}
	if *h.SetZeroIfNotFound {
		t.Fatal("Boolean.parseBoolean(\"yes\") must be false")
	}
}

func TestEncodePullResponseHeaderAlwaysHasOffsets(t *testing.T) {
	ext := EncodeHeader(&PullMessageResponseHeader{}, false)
	for _, k := range []string{"nextBeginOffset", "minOffset", "maxOffset", "suggestWhichBrokerId"} {
		if ext[k] != "0" {
			t.Errorf("%s = %q, want \"0\" (Java clients unbox it)", k, ext[k])
		}
	}
	if _, ok := ext["forbiddenType"]; ok {
		t.Error("omitempty forbiddenType emitted")
	}
}

// TestHeartbeatFromGoClient decodes the Go client's heartbeat of
// docs/protocol.md §5.3.4, whose codeSet holds strings.
func TestHeartbeatFromGoClient(t *testing.T) {
	body := `{"clientID":"10.0.0.5@4711#1718000000000000000","producerDataSet":[],"consumerDataSet":[{"groupName":"cg",` +
		`"consumeType":"CONSUME_PASSIVELY","messageModel":"CLUSTERING","consumeFromWhere":"CONSUME_FROM_LAST_OFFSET",` +
		`"subscriptionDataSet":[{"classFilterMode":false,"topic":"T","subString":"a || b","tagsSet":["a","b"],` +
		`"codeSet":["97",98],"subVersion":1718000000123456789,"expressionType":"TAG"}],"unitMode":false}]}`
	hb, err := DecodeHeartbeat([]byte(body))
	if err != nil {
		t.Fatal(err)
	}
	if hb.ClientID != "10.0.0.5@4711#1718000000000000000" || len(hb.ConsumerDataSet) != 1 {
		t.Fatalf("heartbeat = %+v", hb)
	}
	s := hb.ConsumerDataSet[0].SubscriptionDataSet[0]
	if !reflect.DeepEqual(s.CodeSet, CodeSet{97, 98}) || s.SubVersion != 1718000000123456789 || !s.IsTag() {
		t.Fatalf("subscription = %+v", s)
	}
	if _, err := DecodeHeartbeat([]byte(`{"consumerDataSet":[{"subscriptionDataSet":[{"codeSet":["x"]}]}]}`)); err == nil {
		t.Fatal("non-numeric code accepted")
	}
}

func FuzzDecodeHeartbeat(f *testing.F) {
	f.Add([]byte(`{"clientID":"c","consumerDataSet":[{"groupName":"g","subscriptionDataSet":[{"topic":"T","codeSet":["1",2]}]}]}`))
	f.Add([]byte(`{"codeSet":null}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		hb, err := DecodeHeartbeat(b)
		if err == nil && hb == nil {
			t.Fatal("nil heartbeat without error")
		}
	})
}

func FuzzDecodeHeader(f *testing.F) {
	f.Add("producerGroup", "pg", "queueId", "-1", false)
	f.Add("a", "pg", "e", "99999999999", true)
	f.Fuzz(func(t *testing.T, k1, v1, k2, v2 string, useV2 bool) {
		ext := map[string]string{k1: v1, k2: v2}
		var h SendMessageRequestHeader
		if err := DecodeHeader(ext, &h, useV2); err != nil {
			return
		}
		var again SendMessageRequestHeader
		if err := DecodeHeader(EncodeHeader(&h, useV2), &again, useV2); err != nil {
			t.Fatalf("re-decode: %v", err)
		}
		if !reflect.DeepEqual(h, again) {
			t.Fatalf("round trip %+v != %+v", h, again)
		}
	})
}
