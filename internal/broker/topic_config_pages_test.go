package broker

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/apogeemq/apogee/internal/protocol"
)

// TestGetAllTopicConfigPaged: with topicSeq/maxTopicNum/dataVersion the
// table comes in pages of min(maxTopicNum, splitMetadataSize) sorted
// topics with totalTopicNum; a stale dataVersion restarts at 0; a request
// without the fields gets the whole table; the paged reader (slave sync)
// gets every topic, also when the table changes while it reads.
func TestGetAllTopicConfigPaged(t *testing.T) {
	cfg := testConfig(t, t.TempDir())
	cfg.SplitMetadataSize = 7
	b := startBroker(t, cfg)
	var tcs []protocol.TopicConfig
	for i := 0; i < 30; i++ {
		tcs = append(tcs, protocol.NewTopicConfig(fmt.Sprintf("Page%02d", i)))
	}
	if err := b.Topics.UpdateMany(tcs); err != nil {
		t.Fatal(err)
	}
	all := b.Topics.Len()
	c := newClient(t)
	page := func(seq int, maxN string, dv string) (*protocol.TopicConfigSerializeWrapper, int) {
		t.Helper()
		h := map[string]string{"topicSeq": strconv.Itoa(seq), "dataVersion": dv}
		if maxN != "" {
			h["maxTopicNum"] = maxN
		}
		resp := invoke(t, c, b.Addr(), protocol.NewRequest(protocol.GetAllTopicConfig, h, nil))
		mustCode(t, resp, protocol.Success)
		w, err := protocol.DecodeTopicConfigSerializeWrapper(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		total, _ := strconv.Atoi(resp.ExtFields["totalTopicNum"])
		return w, total
	}
	tests := []struct {
		name    string
		maxN    string
		wantLen int
	}{
		{"splitMetadataSize bounds the page", "2000", 7},
		{"maxTopicNum bounds the page", "3", 3},
		{"no maxTopicNum", "", 7},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			first, total := page(0, tc.maxN, "")
			if len(first.TopicConfigTable) != tc.wantLen || total != all {
				t.Fatalf("first page: %d topics, total %d; want %d, %d", len(first.TopicConfigTable), total, tc.wantLen, all)
			}
			dv, _ := protocol.MarshalJSON(first.DataVersion)
			seen := map[string]bool{}
			for seq := 0; seq < all; {
				w, _ := page(seq, tc.maxN, string(dv))
				if w.DataVersion != first.DataVersion || len(w.TopicConfigTable) == 0 {
					t.Fatalf("page at %d: version %+v, %d topics", seq, w.DataVersion, len(w.TopicConfigTable))
				}
				for k := range w.TopicConfigTable {
					if seen[k] {
						t.Fatalf("topic %s in two pages", k)
					}
					seen[k] = true
				}
				seq += len(w.TopicConfigTable)
			}
			if len(seen) != all {
				t.Fatalf("pages held %d topics, want %d", len(seen), all)
			}
		})
	}

	// A stale version: the page starts at 0 with the current version.
	first, _ := page(0, "5", "")
	stale := first.DataVersion
	stale.Counter--
	dv, _ := protocol.MarshalJSON(stale)
	w, _ := page(10, "5", string(dv))
	w0, _ := page(0, "5", "")
	if w.DataVersion != first.DataVersion || fmt.Sprint(keys(w.TopicConfigTable)) != fmt.Sprint(keys(w0.TopicConfigTable)) {
		t.Fatalf("stale dataVersion did not restart at 0: %v vs %v", keys(w.TopicConfigTable), keys(w0.TopicConfigTable))
	}

	// RocketMQ 4 request: everything.
	resp := invoke(t, c, b.Addr(), protocol.NewRequest(protocol.GetAllTopicConfig, nil, nil))
	mustCode(t, resp, protocol.Success)
	if whole, err := protocol.DecodeTopicConfigSerializeWrapper(resp.Body); err != nil || len(whole.TopicConfigTable) != all {
		t.Fatalf("unpaged request: %v topics, %v", len(whole.TopicConfigTable), err)
	}

	// The paged reader, while topics are added under it: fewer changes
	// than the reader's 10 restarts, so it always gets a whole table
	// however the two interleave.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := 0; i < 6; i++ {
			_ = b.Topics.Update(protocol.NewTopicConfig(fmt.Sprintf("Late%02d", i)))
		}
	}()
	got, err := b.fetchAllTopicConfig(ctx, b.Addr())
	<-done
	if err != nil {
		t.Fatal(err)
	}
	again, err := b.fetchAllTopicConfig(ctx, b.Addr())
	if err != nil {
		t.Fatal(err)
	}
	if len(again.TopicConfigTable) != b.Topics.Len() || again.DataVersion != b.Topics.DataVersion() {
		t.Fatalf("paged read: %d topics at %+v, want %d at %+v", len(again.TopicConfigTable), again.DataVersion, b.Topics.Len(), b.Topics.DataVersion())
	}
	if len(got.TopicConfigTable) < all {
		t.Fatalf("paged read during changes: %d topics, want at least %d", len(got.TopicConfigTable), all)
	}
}

func keys(m map[string]protocol.TopicConfig) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
