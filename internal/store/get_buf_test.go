package store

import (
	"bytes"
	"strconv"
	"testing"
)

func TestGetBufClass(t *testing.T) {
	for _, tc := range []struct {
		n    int64
		want int
	}{
		{0, 0}, {1, 0}, {4 << 10, 0}, {4<<10 + 1, 1}, {8 << 10, 1}, {36 << 10, 4},
		{256 << 10, getBufMaxShift - getBufMinShift}, {256<<10 + 1, -1}, {4 << 20, -1},
	} {
		if got := getBufClass(tc.n); got != tc.want {
			t.Errorf("getBufClass(%d) = %d, want %d", tc.n, got, tc.want)
		}
		if c := getBufClass(tc.n); c >= 0 && int64(1)<<(c+getBufMinShift) < tc.n {
			t.Errorf("class %d of %d bytes is too small", c, tc.n)
		}
	}
}

// TestGetMessageReleaseReuse releases every result before the next read,
// so that later reads copy into recycled buffers (sync.Pool may drop some,
// e.g. under -race): every record must still read back exactly, and a
// released result forgets its records.
func TestGetMessageReleaseReuse(t *testing.T) {
	s := openStore(t, testConfig(t.TempDir()))
	const n = 200
	bodies := make([][]byte, n)
	for i := range n {
		bodies[i] = bytes.Repeat([]byte{byte('a' + i%26)}, 100+7*i)
		mustPut(t, s, newMsg("TopicR", 0, string(bodies[i]), map[string]string{"KEYS": "k" + strconv.Itoa(i)}))
	}
	waitDispatched(t, s, "TopicR", 0, n)
	for round := range 3 {
		for off := int64(0); off < n; {
			batch := int32(1 + (off+int64(round))%32)
			res := s.GetMessage("g", "TopicR", 0, off, batch, 1<<20, nil)
			if res.Status != Found || len(res.Messages) == 0 {
				t.Fatalf("round %d offset %d: status %v, %d messages", round, off, res.Status, len(res.Messages))
			}
			if !bytes.Equal(res.Buffer, bytes.Join(res.Messages, nil)) || res.TotalBytes != len(res.Buffer) {
				t.Fatalf("round %d offset %d: Buffer is not the records back to back", round, off)
			}
			for j, raw := range res.Messages {
				if m := decode(t, raw); m.QueueOffset != off+int64(j) || !bytes.Equal(m.Body, bodies[off+int64(j)]) {
					t.Fatalf("round %d: message %d read back wrong (queue offset %d)", round, off+int64(j), m.QueueOffset)
				}
			}
			off = res.NextBeginOffset
			res.Release()
			if res.Buffer != nil || res.Messages != nil {
				t.Fatal("a released result still holds its records")
			}
			res.Release() // a second call does nothing
		}
	}
}
