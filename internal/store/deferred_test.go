package store

import (
	"testing"
	"time"
)

// TestPutDeferred: a deferred put (PutMessageRawPropertiesDeferred) is
// deferred only when it is staged (ASYNC_FLUSH without the transient
// pool); its done runs only once the caller commits (CommitStaged), with
// the record in the file, and DispatchNow makes it readable by queue. A
// put that is not deferred takes its usual course.
func TestPutDeferred(t *testing.T) {
	for _, tc := range []struct {
		name      string
		flush     string
		pool      bool
		wantDefer bool
	}{
		{"async-staged", AsyncFlush, false, true},
		{"sync-flush", SyncFlush, false, false},
		{"async-transient-pool", AsyncFlush, true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := testConfig(t.TempDir())
			cfg.FlushDiskType = tc.flush
			cfg.TransientStorePoolEnable = tc.pool
			s := openStore(t, cfg)
			const n = 3
			results := make(chan PutResult, n)
			for i := range n {
				m := newMsg("Deferred", 0, "body", nil)
				m.Properties = nil
				if got := s.PutMessageRawPropertiesDeferred(m, "TAGS\x01a\x02", nil, time.Time{},
					func(r PutResult) { results <- r }); got != tc.wantDefer {
					t.Fatalf("put %d deferred = %v, want %v", i, got, tc.wantDefer)
				}
			}
			if tc.wantDefer {
				// Nothing else commits for these puts: the committer was not
				// woken, and the flusher's writes complete no put.
				select {
				case r := <-results:
					t.Fatalf("deferred put completed before CommitStaged: %+v", r)
				case <-time.After(100 * time.Millisecond):
				}
				s.CommitStaged()
				if len(results) != n {
					t.Fatalf("CommitStaged completed %d of %d puts", len(results), n)
				}
				s.DispatchNow()
			}
			for range n {
				select {
				case r := <-results:
					if r.Status != PutOK {
						t.Fatalf("put: %v %s", r.Status, r.Remark)
					}
					// The transient pool acknowledges before the file (as
					// RocketMQ's): only a staged or flushed put is checked.
					if !tc.pool {
						if err := checkInFile(s, cfg, r); err != nil {
							t.Fatal(err)
						}
					}
				case <-time.After(5 * time.Second):
					t.Fatal("put never completed")
				}
			}
			waitDispatched(t, s, "Deferred", 0, n)
		})
	}
}
