package store

import (
	"bytes"
	"math/rand/v2"
	"os"
	"sync"
	"testing"
)

// TestStagedAppends drives one staged file (writeWithoutMmap under
// SYNC_FLUSH) with a ring much smaller than the file: records wrap around
// the ring, some are larger than it, the ring fills while a concurrent
// committer lags, and the file is closed with a BLANK header. The file must
// end up holding exactly the appended bytes, and readers must never be
// offered a position beyond what was written to the file.
func TestStagedAppends(t *testing.T) {
	for _, tc := range []struct {
		name      string
		ring      int
		maxRecord int
		commitIn  bool // a concurrent committer (the flusher)
	}{
		{"small records, lagging committer", 4096, 900, true},
		{"records larger than the ring", 4096, 10000, true},
		{"writer commits alone", 4096, 3000, false},
		{"ring one byte", 1, 50, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			const size = 256 << 10
			mf, err := openMappedFile(t.TempDir(), 0, size, true)
			if err != nil {
				t.Fatal(err)
			}
			defer mf.shutdown(mf.lastModifiedTime(), 0)
			mf.writeThrough = true
			mf.stage = make([]byte, tc.ring)

			stop := make(chan struct{})
			var wg sync.WaitGroup
			var commitErr error
			if tc.commitIn {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for {
						select {
						case <-stop:
							return
						default:
						}
						if _, err := mf.flush(0); err != nil {
							commitErr = err
							return
						}
						// Readers may only see bytes already in the file.
						if rp := mf.readPosition(); rp > mf.committed.Load() || rp > mf.wrote.Load() {
							commitErr = os.ErrInvalid
							return
						}
					}
				}()
			}

			rnd := rand.New(rand.NewPCG(1, uint64(tc.ring)))
			var want []byte
			for {
				n := 1 + rnd.IntN(tc.maxRecord)
				if int64(len(want)+n+blankRecordSize) > size {
					break
				}
				rec := make([]byte, n)
				for i := range rec {
					rec[i] = byte(rnd.Uint32())
				}
				if err := mf.appendBytes(rec); err != nil {
					t.Fatal(err)
				}
				want = append(want, rec...)
				if got := mf.wrote.Load(); got != int64(len(want)) {
					t.Fatalf("wrote %d, want %d", got, len(want))
				}
			}
			blank := []byte{1, 2, 3, 4, 5, 6, 7, 8}
			if err := mf.fillToEnd(blank); err != nil {
				t.Fatal(err)
			}
			close(stop)
			wg.Wait()
			if commitErr != nil {
				t.Fatal(commitErr)
			}
			if _, err := mf.flush(0); err != nil {
				t.Fatal(err)
			}
			if c, w, f := mf.committed.Load(), mf.wrote.Load(), mf.flushed.Load(); c != size || w != size || f != size {
				t.Fatalf("committed %d wrote %d flushed %d, want %d", c, w, f, size)
			}
			got, err := os.ReadFile(mf.path)
			if err != nil {
				t.Fatal(err)
			}
			want = append(want, blank...)
			if !bytes.Equal(got[:len(want)], want) {
				i := 0
				for i < len(want) && got[i] == want[i] {
					i++
				}
				t.Fatalf("file differs from the appended bytes at %d of %d", i, len(want))
			}
			if !allZero(got[len(want):]) {
				t.Fatal("bytes after the BLANK header are not zero")
			}
		})
	}
}
