package client

import (
	"bytes"
	"fmt"
	"slices"
	"testing"

	"github.com/apogeemq/apogee/internal/protocol"
	"github.com/apogeemq/apogee/internal/testutil"
)

// TestSendRequestExtList pins the send request's ext list, key for key and
// in order, for each request code the producer uses: V2's one-letter keys,
// V1's long keys, and maxReconsumeTimes only when set (absent, the broker
// applies the group's limit; "0" would mean no retry). Signed requests
// carry it as ExtList; unsigned ones as an ExtEncoder whose frame must be
// byte for byte the list's.
func TestSendRequestExtList(t *testing.T) {
	q := MessageQueue{Topic: "T", BrokerName: "broker-a", QueueID: 3}
	v2 := func(extra ...string) []string {
		out := []string{"a", "pg", "b", "T", "c", "TBW102", "d", "4", "e", "3", "f", "4", "g", "1700000000000",
			"h", "7", "i", "k1\x01v1\x02", "j", "2", "k", "false"}
		return append(out, extra...)
	}
	v1 := func(extra ...string) []string {
		out := []string{"producerGroup", "pg", "topic", "T", "defaultTopic", "TBW102", "defaultTopicQueueNums", "4",
			"queueId", "3", "sysFlag", "4", "bornTimestamp", "1700000000000", "flag", "7",
			"properties", "k1\x01v1\x02", "reconsumeTimes", "2", "unitMode", "false"}
		return append(out, extra...)
	}
	tests := []struct {
		name     string
		v1Header bool
		o        outgoing
		code     protocol.RequestCode
		want     []string
	}{
		{"v2", false, outgoing{}, protocol.SendMessageV2, v2("m", "false", "n", "broker-a")},
		{"v2 with max reconsume", false, outgoing{maxReconsume: 5}, protocol.SendMessageV2,
			v2("l", "5", "m", "false", "n", "broker-a")},
		{"v1", true, outgoing{}, protocol.SendMessage, v1("batch", "false", "bname", "broker-a")},
		{"v1 with max reconsume", true, outgoing{maxReconsume: 5}, protocol.SendMessage,
			v1("maxReconsumeTimes", "5", "batch", "false", "bname", "broker-a")},
		{"batch", false, outgoing{batch: true}, protocol.SendBatchMessage, v2("m", "true", "n", "broker-a")},
		{"reply v2", false, outgoing{reply: true}, protocol.SendReplyMessageV2, v2("m", "false", "n", "broker-a")},
		{"reply v1", true, outgoing{reply: true}, protocol.SendReplyMessage, v1("batch", "false", "bname", "broker-a")},
	}
	for _, tc := range tests {
		for _, signed := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/signed=%v", tc.name, signed), func(t *testing.T) {
				opts := []ProducerOpt{WithNameServers("127.0.0.1:1"), WithLogger(testutil.Logger(t))}
				if tc.v1Header {
					opts = append(opts, WithSendMessageV1(true))
				}
				if signed {
					opts = append(opts, WithCredentials("ak", "sk"))
				}
				p, err := NewProducer("pg", opts...)
				if err != nil {
					t.Fatal(err)
				}
				defer p.Close()
				p.wireGroup = "pg"
				o := tc.o
				o.topic, o.sysFlag, o.flag, o.properties, o.reconsumeTimes = "T", 4, 7, "k1\x01v1\x02", 2
				o.body = []byte("body")
				cmd := p.request(&o, q, 1700000000000)
				if protocol.RequestCode(cmd.Code) != tc.code {
					t.Fatalf("code = %v, want %v", protocol.RequestCode(cmd.Code), tc.code)
				}
				if signed {
					// The signer reads and extends ExtList.
					if cmd.ExtEncoder != nil || !slices.Equal(cmd.ExtList, tc.want) {
						t.Fatalf("ext list\n got %q\nwant %q (encoder %v)", cmd.ExtList, tc.want, cmd.ExtEncoder)
					}
					return
				}
				if len(cmd.ExtList) != 0 || cmd.ExtEncoder == nil {
					t.Fatalf("unsigned request: ExtList %q, ExtEncoder %v; want only an encoder", cmd.ExtList, cmd.ExtEncoder)
				}
				got, err := protocol.AppendFrame(nil, cmd)
				if err != nil {
					t.Fatal(err)
				}
				want, err := protocol.AppendFrame(nil, &protocol.Command{Code: cmd.Code, Language: protocol.LanguageGo,
					Version: protocol.CurrentVersion, ExtList: tc.want, Body: o.body, SerializeType: protocol.SerializeRocketMQ})
				if err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(got, want) {
					t.Fatalf("frame\n got %q\nwant %q", got, want)
				}
			})
		}
	}
}
