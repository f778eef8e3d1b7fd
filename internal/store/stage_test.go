package store

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/apogeemq/apogee/internal/message"
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

// TestStagedAsyncAckMeansInFile: without the transient pool appends are
// staged and written with pwrite (by store-stage-commit under ASYNC_FLUSH,
// by the flusher under SYNC_FLUSH, by the put itself for a SYNC_FLUSH put
// with WAIT=false); a put
// is acknowledged only once its record is in the file (a read through a
// descriptor, not the mapping, finds it) and readable, so a killed process
// loses nothing it acknowledged. Concurrent writers and 64 KiB files make
// batches of several puts and BLANK records at every roll; WAIT=false puts
// follow the same rule.
func TestStagedAsyncAckMeansInFile(t *testing.T) {
	for _, ft := range []string{AsyncFlush, SyncFlush} {
		t.Run(ft, func(t *testing.T) { testStagedAckMeansInFile(t, ft) })
	}
}

func testStagedAckMeansInFile(t *testing.T, ft string) {
	cfg := testConfig(t.TempDir())
	cfg.FlushDiskType = ft
	s := openStore(t, cfg)
	mustPut(t, s, newMsg("First", 0, "x", nil))
	if s.stage == nil || !s.commitLog.last().writeThrough {
		t.Fatalf("%s without the pool does not stage its appends", ft)
	}
	const writers, puts = 4, 150
	errs := make(chan error, writers*puts)
	var wg sync.WaitGroup
	for w := 0; w < writers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < puts; i++ {
				props := map[string]string{}
				if i%3 == 0 {
					props[message.PropertyWaitStoreMsgOK] = "false"
				}
				m := newMsg("Staged", int32(w), string(bytes.Repeat([]byte{byte(i)}, 100+i*7)), props)
				done := make(chan struct{})
				s.PutMessage(m, func(r PutResult) {
					defer close(done)
					errs <- checkInFile(s, cfg, r)
				})
				<-done
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	for w := int32(0); w < writers; w++ {
		waitDispatched(t, s, "Staged", w, puts)
	}
}

// checkInFile reads r's record back through a descriptor and through the
// store's readers.
func checkInFile(s *Store, cfg Config, r PutResult) error {
	if r.Status != PutOK {
		return fmt.Errorf("put: %v %s", r.Status, r.Remark)
	}
	size := cfg.MappedFileSizeCommitLog
	f, err := os.Open(filepath.Join(cfg.commitLogDir(), fileName(r.WroteOffset-r.WroteOffset%size)))
	if err != nil {
		return err
	}
	defer f.Close()
	var hdr [4]byte
	if _, err := f.ReadAt(hdr[:], r.WroteOffset%size); err != nil {
		return err
	}
	if got := int32(binary.BigEndian.Uint32(hdr[:])); got != r.WroteBytes {
		return fmt.Errorf("acknowledged record at %d not in the file: size field %d, want %d", r.WroteOffset, got, r.WroteBytes)
	}
	if _, err := s.ReadRawByOffset(r.WroteOffset, r.WroteBytes); err != nil {
		return fmt.Errorf("acknowledged record at %d not readable: %v", r.WroteOffset, err)
	}
	return nil
}
