package broker

import (
	"testing"

	"github.com/apogeemq/apogee/internal/protocol"
)

// TestSendChecksTopicMessageType: a topic typed with the message.type
// attribute takes only its own message type over remoting too (RocketMQ
// 5's TopicMessageType); MIXED and untyped topics take every type.
func TestSendChecksTopicMessageType(t *testing.T) {
	b := startBroker(t, testConfig(t, t.TempDir()))
	c := newClient(t)
	create := func(topic, attrs string) {
		ct := protocol.CreateTopicRequestHeader{Topic: topic, ReadQueueNums: 2, WriteQueueNums: 2, Perm: 6,
			TopicFilterType: "SINGLE_TAG", Attributes: attrs}
		mustCode(t, invoke(t, c, b.Addr(), protocol.NewRequest(protocol.UpdateAndCreateTopic, protocol.EncodeHeader(&ct, false), nil)), protocol.Success)
	}
	create("TypedFifo", "+message.type=FIFO")
	create("TypedNormal", "+message.type=NORMAL")
	create("TypedDelay", "+message.type=DELAY")
	create("TypedMixed", "+message.type=MIXED")
	create("Untyped", "")
	normal := map[string]string{}
	fifo := map[string]string{"__SHARDINGKEY": "g1"}
	delay := map[string]string{"DELAY": "2"}
	txn := map[string]string{"TRAN_MSG": "true", "PGROUP": "pg"}
	for _, tc := range []struct {
		topic string
		props map[string]string
		want  protocol.ResponseCode
	}{
		{"TypedFifo", fifo, protocol.Success},
		{"TypedFifo", normal, protocol.MessageIllegal},
		{"TypedNormal", normal, protocol.Success},
		{"TypedNormal", delay, protocol.MessageIllegal},
		{"TypedNormal", txn, protocol.MessageIllegal},
		{"TypedDelay", delay, protocol.Success},
		{"TypedDelay", fifo, protocol.MessageIllegal},
		{"TypedMixed", txn, protocol.Success},
		{"TypedMixed", fifo, protocol.Success},
		{"Untyped", fifo, protocol.Success},
		{"Untyped", delay, protocol.Success},
	} {
		resp := invoke(t, c, b.Addr(), sendReq(tc.topic, 0, []byte("x"), tc.props))
		if protocol.ResponseCode(resp.Code) != tc.want {
			t.Errorf("send %v to %s: code %d %q, want %d", tc.props, tc.topic, resp.Code, resp.Remark, tc.want)
		}
	}
}
