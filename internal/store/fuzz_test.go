package store

import (
	"encoding/binary"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/apogeemq/apogee/internal/testutil"
)

// FuzzConsumeQueueReader loads arbitrary bytes as a consume-queue file and
// runs recovery, reads, truncation and min-offset correction over it: no
// panic, and every unit recovery keeps is valid.
func FuzzConsumeQueueReader(f *testing.F) {
	unit := func(phy int64, size int32, tags int64) []byte {
		b := make([]byte, CQUnitSize)
		encodeCQUnit(b, cqUnit{phy, size, tags})
		return b
	}
	var good []byte
	for i := int64(0); i < 10; i++ {
		good = append(good, unit(i*100, 100, i)...)
	}
	f.Add(good, int64(3), int64(500))
	f.Add(append(unit(0, cqBlankUnitSize, 0), unit(0, 100, 1)...), int64(0), int64(0))
	f.Add(append(good[:75], 0xFF, 0xFF), int64(9), int64(1<<40))
	f.Add([]byte{}, int64(-1), int64(-1))
	const fileUnits = 16
	f.Fuzz(func(t *testing.T, data []byte, q int64, minPhy int64) {
		dir := t.TempDir()
		fileSize := int64(fileUnits * CQUnitSize)
		qdir := filepath.Join(dir, consumeQueueDirName, "T", "0")
		if err := os.MkdirAll(qdir, 0o755); err != nil {
			t.Fatal(err)
		}
		for i := 0; i*int(fileSize) < len(data) && i < 3; i++ {
			chunk := make([]byte, fileSize)
			copy(chunk, data[i*int(fileSize):])
			if err := os.WriteFile(filepath.Join(qdir, fileName(int64(i)*fileSize)), chunk, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		cq := newConsumeQueue(dir, "T", 0, fileSize, testutil.DiscardLogger(), newMapper(4))
		if err := cq.files.load(); err != nil {
			t.Fatal(err)
		}
		defer cq.files.shutdownAll()
		cq.recover()
		maxO := cq.maxOffset()
		for off := cq.minOffset(); off < maxO; off++ {
			u, ok := cq.unitAt(off)
			if !ok || !u.valid() {
				t.Fatalf("unit %d kept by recovery is invalid: %+v ok=%v", off, u, ok)
			}
		}
		cq.scan(q, 64, func(int64, cqUnit) bool { return true })
		cq.correctMinOffset(minPhy)
		if cq.minOffset() > cq.maxOffset() {
			t.Fatalf("min %d > max %d", cq.minOffset(), cq.maxOffset())
		}
		cq.truncateDirtyLogic(minPhy)
		if cq.maxOffset() > maxO {
			t.Fatalf("truncation grew the queue: %d > %d", cq.maxOffset(), maxO)
		}
		_ = cq.putUnit(cqUnit{PhyOffset: 1 << 50, Size: 10}, max(q, 0)%1000, 0)
	})
}

// FuzzIndexReader maps arbitrary bytes as an index file and queries it: no
// panic, bounded results; keys put afterwards are found.
func FuzzIndexReader(f *testing.F) {
	const slots, items = 8, 16
	size := int(indexFileSize(slots, items))
	seed := make([]byte, size)
	binary.BigEndian.PutUint32(seed[ihIndexCount:], 3)
	binary.BigEndian.PutUint32(seed[indexHeaderSize:], 2)
	f.Add(seed, "T#k1", int64(0), int64(1<<40))
	f.Add([]byte{0xFF, 0xFF, 0xFF, 0xFF}, "x", int64(-5), int64(5))
	f.Add(make([]byte, size), "", int64(0), int64(0))
	f.Fuzz(func(t *testing.T, data []byte, key string, begin, end int64) {
		path := filepath.Join(t.TempDir(), "20260101000000000")
		buf := make([]byte, size)
		copy(buf, data)
		if err := os.WriteFile(path, buf, 0o644); err != nil {
			t.Fatal(err)
		}
		idx, err := openIndexFile(path, slots, items, false)
		if err != nil {
			t.Fatal(err)
		}
		defer idx.mf.shutdown(idx.mf.lastModifiedTime(), 0)
		if got := idx.query(nil, key, 5, begin, end); len(got) > 5 {
			t.Fatalf("%d results for maxNum 5", len(got))
		}
		if idx.put(indexKeyHash(key), 4242, max(idx.beginTimestamp.Load(), 0)+1000) {
			found := false
			for _, off := range idx.query(nil, key, items, math.MinInt64, math.MaxInt64) {
				found = found || off == 4242
			}
			if !found {
				t.Fatalf("key %q put into the file is not found", key)
			}
		}
	})
}
