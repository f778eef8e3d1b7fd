package broker

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/apogeemq/apogee/internal/message"
	"github.com/apogeemq/apogee/internal/names"
	"github.com/apogeemq/apogee/internal/protocol"
)

// TestOpsRequests covers the operations requests of admin_ops.go: each is
// served (never REQUEST_CODE_NOT_SUPPORTED) with the answer its tool reads.
func TestOpsRequests(t *testing.T) {
	b := startBroker(t, testConfig(t, t.TempDir()))
	c := newClient(t)
	for range 3 {
		mustCode(t, invoke(t, c, b.Addr(), sendReq("Ops", 0, []byte("m"), nil)), protocol.Success)
	}
	waitDispatched(t, b, "Ops", 0, 3)
	if err := b.Groups.Update(protocol.NewSubscriptionGroupConfig("opsg")); err != nil {
		t.Fatal(err)
	}
	b.Offsets.Commit("opsg", "Ops", 0, 2)
	first, err := b.Store.LookMessageByOffset(0)
	if err != nil {
		t.Fatal(err)
	}
	firstID := message.OffsetMsgID(b.storeHost, first.CommitLogOffset)

	t.Run("GET_TOPIC_NAME_LIST", func(t *testing.T) {
		resp := invoke(t, c, b.Addr(), adminReq(protocol.GetTopicNameList, nil))
		mustCode(t, resp, protocol.Success)
		l, err := protocol.DecodeTopicList(resp.Body)
		if err != nil || !slices.Contains(l.TopicList, "Ops") || !slices.Contains(l.TopicList, names.TopicAutoCreate) {
			t.Fatalf("topic names %v (%v)", l, err)
		}
	})
	t.Run("GET_BROKER_CONSUME_STATS", func(t *testing.T) {
		resp := invoke(t, c, b.Addr(), adminReq(protocol.GetBrokerConsumeStats, map[string]string{"isOrder": "false"}))
		mustCode(t, resp, protocol.Success)
		var body struct {
			BrokerAddr       string
			TotalDiff        int64
			ConsumeStatsList []map[string][]json.RawMessage
		}
		if err := protocol.UnmarshalFastJSON(resp.Body, &body); err != nil {
			t.Fatalf("%v: %s", err, resp.Body)
		}
		found := false
		for _, m := range body.ConsumeStatsList {
			if list, ok := m["opsg"]; ok {
				found = len(list) == 1 && strings.Contains(string(list[0]), `"consumerOffset":2`)
			}
		}
		if !found || body.BrokerAddr != b.Addr() {
			t.Fatalf("group opsg missing or wrong in %s", resp.Body)
		}
		if body.TotalDiff < 1 { // Ops queue 0 has one unconsumed message
			t.Fatalf("total diff %d", body.TotalDiff)
		}
	})
	t.Run("WHO_CONSUME_THE_MESSAGE", func(t *testing.T) {
		resp := invoke(t, c, b.Addr(), adminReq(protocol.WhoConsumeTheMessage, map[string]string{"msgId": firstID}))
		mustCode(t, resp, protocol.Success)
		var gl protocol.GroupList
		if err := json.Unmarshal(resp.Body, &gl); err != nil || !slices.Equal(gl.GroupList, []string{"opsg"}) {
			t.Fatalf("consumed by %v (%v)", gl, err)
		}
		mustCode(t, invoke(t, c, b.Addr(), adminReq(protocol.WhoConsumeTheMessage, map[string]string{"msgId": "bogus"})), protocol.SystemError)
	})
	t.Run("TRIGGER_DELETE_FILES", func(t *testing.T) {
		mustCode(t, invoke(t, c, b.Addr(), adminReq(protocol.TriggerDeleteFiles, nil)), protocol.Success)
		// Nothing is expired: every message is still there.
		if r := b.Store.GetMessage("g", "Ops", 0, 0, 32, 1<<20, nil); len(r.Messages) != 3 {
			t.Fatalf("%d messages left after an early trigger", len(r.Messages))
		}
	})
	t.Run("RESUME_CHECK_HALF_MESSAGE", func(t *testing.T) {
		p := map[string]string{message.PropertyTransactionPrepared: "true", message.PropertyProducerGroup: "pg"}
		mustCode(t, invoke(t, c, b.Addr(), sendReq("OpsTxn", 0, []byte("txn"), p)), protocol.Success)
		waitDispatched(t, b, names.TopicTransHalf, 0, 1)
		res := b.Store.GetMessage("g", names.TopicTransHalf, 0, 0, 1, 0, nil)
		half, _, err := message.DecodeStored(res.Messages[0], message.DecodeOptions{})
		if err != nil {
			t.Fatal(err)
		}
		id := message.OffsetMsgID(b.storeHost, half.CommitLogOffset)
		mustCode(t, invoke(t, c, b.Addr(), adminReq(protocol.ResumeCheckHalfMessage, map[string]string{"msgId": id})), protocol.Success)
		waitDispatched(t, b, names.TopicTransHalf, 0, 2)
		res = b.Store.GetMessage("g", names.TopicTransHalf, 0, 1, 1, 0, nil)
		cp, _, err := message.DecodeStored(res.Messages[0], message.DecodeOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if cp.Properties[message.PropertyTransactionCheckTimes] != "0" || cp.Properties[message.PropertyRealTopic] != "OpsTxn" {
			t.Fatalf("resumed copy properties %v", cp.Properties)
		}
		// A message that is not a half message is refused.
		mustCode(t, invoke(t, c, b.Addr(), adminReq(protocol.ResumeCheckHalfMessage, map[string]string{"msgId": firstID})), protocol.SystemError)
	})
}
