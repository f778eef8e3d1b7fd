package protocol

import (
	"bytes"
	"testing"
)

func TestDecodeLiteSubscriptionCtlBody(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		want     LiteSubscriptionDTO
		err      bool
	}{
		{"names", `{"subscriptionSet":[{"action":"PARTIAL_ADD","clientId":"c","group":"g","topic":"P","liteTopicSet":["a"],"offsetOption":{"type":"TAIL_N","value":3},"version":7}]}`,
			LiteSubscriptionDTO{Action: LiteActionPartialAdd, ClientID: "c", Group: "g", Topic: "P", LiteTopicSet: []string{"a"},
				OffsetOption: &LiteOffsetOption{Type: LiteOffsetTailN, Value: 3}, Version: 7}, false},
		{"ordinals", `{"subscriptionSet":[{"action":3,"clientId":"c","offsetOption":{"type":1,"value":9}}]}`,
			LiteSubscriptionDTO{Action: LiteActionCompleteRemove, ClientID: "c", OffsetOption: &LiteOffsetOption{Type: LiteOffsetOffset, Value: 9}}, false},
		{"fastjson", `{subscriptionSet:[{'action':'COMPLETE_ADD','clientId':'c'}]}`,
			LiteSubscriptionDTO{Action: LiteActionCompleteAdd, ClientID: "c"}, false},
		{"unknown action", `{"subscriptionSet":[{"action":"JUMP"}]}`, LiteSubscriptionDTO{}, true},
		{"ordinal out of range", `{"subscriptionSet":[{"action":4}]}`, LiteSubscriptionDTO{}, true},
		{"no action", `{"subscriptionSet":[{}]}`, LiteSubscriptionDTO{}, true},
		{"bad type", `{"subscriptionSet":[{"action":0,"offsetOption":{"type":"SOON"}}]}`, LiteSubscriptionDTO{}, true},
		{"not json", `{`, LiteSubscriptionDTO{}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := DecodeLiteSubscriptionCtlBody([]byte(tc.in))
			if (err != nil) != tc.err {
				t.Fatalf("err = %v, want error %v", err, tc.err)
			}
			if tc.err {
				return
			}
			if len(got.SubscriptionSet) != 1 {
				t.Fatalf("got %+v", got)
			}
			g := got.SubscriptionSet[0]
			if g.Action != tc.want.Action || g.ClientID != tc.want.ClientID || g.Group != tc.want.Group || g.Topic != tc.want.Topic ||
				g.Version != tc.want.Version || len(g.LiteTopicSet) != len(tc.want.LiteTopicSet) ||
				(g.OffsetOption == nil) != (tc.want.OffsetOption == nil) || g.OffsetOption != nil && *g.OffsetOption != *tc.want.OffsetOption {
				t.Fatalf("got %+v, want %+v", g, tc.want)
			}
		})
	}
}

// FuzzDecodeLiteSubscriptionCtlBody: any body decodes or errors, never
// panics, and a decoded body re-encodes to one that decodes the same.
func FuzzDecodeLiteSubscriptionCtlBody(f *testing.F) {
	f.Add([]byte(`{"subscriptionSet":[{"action":"PARTIAL_ADD","clientId":"c","group":"g","topic":"P","liteTopicSet":["a","b"],"offsetOption":{"type":"POLICY","value":2}}]}`))
	f.Add([]byte(`{"subscriptionSet":[{"action":1}]}`))
	f.Add([]byte(`{subscriptionSet:[{action:'COMPLETE_ADD',version:3}]}`))
	f.Add([]byte(`null`))
	f.Fuzz(func(t *testing.T, data []byte) {
		b, err := DecodeLiteSubscriptionCtlBody(data)
		if err != nil {
			return
		}
		enc, err := MarshalJSON(b)
		if err != nil {
			t.Fatal(err)
		}
		again, err := DecodeLiteSubscriptionCtlBody(enc)
		if err != nil || len(again.SubscriptionSet) != len(b.SubscriptionSet) {
			t.Fatalf("re-decode of %s: %+v %v", enc, again, err)
		}
		for i := range b.SubscriptionSet {
			if again.SubscriptionSet[i].Action != b.SubscriptionSet[i].Action {
				t.Fatalf("action %d changed: %q -> %q", i, b.SubscriptionSet[i].Action, again.SubscriptionSet[i].Action)
			}
		}
	})
}

// FuzzDecodePopLiteMessageHeader: any ext fields decode or error.
func FuzzDecodePopLiteMessageHeader(f *testing.F) {
	f.Add("c", "g", "P", "32", "30000", "0", "1")
	f.Add("", "", "", "x", "-1", "9999999999999999999999", "")
	f.Fuzz(func(t *testing.T, client, group, topic, maxNum, invisible, poll, born string) {
		ext := map[string]string{"clientId": client, "consumerGroup": group, "topic": topic, "maxMsgNum": maxNum,
			"invisibleTime": invisible, "pollTime": poll, "bornTime": born}
		var h PopLiteMessageRequestHeader
		if err := DecodeHeader(ext, &h, false); err != nil {
			return
		}
		var back PopLiteMessageRequestHeader
		if err := DecodeHeader(EncodeHeader(&h, false), &back, false); err != nil || back != h {
			t.Fatalf("round trip %+v -> %+v %v", h, back, err)
		}
	})
}

// FuzzDecodeLiteAdminHeaders: any ext fields decode or error into the
// GET_LITE_CLIENT_INFO, GET_LITE_GROUP_INFO and TRIGGER_LITE_DISPATCH
// headers, and what decodes survives a round trip.
func FuzzDecodeLiteAdminHeaders(f *testing.F) {
	f.Add("P", "G", "c1", "1000", "l", "20")
	f.Add("", "", "", "-1", "", "x")
	f.Add("P", "G", "", "99999999999", "a b", "-5")
	f.Fuzz(func(t *testing.T, parent, group, client, maxCount, liteTopic, topK string) {
		ci := map[string]string{"parentTopic": parent, "group": group, "clientId": client, "maxCount": maxCount}
		var h1 GetLiteClientInfoRequestHeader
		if DecodeHeader(ci, &h1, false) == nil {
			var back GetLiteClientInfoRequestHeader
			if err := DecodeHeader(EncodeHeader(&h1, false), &back, false); err != nil || back != h1 {
				t.Fatalf("client info round trip %+v -> %+v %v", h1, back, err)
			}
		}
		gi := map[string]string{"group": group, "liteTopic": liteTopic, "topK": topK}
		var h2 GetLiteGroupInfoRequestHeader
		if DecodeHeader(gi, &h2, false) == nil {
			var back GetLiteGroupInfoRequestHeader
			if err := DecodeHeader(EncodeHeader(&h2, false), &back, false); err != nil || back != h2 {
				t.Fatalf("group info round trip %+v -> %+v %v", h2, back, err)
			}
		}
		td := map[string]string{"group": group, "clientId": client}
		var h3 TriggerLiteDispatchRequestHeader
		if DecodeHeader(td, &h3, false) == nil {
			var back TriggerLiteDispatchRequestHeader
			if err := DecodeHeader(EncodeHeader(&h3, false), &back, false); err != nil || back != h3 {
				t.Fatalf("trigger round trip %+v -> %+v %v", h3, back, err)
			}
		}
	})
}

// FuzzDecodeLiteAdminBodies: any bytes decode or error as the
// GET_LITE_CLIENT_INFO and GET_LITE_GROUP_INFO answers; a decoded answer
// encodes, decodes and encodes again to the same bytes.
func FuzzDecodeLiteAdminBodies(f *testing.F) {
	f.Add([]byte(`{"parentTopic":"P","group":"G","clientId":"c","lastAccessTime":1,"lastConsumeTime":2,"liteTopicCount":1,"liteTopicSet":["%LMQ%$P$a"]}`))
	f.Add([]byte(`{"group":"G","parentTopic":"P","earliestUnconsumedTimestamp":-1,"totalLagCount":3,"liteTopicOffsetWrapper":{"brokerOffset":4,"consumerOffset":1,"lastTimestamp":9},"lagCountTopK":[{"liteTopic":"a","lagCount":3,"earliestUnconsumedTimestamp":5}]}`))
	f.Add([]byte(`{group:"G",totalLagCount:"x"}`))
	f.Add([]byte(`[1,2]`))
	f.Add([]byte(`{"lagCountTopK":[]}`)) // empty lists encode as absent
	f.Fuzz(func(t *testing.T, data []byte) {
		if ci, err := DecodeGetLiteClientInfoBody(data); err == nil {
			enc, err := MarshalJSON(ci)
			if err != nil {
				t.Fatal(err)
			}
			back, err := DecodeGetLiteClientInfoBody(enc)
			if again, _ := MarshalJSON(back); err != nil || !bytes.Equal(again, enc) {
				t.Fatalf("client info round trip %s -> %s %v", enc, again, err)
			}
		}
		if gi, err := DecodeGetLiteGroupInfoBody(data); err == nil {
			enc, err := MarshalJSON(gi)
			if err != nil {
				t.Fatal(err)
			}
			back, err := DecodeGetLiteGroupInfoBody(enc)
			if again, _ := MarshalJSON(back); err != nil || !bytes.Equal(again, enc) {
				t.Fatalf("group info round trip %s -> %s %v", enc, again, err)
			}
		}
	})
}
