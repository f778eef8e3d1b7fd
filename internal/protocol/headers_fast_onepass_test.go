package protocol

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// decodeSendHeaderBoth decodes list with the one-pass decoder (through
// DecodeSendHeaderOf) and with the field-by-field list lookup, each into a
// copy of start, and fails t when the results or errors differ. It
// reports whether the one-pass decoder took the list.
func decodeSendHeaderBoth(t *testing.T, list []string, v2 bool, start SendMessageRequestHeader) bool {
	t.Helper()
	a, b := start, start
	ea := DecodeSendHeaderOf(&Command{ExtList: list}, &a, v2)
	eb := decodeSendHeader(extDecoder{list: list}, &b, v2)
	if fmt.Sprint(ea) != fmt.Sprint(eb) || a != b {
		t.Fatalf("v2=%v list %q:\none-pass %+v %v\nlookup   %+v %v", v2, list, a, ea, b, eb)
	}
	c := start
	return decodeSendHeaderList(list, &c, v2)
}

// TestSendHeaderListOnePass: the one-pass list decoder reads what the
// lookup decoder reads, with the same error, and hands back (h untouched)
// every list where the two could differ.
func TestSendHeaderListOnePass(t *testing.T) {
	h := SendMessageRequestHeader{ProducerGroup: "pg", Topic: "T", DefaultTopic: "TBW102", DefaultTopicQueueNums: 4,
		QueueID: 2, SysFlag: 1, BornTimestamp: 1700000000000, Flag: -3, Properties: "a\x01b\x02", ReconsumeTimes: 1,
		UnitMode: true, MaxReconsumeTimes: 16, Batch: true, BrokerName: "b"}
	dirty := SendMessageRequestHeader{ProducerGroup: "old", QueueID: 99, Batch: true, BrokerName: "x"}
	for _, v2 := range []bool{false, true} {
		k := func(long, short string) string { return pick(v2, long, short) }
		full := AppendSendHeader(nil, &h, v2)
		cases := []struct {
			name string
			list []string
			fast bool // the one-pass decoder takes it
		}{
			{"full", full, true},
			{"no maxReconsumeTimes", DeleteExt(append([]string(nil), full...), k("maxReconsumeTimes", "l")), true},
			{"unknown keys", append(append([]string(nil), full...), "zz", "1", k("b", "topic"), "other", "", ""), true},
			{"odd length", append(append([]string(nil), full...), "dangling"), true},
			{"required only", []string{k("producerGroup", "a"), "", k("topic", "b"), "", k("queueId", "e"), "-1",
				k("sysFlag", "f"), "0", k("bornTimestamp", "g"), "0", k("flag", "h"), "+0"}, true},
			{"booleans loose", []string{k("producerGroup", "a"), "p", k("topic", "b"), "T", k("queueId", "e"), "0",
				k("sysFlag", "f"), "0", k("bornTimestamp", "g"), "0", k("flag", "h"), "0",
				k("unitMode", "k"), " TRUE ", k("batch", "m"), "yes"}, true},
			{"repeated topic", append(append([]string(nil), full...), k("topic", "b"), "T2"), false},
			{"repeated unknown", append(append([]string(nil), full...), "zz", "1", "zz", "2"), true},
			{"missing topic", DeleteExt(append([]string(nil), full...), k("topic", "b")), false},
			{"missing flag", DeleteExt(append([]string(nil), full...), k("flag", "h")), false},
			{"empty", nil, false},
			{"spaced number", []string{k("producerGroup", "a"), "p", k("topic", "b"), "T", k("queueId", "e"), " 1",
				k("sysFlag", "f"), "0", k("bornTimestamp", "g"), "0", k("flag", "h"), "0"}, false},
			{"bad number", []string{k("producerGroup", "a"), "p", k("topic", "b"), "T", k("queueId", "e"), "1x",
				k("sysFlag", "f"), "0", k("bornTimestamp", "g"), "0", k("flag", "h"), "0"}, false},
			{"int32 overflow", []string{k("producerGroup", "a"), "p", k("topic", "b"), "T", k("queueId", "e"), "2147483648",
				k("sysFlag", "f"), "0", k("bornTimestamp", "g"), "9223372036854775807", k("flag", "h"), "0"}, false},
			{"int32 bounds", []string{k("producerGroup", "a"), "p", k("topic", "b"), "T", k("queueId", "e"), "-2147483648",
				k("sysFlag", "f"), "2147483647", k("bornTimestamp", "g"), "-999999999999999999", k("flag", "h"), "0"}, true},
		}
		for _, tc := range cases {
			for _, start := range []SendMessageRequestHeader{{}, dirty} {
				t.Run(fmt.Sprintf("v2=%v/%s", v2, tc.name), func(t *testing.T) {
					if got := decodeSendHeaderBoth(t, tc.list, v2, start); got != tc.fast {
						t.Fatalf("one-pass took the list: %v, want %v", got, tc.fast)
					}
				})
			}
		}
		// Any order, with fields dropped.
		rng := rand.New(rand.NewPCG(3, 4))
		for round := range 300 {
			n := len(full) / 2
			perm := rng.Perm(n)
			keep := n - round%5
			list := make([]string, 0, 2*keep)
			for _, p := range perm[:keep] {
				list = append(list, full[2*p], full[2*p+1])
			}
			decodeSendHeaderBoth(t, list, v2, dirty)
		}
	}
}

// FuzzSendHeaderListOnePass: for any list of send header pairs the
// one-pass decoder and the lookup decoder agree on the header and the
// error.
func FuzzSendHeaderListOnePass(f *testing.F) {
	f.Add("b", "T", "e", "-1", "g", "12", "h", "0", true)
	f.Add("topic", "T", "queueId", " 5", "flag", "x", "bname", "b", false)
	f.Add("a", "p", "a", "q", "k", "TRUE", "m", "", true)
	f.Fuzz(func(t *testing.T, k1, v1, k2, v2, k3, v3, k4, v4 string, useV2 bool) {
		base := AppendSendHeader(nil, &SendMessageRequestHeader{ProducerGroup: "p", Topic: "T", QueueID: 1,
			BornTimestamp: 5}, useV2)
		extra := []string{k1, v1, k2, v2, k3, v3, k4, v4}
		for _, list := range [][]string{extra, append(append([]string(nil), base...), extra...),
			append(append([]string(nil), extra...), base...), DeleteExt(append(append([]string(nil), base...), extra...), k1)} {
			decodeSendHeaderBoth(t, list, useV2, SendMessageRequestHeader{})
			decodeSendHeaderBoth(t, list, useV2, SendMessageRequestHeader{Topic: "old", Flag: 9})
		}
	})
}
