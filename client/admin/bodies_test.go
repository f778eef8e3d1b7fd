package admin

import (
	"encoding/json"
	"testing"

	"github.com/apogeemq/apogee/client"
)

// Java writes MessageQueue-keyed maps with object keys (docs/protocol.md §5.1);
// the decoders accept that dialect.
const (
	javaTopicStats   = `{"offsetTable":{{"brokerName":"broker-a","queueId":1,"topic":"T"}:{"lastUpdateTimestamp":1700000000000,"maxOffset":10,"minOffset":2}},"topicPutTps":0.0}`
	javaConsumeStats = `{"consumeTps":1.5,"offsetTable":{{"brokerName":"b","queueId":0,"topic":"T"}:{"brokerOffset":9,"consumerOffset":4,"lastTimestamp":0,"pullOffset":5}}}`
	javaReset        = `{"offsetTable":{{"brokerName":"b","queueId":3,"topic":"T"}:7}}`
	javaConnections  = `{"connectionSet":[{"clientAddr":"1.2.3.4:5","clientId":"c1","language":"JAVA","version":479}],"consumeFromWhere":"CONSUME_FROM_LAST_OFFSET","consumeType":"CONSUME_PASSIVELY","messageModel":"CLUSTERING","subscriptionTable":{"T":{"classFilterMode":false,"codeSet":[],"expressionType":"TAG","subString":"*","subVersion":1,"tagsSet":[],"topic":"T"}}}`
)

func TestDecodeJavaBodies(t *testing.T) {
	ts, err := decodeTopicStats([]byte(javaTopicStats))
	if err != nil {
		t.Fatal(err)
	}
	q := client.MessageQueue{Topic: "T", BrokerName: "broker-a", QueueID: 1}
	if o := ts[q]; o.MinOffset != 2 || o.MaxOffset != 10 || o.LastUpdateTimestamp != 1700000000000 {
		t.Fatalf("topic stats %+v", ts)
	}
	cs, err := decodeConsumeStats([]byte(javaConsumeStats))
	if err != nil {
		t.Fatal(err)
	}
	if w := cs.offsets[client.MessageQueue{Topic: "T", BrokerName: "b"}]; w.BrokerOffset != 9 || w.ConsumerOffset != 4 || cs.consumeTps != 1.5 {
		t.Fatalf("consume stats %+v", cs)
	}
	rs, err := decodeResetOffset([]byte(javaReset))
	if err != nil || rs[client.MessageQueue{Topic: "T", BrokerName: "b", QueueID: 3}] != 7 {
		t.Fatalf("reset %v %v", rs, err)
	}
	cc, err := decodeConsumerConnection([]byte(javaConnections))
	if err != nil || len(cc.ConnectionSet) != 1 || cc.ConnectionSet[0].Language != "JAVA" || cc.SubscriptionTable["T"].SubString != "*" {
		t.Fatalf("connections %+v %v", cc, err)
	}
}

// FuzzDecodeAdminBodies: the admin decoders never panic on bytes from a
// broker.
func FuzzDecodeAdminBodies(f *testing.F) {
	for _, s := range []string{javaTopicStats, javaConsumeStats, javaReset, javaConnections, `{}`, `{"offsetTable":{"x":1}}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		decodeTopicStats(b)
		decodeConsumeStats(b)
		decodeResetOffset(b)
		decodeConsumerConnection(b)
		client.DecodeMessages(b, "x")
	})
}

func TestCMResult(t *testing.T) {
	for _, tc := range []struct {
		raw, want string
		err       bool
	}{
		{`"CR_SUCCESS"`, "CR_SUCCESS", false},
		{`"CR_LATER"`, "CR_LATER", false},
		{`0`, "CR_SUCCESS", false},
		{`1`, "CR_LATER", false},
		{`5`, "CR_RETURN_NULL", false},
		{`6`, "", true},
		{`-1`, "", true},
		{`{}`, "", true},
	} {
		got, err := cmResult(json.RawMessage(tc.raw))
		if got != tc.want || (err != nil) != tc.err {
			t.Errorf("cmResult(%s) = %q, %v; want %q (error %v)", tc.raw, got, err, tc.want, tc.err)
		}
	}
}
