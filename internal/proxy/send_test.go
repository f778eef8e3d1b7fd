package proxy

import (
	"maps"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/apogeemq/apogee/internal/message"
	pb "github.com/apogeemq/apogee/internal/rmqpb"
)

// TestSendProperties: the stored properties string decodes to the pairs
// RocketMQ's proxy stores for each kind of message, and one message always
// encodes to the same string.
func TestSendProperties(t *testing.T) {
	tag, group, trace := "TagA", "order-1", "00-trace"
	deliver := time.UnixMilli(1800000000123)
	for _, tc := range []struct {
		name    string
		m       *pb.Message
		mt      pb.MessageType
		want    map[string]string
		sysFlag int32
	}{
		{"normal", &pb.Message{UserProperties: map[string]string{"b": "2", "a": "1", "c": "3"},
			SystemProperties: &pb.SystemProperties{MessageId: "ID1", Tag: &tag, Keys: []string{"k1", "k2"}, BornHost: "h"}},
			pb.MessageType_NORMAL,
			map[string]string{"a": "1", "b": "2", "c": "3", "UNIQ_KEY": "ID1", "WAIT": "true", "TAGS": "TagA", "KEYS": "k1 k2", "__BORNHOST": "h"}, 0},
		{"fifo", &pb.Message{SystemProperties: &pb.SystemProperties{MessageId: "ID2", MessageGroup: &group}},
			pb.MessageType_FIFO, map[string]string{"UNIQ_KEY": "ID2", "WAIT": "true", "__SHARDINGKEY": "order-1"}, 0},
		{"delay", &pb.Message{SystemProperties: &pb.SystemProperties{MessageId: "ID3", DeliveryTimestamp: timestamppb.New(deliver), TraceContext: &trace}},
			pb.MessageType_DELAY, map[string]string{"UNIQ_KEY": "ID3", "WAIT": "true", "TIMER_DELIVER_MS": "1800000000123", "TRACE_CONTEXT": "00-trace"}, 0},
		{"transaction", &pb.Message{SystemProperties: &pb.SystemProperties{MessageId: "ID4",
			OrphanedTransactionRecoveryDuration: durationpb.New(30 * time.Second)}},
			pb.MessageType_TRANSACTION, map[string]string{"UNIQ_KEY": "ID4", "WAIT": "true", "TRAN_MSG": "true", "PGROUP": "T",
				"CHECK_IMMUNITY_TIME_IN_SECONDS": "30"}, message.SysFlagTransactionPreparedType},
	} {
		t.Run(tc.name, func(t *testing.T) {
			props, flag := sendProperties("T", tc.m, tc.mt)
			if got := message.DecodeProperties(props); !maps.Equal(got, tc.want) || flag != tc.sysFlag {
				t.Errorf("properties %v sysFlag %d, want %v %d", got, flag, tc.want, tc.sysFlag)
			}
			for range 5 {
				if again, _ := sendProperties("T", tc.m, tc.mt); again != props {
					t.Fatalf("encoding differs between calls: %q vs %q", again, props)
				}
			}
		})
	}
}
