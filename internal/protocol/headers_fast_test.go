package protocol

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// fastHeaderCases are headers with every field set, zero headers, and
// omitempty fields both ways.
func fastHeaderCases() []any {
	return []any{
		&SendMessageRequestHeader{ProducerGroup: "pg", Topic: "T", DefaultTopic: "TBW102", DefaultTopicQueueNums: 4,
			QueueID: -1, SysFlag: 2, BornTimestamp: 1764400000000, Flag: 7, Properties: "TAGS\x01a\x02",
			ReconsumeTimes: 3, UnitMode: true, MaxReconsumeTimes: 16, Batch: true, BrokerName: "b"},
		&SendMessageRequestHeader{},
		&PullMessageRequestHeader{ConsumerGroup: "g", Topic: "T", QueueID: 1, QueueOffset: 1 << 40, MaxMsgNums: 32,
			SysFlag: 7, CommitOffset: 9, SuspendTimeoutMillis: 15000, Subscription: "a || b", SubVersion: 5,
			ExpressionType: "TAG", MaxMsgBytes: 1 << 20, BrokerName: "b"},
		&PullMessageRequestHeader{},
		&SendMessageResponseHeader{MsgID: "AC11", QueueID: 3, QueueOffset: 77, TransactionID: "t", BatchUniqID: "u",
			MsgRegion: "r", TraceOn: "true", RecallHandle: "djE="},
		&SendMessageResponseHeader{},
		&PullMessageResponseHeader{SuggestWhichBrokerID: 1, NextBeginOffset: 2, MinOffset: 3, MaxOffset: 4,
			TopicSysFlag: 5, GroupSysFlag: 6, ForbiddenType: 7},
		&PullMessageResponseHeader{},
	}
}

// TestFastHeadersMatchReflect: the hand-written encoders emit exactly what
// the generic reflect walk emits (same pairs, same order), for v1 and v2
// names, and the decoders rebuild the same struct.
func TestFastHeadersMatchReflect(t *testing.T) {
	for i, h := range fastHeaderCases() {
		for _, v2 := range []bool{false, true} {
			t.Run(fmt.Sprintf("%d/%T/v2=%v", i, h, v2), func(t *testing.T) {
				want := appendHeaderReflect([]string{"x", "y"}, h, v2)
				got, ok := appendFastHeader([]string{"x", "y"}, h, v2)
				if !ok {
					t.Fatal("no fast encoder")
				}
				if !slices.Equal(got, want) {
					t.Fatalf("fast %q\nreflect %q", got, want)
				}
				if !slices.Equal(AppendHeader(nil, h, v2), want[2:]) {
					t.Fatal("AppendHeader(nil) differs")
				}
				ext := map[string]string{}
				for j := 2; j < len(got); j += 2 {
					ext[got[j]] = got[j+1]
				}
				fast := reflect.New(reflect.TypeOf(h).Elem()).Interface()
				slow := reflect.New(reflect.TypeOf(h).Elem()).Interface()
				errF := DecodeHeader(ext, fast, v2)
				errS := decodeHeaderReflect(ext, slow, v2)
				if fmt.Sprint(errF) != fmt.Sprint(errS) || !reflect.DeepEqual(fast, slow) {
					t.Fatalf("decode: fast %+v %v, reflect %+v %v", fast, errF, slow, errS)
				}
				switch h.(type) {
				case *SendMessageRequestHeader, *PullMessageRequestHeader:
					if errF != nil || !reflect.DeepEqual(fast, h) {
						t.Fatalf("round trip %+v %v, want %+v", fast, errF, h)
					}
				}
			})
		}
	}
}

// TestFastDecodeErrors: missing and malformed fields give the generic
// decoder's errors, the first one in field order.
func TestFastDecodeErrors(t *testing.T) {
	tests := []struct {
		name string
		ext  map[string]string
		v2   bool
		want string
	}{
		{"empty send v2", map[string]string{}, true, "<a> is null"},
		{"no topic", map[string]string{"producerGroup": "p"}, false, "<topic> is null"},
		{"bad queue", map[string]string{"a": "p", "b": "T", "e": "x", "f": "", "g": "1", "h": "0"}, true, "<e> has a bad value"},
		{"int32 overflow", map[string]string{"a": "p", "b": "T", "e": "4294967296", "f": "0", "g": "1", "h": "0"}, true, "<e> has a bad value"},
		{"spaces ok", map[string]string{"a": "p", "b": "T", "e": " 1 ", "f": "0", "g": "1", "h": "0", "k": " TRUE "}, true, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var fast, slow SendMessageRequestHeader
			errF := DecodeHeader(tt.ext, &fast, tt.v2)
			errS := decodeHeaderReflect(tt.ext, &slow, tt.v2)
			if fmt.Sprint(errF) != fmt.Sprint(errS) || fast != slow {
				t.Fatalf("fast %+v %v, reflect %+v %v", fast, errF, slow, errS)
			}
			if tt.want == "" && errF != nil || tt.want != "" && (errF == nil || !strings.Contains(errF.Error(), tt.want)) {
				t.Fatalf("err = %v, want %q", errF, tt.want)
			}
		})
	}
}

// FuzzFastHeaders: for any ext map, the hand-written decoders agree with
// the reflect decoder on the result and the error.
func FuzzFastHeaders(f *testing.F) {
	f.Add("a", "pg", "e", "-1", "g", "12", true)
	f.Add("queueOffset", " 5", "maxMsgNums", "x", "topic", "T", false)
	f.Fuzz(func(t *testing.T, k1, v1, k2, v2, k3, v3 string, useV2 bool) {
		ext := map[string]string{k1: v1, k2: v2, k3: v3}
		base := map[string]string{"a": "p", "b": "T", "e": "0", "f": "0", "g": "0", "h": "0",
			"producerGroup": "p", "topic": "T", "queueId": "0", "sysFlag": "0", "bornTimestamp": "0", "flag": "0",
			"consumerGroup": "g", "queueOffset": "0", "maxMsgNums": "1"}
		for _, m := range []map[string]string{ext, merged(base, ext)} {
			var sf, ss SendMessageRequestHeader
			ef, es := DecodeHeader(m, &sf, useV2), decodeHeaderReflect(m, &ss, useV2)
			if fmt.Sprint(ef) != fmt.Sprint(es) || sf != ss {
				t.Fatalf("send: fast %+v %v, reflect %+v %v", sf, ef, ss, es)
			}
			var pf, ps PullMessageRequestHeader
			ef, es = DecodeHeader(m, &pf, useV2), decodeHeaderReflect(m, &ps, useV2)
			if fmt.Sprint(ef) != fmt.Sprint(es) || pf != ps {
				t.Fatalf("pull: fast %+v %v, reflect %+v %v", pf, ef, ps, es)
			}
		}
	})
}

func merged(a, b map[string]string) map[string]string {
	out := make(map[string]string, len(a)+len(b))
	for k, v := range a {
		out[k] = v
	}
	for k, v := range b {
		out[k] = v
	}
	return out
}

// FuzzParseDecimal: parseDecimal, the integer fields' fast path, accepts
// only what strconv.ParseInt(s, 10, 64) accepts, with the same value.
func FuzzParseDecimal(f *testing.F) {
	for _, s := range []string{"0", "-1", "+7", "1700000000000", "999999999999999999", "-999999999999999999",
		"9223372036854775807", "", "-", "+", " 5", "5 ", "1_000", "0x10", "١"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		n, ok := parseDecimal(s)
		if !ok {
			return
		}
		want, err := strconv.ParseInt(s, 10, 64)
		if err != nil || n != want {
			t.Fatalf("parseDecimal(%q) = %d, ParseInt = %d, %v", s, n, want, err)
		}
	})
}

// TestSendHeaderListAnyOrder: the list lookup (which starts past the last
// hit and wraps) reads the same header as the map decode whatever the
// order of the pairs, including fields missing or out of order.
func TestSendHeaderListAnyOrder(t *testing.T) {
	h := SendMessageRequestHeader{ProducerGroup: "pg", Topic: "T", DefaultTopic: "TBW102", DefaultTopicQueueNums: 4,
		QueueID: 2, SysFlag: 1, BornTimestamp: 1700000000000, Flag: -3, Properties: "a\x01b\x02", ReconsumeTimes: 1,
		UnitMode: true, MaxReconsumeTimes: 16, Batch: true, BrokerName: "b"}
	rng := rand.New(rand.NewPCG(1, 2))
	for _, v2 := range []bool{false, true} {
		full := AppendSendHeader(nil, &h, v2)
		for round := range 500 {
			n := len(full) / 2
			perm := rng.Perm(n)
			keep := n - round%4 // sometimes drop trailing pairs of the permutation
			list := make([]string, 0, 2*keep)
			m := map[string]string{}
			for _, p := range perm[:keep] {
				list = append(list, full[2*p], full[2*p+1])
				m[full[2*p]] = full[2*p+1]
			}
			var a, b SendMessageRequestHeader
			ea := DecodeSendHeader(m, &a, v2)
			eb := DecodeSendHeaderOf(&Command{ExtList: list}, &b, v2)
			if fmt.Sprint(ea) != fmt.Sprint(eb) || a != b {
				t.Fatalf("v2=%v list %q: map %+v %v, list %+v %v", v2, list, a, ea, b, eb)
			}
			if keep == n && (eb != nil || b != h) {
				t.Fatalf("v2=%v list %q: %+v %v, want %+v", v2, list, b, eb, h)
			}
		}
	}
}
