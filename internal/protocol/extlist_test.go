package protocol

import (
	"bytes"
	"maps"
	"slices"
	"testing"
)

// listCommand is benchCommand with its ext fields moved to ExtList in key
// order.
func listCommand(st SerializeType) *Command {
	c := benchCommand(st)
	for _, k := range slices.Sorted(maps.Keys(c.ExtFields)) {
		c.ExtList = append(c.ExtList, k, c.ExtFields[k])
	}
	c.ExtFields = nil
	return c
}

// TestExtListEncodesLikeMap: ext fields given as a sorted ExtList produce
// the same bytes as the same fields in ExtFields, in both encodings, and
// decode back into ExtFields.
func TestExtListEncodesLikeMap(t *testing.T) {
	for _, st := range []SerializeType{SerializeJSON, SerializeRocketMQ} {
		t.Run(st.String(), func(t *testing.T) {
			m := benchCommand(st)
			want, err := AppendFrame(nil, m)
			if err != nil {
				t.Fatal(err)
			}
			got, err := AppendFrame(nil, listCommand(st))
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, want) {
				t.Fatalf("ExtList frame differs:\n got %q\nwant %q", got, want)
			}
			dec, err := DecodeFrame(got[4:])
			if err != nil {
				t.Fatal(err)
			}
			if !maps.Equal(dec.ExtFields, m.ExtFields) || dec.ExtList != nil {
				t.Fatalf("decoded ext %v / %v, want %v", dec.ExtFields, dec.ExtList, m.ExtFields)
			}
		})
	}
}

// TestExtListMixed: a map and a list together encode both, map first, and
// the list keeps its order (not sorted).
func TestExtListMixed(t *testing.T) {
	tests := []struct {
		name string
		st   SerializeType
		want string
	}{
		{"json", SerializeJSON, `{"code":10,"extFields":{"a":"1","z":"26","b":"2"},"flag":0,"language":"GO","opaque":0,"remark":"","serializeTypeCurrentRPC":"JSON","version":`},
		{"rocketmq", SerializeRocketMQ, "\x00\x01a\x00\x00\x00\x011\x00\x01z\x00\x00\x00\x0226\x00\x01b\x00\x00\x00\x012"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := NewRequest(SendMessage, map[string]string{"a": "1"}, nil)
			c.ExtList = []string{"z", "26", "b", "2"}
			c.SerializeType = tt.st
			got, err := AppendFrameHeader(nil, c)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Contains(got, []byte(tt.want)) {
				t.Fatalf("header %q does not contain %q", got, tt.want)
			}
			dec, err := DecodeFrame(got[4:])
			if err != nil {
				t.Fatal(err)
			}
			if want := map[string]string{"a": "1", "z": "26", "b": "2"}; !maps.Equal(dec.ExtFields, want) {
				t.Fatalf("decoded %v, want %v", dec.ExtFields, want)
			}
		})
	}
}

// TestExtListAccessors: Ext, ExtInt64, ExtInt32, ExtBool, ExtLen and
// SetExt see ExtList entries.
func TestExtListAccessors(t *testing.T) {
	c := &Command{ExtFields: map[string]string{"m": "x"}, ExtList: []string{"n", "42", "b", "TRUE", "bad", "q"}}
	if got := c.Ext("m"); got != "x" {
		t.Errorf("Ext(m) = %q", got)
	}
	if got := c.Ext("n"); got != "42" {
		t.Errorf("Ext(n) = %q", got)
	}
	if got := c.Ext("none"); got != "" {
		t.Errorf("Ext(none) = %q", got)
	}
	if n, err := c.ExtInt64("n"); err != nil || n != 42 {
		t.Errorf("ExtInt64(n) = %d, %v", n, err)
	}
	if n, err := c.ExtInt32("n"); err != nil || n != 42 {
		t.Errorf("ExtInt32(n) = %d, %v", n, err)
	}
	if _, err := c.ExtInt64("bad"); err == nil {
		t.Error("ExtInt64(bad): no error")
	}
	if _, err := c.ExtInt32("none"); err == nil {
		t.Error("ExtInt32(none): no error")
	}
	if !c.ExtBool("b") || c.ExtBool("m") {
		t.Error("ExtBool")
	}
	if c.ExtLen() != 4 {
		t.Errorf("ExtLen = %d", c.ExtLen())
	}
	c.SetExt("n", "7")
	c.SetExt("new", "v")
	if c.Ext("n") != "7" || c.ExtFields["n"] != "" || c.ExtFields["new"] != "v" || c.ExtLen() != 5 {
		t.Errorf("after SetExt: map %v list %v", c.ExtFields, c.ExtList)
	}
}

// TestAppendHeaderMatchesEncodeHeader: AppendHeader renders the same fields
// as EncodeHeader, each once, in struct order.
func TestAppendHeaderMatchesEncodeHeader(t *testing.T) {
	mr := int32(16)
	tests := []struct {
		name string
		h    any
		v2   bool
	}{
		{"pull", &PullMessageRequestHeader{ConsumerGroup: "g", Topic: "T", QueueID: 1, QueueOffset: 99, MaxMsgNums: 32,
			SysFlag: 3, CommitOffset: 7, SuspendTimeoutMillis: 15000, Subscription: "*", SubVersion: 5, ExpressionType: "TAG", BrokerName: "b"}, false},
		{"pull zero", &PullMessageRequestHeader{}, false},
		{"send v2", &SendMessageRequestHeader{ProducerGroup: "pg", Topic: "T", QueueID: 3, Batch: true, BrokerName: "b"}, true},
		{"send v1", &SendMessageRequestHeader{ProducerGroup: "pg", Topic: "T", MaxReconsumeTimes: 16}, false},
		{"update offset", &UpdateConsumerOffsetRequestHeader{ConsumerGroup: "g", Topic: "T", QueueID: 2, CommitOffset: 10}, false},
		{"pull response", &PullMessageResponseHeader{NextBeginOffset: 3}, false},
		{"pointer field", &struct {
			A *int32 `ext:"a"`
			B *int32 `ext:"b"`
		}{A: &mr}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			want := EncodeHeader(tt.h, tt.v2)
			list := AppendHeader([]string{"x", "y"}, tt.h, tt.v2)
			if list[0] != "x" || list[1] != "y" || len(list)%2 != 0 {
				t.Fatalf("prefix or length broken: %q", list)
			}
			got := map[string]string{}
			var keys []string
			for i := 2; i < len(list); i += 2 {
				if _, dup := got[list[i]]; dup {
					t.Fatalf("key %q twice", list[i])
				}
				got[list[i]] = list[i+1]
				keys = append(keys, list[i])
			}
			if !maps.Equal(got, want) {
				t.Fatalf("AppendHeader %v, EncodeHeader %v", got, want)
			}
			c := NewRequestList(PullMessage, list[2:], nil)
			for _, k := range keys {
				if c.Ext(k) != want[k] {
					t.Fatalf("Ext(%q) = %q, want %q", k, c.Ext(k), want[k])
				}
			}
		})
	}
}
