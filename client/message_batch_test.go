package client

import (
	"net/netip"
	"reflect"
	"strconv"
	"testing"

	"github.com/apogeemq/apogee/internal/message"
	"github.com/apogeemq/apogee/internal/names"
)

// TestMessageExtsMatchesToMessageExt: the batch conversion gives, message
// for message, what the one-at-a-time conversion gives: IPv4, IPv6 and
// invalid store hosts, several born hosts, messages without UNIQ_KEY,
// retry messages, a namespace, and a filter.
func TestMessageExtsMatchesToMessageExt(t *testing.T) {
	hosts := []netip.AddrPort{
		netip.MustParseAddrPort("10.0.0.1:10911"),
		netip.MustParseAddrPort("[2001:db8::1]:10911"),
		netip.MustParseAddrPort("[::ffff:10.0.0.2]:10911"),
		{},
	}
	const group, ns = "g", "ns1"
	var body []byte
	for i := range 12 {
		props := map[string]string{message.PropertyTags: "Tag" + strconv.Itoa(i%3)}
		topic := wrapNamespace(ns, "T")
		if i%4 != 0 {
			props[message.PropertyUniqClientMessageIDKeyidx] = "ID" + strconv.Itoa(i)
		}
		if i%5 == 0 {
			topic = names.RetryGroupTopicPrefix + group
			props[message.PropertyRetryTopic] = wrapNamespace(ns, "Orig")
		}
		e := &message.Ext{
			Message:         message.Message{Topic: topic, Body: []byte("body" + strconv.Itoa(i)), Properties: props},
			QueueID:         2,
			QueueOffset:     int64(i),
			CommitLogOffset: int64(i) * 1000,
			BornTimestamp:   1764400000000 + int64(i),
			BornHost:        netip.AddrPortFrom(netip.AddrFrom4([4]byte{192, 168, 0, byte(i / 3)}), 4000),
			StoreTimestamp:  1764400001000,
			StoreHost:       hosts[i%len(hosts)],
		}
		var err error
		if body, err = message.AppendStored(body, e); err != nil {
			t.Fatal(err)
		}
	}
	es, err := message.DecodeStoredAll(body, message.DecodeOptions{Decompress: true})
	if err != nil || len(es) != 12 {
		t.Fatalf("%d records, %v", len(es), err)
	}
	mq := MessageQueue{Topic: "T", BrokerName: "broker-a", QueueID: 2}
	tests := []struct {
		name string
		keep func(*message.Ext) bool
	}{
		{"all", nil},
		{"filtered", func(e *message.Ext) bool { return e.Properties[message.PropertyTags] != "Tag1" }},
		{"none", func(*message.Ext) bool { return false }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var want []*MessageExt
			for _, e := range es {
				if tt.keep == nil || tt.keep(e) {
					want = append(want, toMessageExt(e, mq, group, ns))
				}
			}
			got := messageExts(es, tt.keep, mq, group, ns)
			if len(got) != len(want) {
				t.Fatalf("%d messages, want %d", len(got), len(want))
			}
			for i := range want {
				if !reflect.DeepEqual(got[i], want[i]) {
					t.Fatalf("message %d:\n got %+v\nwant %+v", i, got[i], want[i])
				}
			}
			if len(want) > 5 && want[0].Topic != "Orig" {
				t.Fatalf("retry topic not restored: %q", want[0].Topic)
			}
		})
	}
}

// TestFillMessageExtSetsEveryField: fillMessageExt sets its fields one by
// one, so a field it forgets would stay zero; from a record with every
// field set, every field of the MessageExt must be set.
func TestFillMessageExtSetsEveryField(t *testing.T) {
	e := &message.Ext{
		Message: message.Message{Topic: "T", Flag: 3, Body: []byte("b"),
			Properties: map[string]string{message.PropertyUniqClientMessageIDKeyidx: "ID"}},
		StoreSize: 200, QueueID: 1, SysFlag: 4, BornTimestamp: 1764400000000,
		BornHost: netip.MustParseAddrPort("10.0.0.1:4000"), StoreTimestamp: 1764400000001,
		StoreHost: netip.MustParseAddrPort("10.0.0.2:10911"), QueueOffset: 5, CommitLogOffset: 6,
		BodyCRC: 7, ReconsumeTimes: 8, PreparedTransactionOffset: 9,
	}
	var m MessageExt
	var hosts hostStrings
	fillMessageExt(&m, e, "broker-a", "", e.OffsetMsgID(), &hosts)
	for _, v := range []reflect.Value{reflect.ValueOf(m), reflect.ValueOf(m.Message)} {
		for i := range v.NumField() {
			if f := v.Type().Field(i); !f.Anonymous && v.Field(i).IsZero() {
				t.Errorf("%s.%s not set", v.Type().Name(), f.Name)
			}
		}
	}
	if m.MsgID != "ID" || m.StoreHost != "10.0.0.2:10911" || m.BornTime.UnixMilli() != e.BornTimestamp {
		t.Fatalf("%+v", m)
	}
}
