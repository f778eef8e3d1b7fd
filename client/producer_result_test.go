package client

import (
	"bytes"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
	"unsafe"

	"github.com/apogeemq/apogee/internal/message"

	"github.com/apogeemq/apogee/internal/protocol"
	"github.com/apogeemq/apogee/internal/remoting"
	"github.com/apogeemq/apogee/internal/testutil"
)

// plainResult is Producer.result as it was written before the one-pass
// field read and the digit parser: every field through resp.Ext, the
// numbers through strconv. result must give the same SendResult.
func plainResult(o *outgoing, q MessageQueue, resp *protocol.Command, st SendStatus) *SendResult {
	res := &SendResult{
		Status:        st,
		MsgID:         o.uniqIDs,
		OffsetMsgID:   resp.Ext("msgId"),
		Queue:         MessageQueue{Topic: o.userTopic, BrokerName: q.BrokerName, QueueID: q.QueueID},
		TransactionID: resp.Ext("transactionId"),
		RegionID:      resp.Ext("MSG_REGION"),
		TraceOn:       resp.Ext("TRACE_ON") != "false",
	}
	if v := resp.Ext("queueId"); v != "" {
		if n, err := strconv.Atoi(v); err == nil {
			res.Queue.QueueID = n
		}
	}
	if v := resp.Ext("queueOffset"); v != "" {
		res.QueueOffset, _ = strconv.ParseInt(v, 10, 64)
	}
	if res.RegionID == "" {
		res.RegionID = "DefaultRegion"
	}
	return res
}

// checkResult compares result with plainResult for resp, with and without
// result storage of the outgoing's own.
func checkResult(t *testing.T, p *Producer, resp *protocol.Command) {
	t.Helper()
	q := MessageQueue{Topic: "T", BrokerName: "broker-a", QueueID: 3}
	for _, own := range []bool{false, true} {
		o := &outgoing{userTopic: "T", uniqIDs: "ID"}
		var storage SendResult
		if own {
			o.result = &storage
		}
		got, gerr := p.result(o, q, "127.0.0.1:1", resp)
		if gerr != nil {
			if protocol.ResponseCode(resp.Code) == protocol.Success {
				t.Fatalf("result: %v", gerr)
			}
			return
		}
		if own && got != &storage {
			t.Fatalf("result did not use the outgoing's storage")
		}
		if own && o.result != nil {
			t.Fatalf("result storage not taken")
		}
		want := plainResult(o, q, resp, got.Status)
		if *got != *want {
			t.Fatalf("result of %q / %v\n got %+v\nwant %+v", resp.ExtList, resp.ExtFields, *got, *want)
		}
	}
}

func newIdleProducer(t testing.TB) *Producer {
	p, err := NewProducer("pg", WithNameServers("127.0.0.1:1"), WithLogger(testutil.DiscardLogger()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close() })
	return p
}

// TestSendResultFields: send responses as lists (what the SDK's remoting
// client decodes) and as maps (JSON, or headers left to the map decoder)
// give the SendResult the plain lookups gave, for the numbers strconv
// accepts, rejects or clamps, repeated keys and missing fields.
func TestSendResultFields(t *testing.T) {
	p := newIdleProducer(t)
	full := []string{"msgId", "0A00000100002A9F0000000000000064", "queueId", "2", "queueOffset", "17",
		"transactionId", "TX", "MSG_REGION", "R", "TRACE_ON", "true"}
	lists := [][]string{
		nil,
		full,
		{"queueId", "1"},
		{"TRACE_ON", "false"},
		{"TRACE_ON", "FALSE"},
		{"MSG_REGION", ""},
		{"queueId", "2", "queueId", "5", "queueOffset", "9", "queueOffset", "11", "msgId", "a", "msgId", "b"},
		{"other", "x", "queueId", "7"},
	}
	for _, n := range []string{"0", "007", "+5", "-1", "-0", " 1", "1 ", "x", "12a", "2147483647", "2147483648",
		"999999999999999999", "9999999999999999999", "99999999999999999999", "9223372036854775807",
		"9223372036854775808", "-9223372036854775809", "1_000", "0x10", "", "٣"} {
		lists = append(lists, []string{"queueId", n, "queueOffset", n})
	}
	for _, code := range []protocol.ResponseCode{protocol.Success, protocol.FlushDiskTimeout, protocol.FlushSlaveTimeout,
		protocol.SlaveNotAvailable, protocol.SystemError} {
		for _, l := range lists {
			checkResult(t, p, &protocol.Command{Code: int32(code), ExtList: l})
			if m := listMap(l); m != nil {
				checkResult(t, p, &protocol.Command{Code: int32(code), ExtFields: m})
				// A map and a list: the map's keys first, as Ext.
				checkResult(t, p, &protocol.Command{Code: int32(code), ExtFields: map[string]string{"queueId": "4"}, ExtList: l})
			}
		}
	}
}

// listMap is l as a map (the last of repeated keys wins, as in the map
// decoder), nil for an empty list.
func listMap(l []string) map[string]string {
	if len(l) == 0 {
		return nil
	}
	m := make(map[string]string, len(l)/2)
	for i := 0; i+1 < len(l); i += 2 {
		m[l[i]] = l[i+1]
	}
	return m
}

// FuzzSendResultFields holds result to plainResult for any values of the
// fields it reads, decoded from a frame as the remoting client does.
func FuzzSendResultFields(f *testing.F) {
	f.Add("0A00000100002A9F0000000000000064", "2", "17", "TX", "DefaultRegion", "true")
	f.Add("", "-1", "+9", "", "", "false")
	f.Add("x", "99999999999999999999", "1e3", "y", "z", "FALSE")
	p := newIdleProducer(f)
	f.Fuzz(func(t *testing.T, msgID, queueID, queueOffset, txID, region, traceOn string) {
		ext := map[string]string{"msgId": msgID, "queueId": queueID, "queueOffset": queueOffset,
			"transactionId": txID, "MSG_REGION": region, "TRACE_ON": traceOn}
		c := &protocol.Command{Code: int32(protocol.Success), Opaque: 5, Flag: protocol.FlagResponse, ExtFields: ext,
			SerializeType: protocol.SerializeRocketMQ}
		frame, err := protocol.AppendFrame(nil, c)
		if err != nil {
			t.Skip(err)
		}
		r := protocol.NewFrameReader(bytes.NewReader(frame), 0, 0)
		r.SetExtListResponses(func(int32) bool { return true })
		resp, err := r.Next()
		if err != nil {
			t.Fatal(err)
		}
		checkResult(t, p, resp)
		checkResult(t, p, c)
	})
}

// TestParseDecimal: exactly the strings of 1 to 18 ASCII digits, with
// strconv's value.
func TestParseDecimal(t *testing.T) {
	for _, s := range []string{"", "0", "1", "09", "123456789012345678", "1234567890123456789", "+1", "-1", "1a",
		"a", " 1", "/", ":", "999999999999999999"} {
		n, ok := parseDecimal(s)
		want, err := strconv.ParseInt(s, 10, 64)
		plain := len(s) >= 1 && len(s) <= 18 && err == nil && s[0] != '+' && s[0] != '-'
		if ok != plain || ok && n != want {
			t.Errorf("parseDecimal(%q) = %d, %v; strconv %d, %v", s, n, ok, want, err)
		}
	}
}

// TestRequestRecycled: a recycled send request, after remoting set its
// opaque and flag and a signer its list, is built as a fresh one, and a
// released one holds no references.
func TestRequestRecycled(t *testing.T) {
	for _, signed := range []bool{false, true} {
		t.Run(fmt.Sprintf("signed=%v", signed), func(t *testing.T) {
			opts := []ProducerOpt{WithNameServers("127.0.0.1:1"), WithLogger(testutil.Logger(t))}
			if signed {
				opts = append(opts, WithCredentials("ak", "sk"))
			}
			p, err := NewProducer("pg", opts...)
			if err != nil {
				t.Fatal(err)
			}
			defer p.Close()
			o1 := &outgoing{topic: "T1", body: []byte("b1"), flag: 1, sysFlag: 2, properties: "p1", reconsumeTimes: 3,
				maxReconsume: 4, batch: true}
			o2 := &outgoing{topic: "T2", body: []byte("b2"), properties: "p2"}
			q1 := MessageQueue{Topic: "T1", BrokerName: "b-1", QueueID: 1}
			q2 := MessageQueue{Topic: "T2", BrokerName: "b-2", QueueID: 2}
			fresh := func(o *outgoing, q MessageQueue, born int64) *sendRequest {
				p2, err := NewProducer("pg", opts...)
				if err != nil {
					t.Fatal(err)
				}
				defer p2.Close()
				return p2.newRequest(o, q, born)
			}
			for round := range 3 {
				o, q := o1, q1
				if round%2 == 1 {
					o, q = o2, q2
				}
				r := p.newRequest(o, q, int64(1700000000000+round))
				want := fresh(o, q, int64(1700000000000+round))
				if !sameRequest(r, want) {
					t.Fatalf("round %d: recycled request\n %+v\n %+v\nfresh\n %+v\n %+v", round, r.cmd, r.hdr, want.cmd, want.hdr)
				}
				// What remoting and a signer do to it.
				r.cmd.Opaque, r.cmd.Flag = 99, protocol.FlagOneway
				r.cmd.ExtList = append(r.cmd.ExtList, "AccessKey", "ak")
				p.releaseRequest(r)
				if !reflect.DeepEqual(r.cmd, protocol.Command{}) {
					t.Fatalf("released command %+v", r.cmd)
				}
				h := r.hdr.Header
				if h.ProducerGroup != "" || h.Topic != "" || h.DefaultTopic != "" || h.Properties != "" || h.BrokerName != "" ||
					r.ext != [28]string{} {
					t.Fatalf("released request keeps strings: %+v %q", h, r.ext)
				}
			}
		})
	}
}

// sameRequest compares two requests, their ExtEncoder by what it encodes
// (a recycled request's header template was built for an earlier send).
func sameRequest(a, b *sendRequest) bool {
	ac, bc := a.cmd, b.cmd
	ah, bh := a.hdr, b.hdr
	ah.Template, bh.Template = nil, nil
	if (ac.ExtEncoder == nil) != (bc.ExtEncoder == nil) || ah != bh {
		return false
	}
	af, aerr := protocol.AppendFrame(nil, &ac)
	bf, berr := protocol.AppendFrame(nil, &bc)
	if aerr != nil || berr != nil || !bytes.Equal(af, bf) {
		return false
	}
	ac.ExtEncoder, bc.ExtEncoder = nil, nil
	return reflect.DeepEqual(ac, bc)
}

// TestAsyncSendForget: once its last attempt is over an asyncSend that is
// not recycled (a batch, a message the accumulator sends alone) drops its
// references to the message, its body, the contexts, the route and the
// callback (a kept SendResult keeps the outgoing alive), and keeps the
// strings the result shares; a recycled one is cleared whole.
func TestAsyncSendForget(t *testing.T) {
	p := newIdleProducer(t)
	msg := NewMessage("T", []byte("body")).WithTag("TagA")
	o, err := p.prepare(msg, nil)
	if err != nil {
		t.Fatal(err)
	}
	a := &asyncSend{o: o}
	a.p, a.qs, a.cb, a.parent, a.ctx, a.cancel = p, []MessageQueue{{}}, func(*SendResult, error) {}, t.Context(), t.Context(), func() {}
	a.sc = &SendContext{}
	props, id := o.properties, o.uniqIDs
	a.forget()
	if a.o != nil || o.body != nil || o.msg != nil || o.msgs != nil || a.qs != nil || a.cb != nil ||
		a.parent != nil || a.ctx != nil || a.cancel != nil || a.sc != nil || a.call != (remoting.AsyncCall{}) {
		t.Fatalf("forget left references: %+v %+v", a, o)
	}
	if a.p != p || o.properties != props || o.uniqIDs != id {
		t.Fatalf("forget dropped what the result shares")
	}

	r := p.newAsyncSend()
	if err := p.prepareInto(&r.out, r.props[:0], msg, nil, time.Time{}); err != nil {
		t.Fatal(err)
	}
	if unsafe.StringData(r.out.properties) != &r.props[0] {
		t.Fatalf("properties %q not in the asyncSend's own storage", r.out.properties)
	}
	r.o, r.p, r.cb = &r.out, p, func(*SendResult, error) {}
	p.releaseAsyncSend(r)
	if !reflect.DeepEqual(*r, asyncSend{recycle: true}) {
		t.Fatalf("released asyncSend not cleared: %+v", r)
	}
}

// TestSendResultsSurviveRecycling: the results SendAsync and Send handed
// out stay what they were when they arrived while later sends recycle the
// asyncSends, their properties' storage and the responses they were
// decoded from; every MsgID is the UNIQ_KEY the broker received.
func TestSendResultsSurviveRecycling(t *testing.T) {
	fb := newFakeBroker(t, "broker-a")
	fb.Serve("T", fb)
	p, err := NewProducer("pg", WithNameServers(fb.Addr()), WithLogger(testutil.Logger(t)))
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Start(); err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	ctx := testutil.Context(t, 30*time.Second)
	type kept struct {
		res  *SendResult
		copy SendResult
	}
	var mu sync.Mutex
	var all []kept
	keep := func(res *SendResult) {
		c := *res
		c.MsgID, c.OffsetMsgID = strings.Clone(c.MsgID), strings.Clone(c.OffsetMsgID)
		c.TransactionID, c.RegionID = strings.Clone(c.TransactionID), strings.Clone(c.RegionID)
		c.Queue.Topic, c.Queue.BrokerName = strings.Clone(c.Queue.Topic), strings.Clone(c.Queue.BrokerName)
		mu.Lock()
		all = append(all, kept{res, c})
		mu.Unlock()
	}
	for round := range 4 {
		var wg sync.WaitGroup
		for i := range 100 {
			wg.Add(1)
			msg := NewMessage("T", []byte("body")).WithKeys(fmt.Sprintf("k%d-%d", round, i))
			if err := p.SendAsync(ctx, msg, func(res *SendResult, err error) {
				defer wg.Done()
				if err != nil {
					t.Error(err)
					return
				}
				keep(res)
			}); err != nil {
				t.Fatal(err)
			}
		}
		wg.Wait()
		res, err := p.Send(ctx, NewMessage("T", []byte("sync")))
		if err != nil {
			t.Fatal(err)
		}
		keep(res)
	}
	uniq := map[string]bool{}
	for _, s := range fb.Sends() {
		props := message.DecodeProperties(s.Ext("i"))
		uniq[props[message.PropertyUniqClientMessageIDKeyidx]] = true
	}
	seen := map[string]bool{}
	for i, k := range all {
		if *k.res != k.copy {
			t.Fatalf("result %d changed after later sends:\n got %+v\nwant %+v", i, *k.res, k.copy)
		}
		if k.res.OffsetMsgID == "" || k.res.RegionID != "DefaultRegion" || !uniq[k.res.MsgID] || seen[k.res.MsgID] {
			t.Fatalf("result %d: %+v (UNIQ_KEY sent: %v, seen before: %v)", i, *k.res, uniq[k.res.MsgID], seen[k.res.MsgID])
		}
		seen[k.res.MsgID] = true
	}
}

// TestKeepResultStrings: the kept strings equal the response's and the
// outgoing's, share one allocation, and reuse the UNIQ_KEY for an echoed
// transaction id and the literal for the default region.
func TestKeepResultStrings(t *testing.T) {
	for _, tc := range []struct {
		recycled bool
		f        sendResponseFields
	}{
		{false, sendResponseFields{msgID: "OFF", transactionID: "UNIQ", region: "DefaultRegion"}},
		{true, sendResponseFields{msgID: "OFF", transactionID: "UNIQ", region: "DefaultRegion"}},
		{true, sendResponseFields{msgID: "OFF", transactionID: "TX", region: "R"}},
		{false, sendResponseFields{}},
		{true, sendResponseFields{}},
		{true, sendResponseFields{region: "R"}},
	} {
		o := &outgoing{uniqIDs: strings.Clone("UNIQ"), recycled: tc.recycled}
		msgID, off, tx, region := keepResultStrings(o, &tc.f)
		wantRegion := tc.f.region
		if wantRegion == "DefaultRegion" {
			wantRegion = ""
		}
		if msgID != "UNIQ" || off != tc.f.msgID || tx != tc.f.transactionID || region != wantRegion {
			t.Fatalf("%+v: got %q %q %q %q", tc, msgID, off, tx, region)
		}
		if tc.recycled && unsafe.StringData(msgID) == unsafe.StringData(o.uniqIDs) {
			t.Fatalf("%+v: MsgID of a recycled outgoing not copied", tc)
		}
		if !tc.recycled && unsafe.StringData(msgID) != unsafe.StringData(o.uniqIDs) {
			t.Fatalf("%+v: MsgID copied needlessly", tc)
		}
		if tc.f.transactionID == "UNIQ" && unsafe.StringData(tx) != unsafe.StringData(msgID) {
			t.Fatalf("%+v: echoed transaction id not shared", tc)
		}
		if off != "" && unsafe.StringData(off) == unsafe.StringData(tc.f.msgID) {
			t.Fatalf("%+v: offset msg id not copied", tc)
		}
	}
	if n := testing.AllocsPerRun(100, func() {
		f := sendResponseFields{msgID: "0A00000100002A9F00000000004C4B40", transactionID: "UNIQ", region: "DefaultRegion"}
		keepResultStrings(&outgoing{uniqIDs: "UNIQ", recycled: true}, &f)
	}); n != 1 {
		t.Fatalf("%v allocations, want 1", n)
	}
}

// TestSendStateSizeClasses: a recycled asyncSend stays in the 576-byte
// size class and a synchronous send's one allocation in the 384-byte one
// (on 64-bit platforms; objects over 512 bytes with pointers carry an
// 8-byte malloc header).
func TestSendStateSizeClasses(t *testing.T) {
	if unsafe.Sizeof(uintptr(0)) != 8 {
		t.Skip("64-bit layout")
	}
	if n := unsafe.Sizeof(asyncSend{}) + 8; n > 576 {
		t.Errorf("asyncSend takes %d bytes with its header, over 576", n)
	}
	if n := unsafe.Sizeof(preparedMessage{}); n > 384 {
		t.Errorf("preparedMessage takes %d bytes, over 384", n)
	}
}
