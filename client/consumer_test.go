package client

import (
	"context"
	"testing"
	"time"

	"github.com/apogeemq/apogee/internal/message"
)

type fakeOffsets struct{ max, search int64 }

func (f fakeOffsets) maxOffset(context.Context, MessageQueue) (int64, error) { return f.max, nil }
func (f fakeOffsets) searchOffset(context.Context, MessageQueue, time.Time) (int64, error) {
	return f.search, nil
}

// TestStartOffset follows docs/broker.md §4.7.
func TestStartOffset(t *testing.T) {
	ctx := context.Background()
	api := fakeOffsets{max: 100, search: 42}
	normal := MessageQueue{Topic: "T", BrokerName: "b"}
	retry := MessageQueue{Topic: "%RETRY%g", BrokerName: "b"}
	cases := []struct {
		name   string
		stored int64 // -1: none
		mq     MessageQueue
		from   ConsumeFromWhere
		want   int64
	}{
		{"stored offset wins", 7, normal, ConsumeFromFirstOffset, 7},
		{"last offset", -1, normal, ConsumeFromLastOffset, 100},
		{"last offset retry topic", -1, retry, ConsumeFromLastOffset, 0},
		{"first offset", -1, normal, ConsumeFromFirstOffset, 0},
		{"timestamp", -1, normal, ConsumeFromTimestamp, 42},
		{"timestamp retry topic", -1, retry, ConsumeFromTimestamp, 100},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			be := &fakeOffsetBackend{stored: map[MessageQueue]int64{}}
			if tc.stored >= 0 {
				be.stored[tc.mq] = tc.stored
			}
			got, err := startOffset(ctx, newRemoteOffsetStore("g", be), api, tc.mq, tc.from, time.Now())
			if err != nil || got != tc.want {
				t.Fatalf("got %d (%v), want %d", got, err, tc.want)
			}
		})
	}
}

// TestSubscriptionParsing follows docs/protocol.md §7.5.
func TestSubscriptionParsing(t *testing.T) {
	cases := []struct {
		expr  string
		tags  []string
		match map[string]bool
	}{
		{"*", nil, map[string]bool{"a": true, "": true}},
		{"", nil, map[string]bool{"a": true}},
		{"TagA", []string{"TagA"}, map[string]bool{"TagA": true, "TagB": false, "": false}},
		{" a || b ||", []string{"a", "b"}, map[string]bool{"a": true, "b": true, "c": false}},
	}
	for _, tc := range cases {
		s, err := newSubscription("T", TagSelector(tc.expr))
		if err != nil {
			t.Fatal(err)
		}
		if len(s.tags) != len(tc.tags) {
			t.Fatalf("%q: tags %v", tc.expr, s.tags)
		}
		for i, tag := range tc.tags {
			if s.tags[i] != tag || int64(s.codes[i]) != message.TagsHashCode(tag) {
				t.Fatalf("%q: tag %d = %q code %d", tc.expr, i, s.tags[i], s.codes[i])
			}
		}
		for tag, want := range tc.match {
			m := &message.Ext{}
			m.SetTags(tag)
			if got := s.match(m); got != want {
				t.Errorf("%q matches %q = %v", tc.expr, tag, got)
			}
		}
	}
	if s, _ := newSubscription("T", TagSelector("TagA")); s.codes[0] != 2598919 {
		t.Fatalf("TagA hash %d", s.codes[0])
	}
	sql, err := newSubscription("T", SQL92Selector("a > 5 AND b = 'x'"))
	if err != nil || sql.expr != "a > 5 AND b = 'x'" || sql.expressionType() != "SQL92" || !sql.match(&message.Ext{}) {
		t.Fatalf("sql subscription %+v %v", sql, err)
	}
	if _, err := newSubscription("T", SQL92Selector(" ")); err == nil {
		t.Fatal("empty SQL accepted")
	}
}
