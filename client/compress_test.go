package client

import (
	"bytes"
	"testing"

	"github.com/apogeemq/apogee/internal/message"
)

// TestMaybeCompressTypes: each compressType flags the body with its own
// sysFlag bits and the consumer side (message.DecompressBody) restores it;
// bodies under the threshold go as they are; levels are checked per type.
func TestMaybeCompressTypes(t *testing.T) {
	body := bytes.Repeat([]byte("compress me "), 500)
	tests := []struct {
		name  string
		ctype CompressType
		level int
		flag  int32
	}{
		{"zlib", CompressZLIB, 5, 0x301},
		{"lz4", CompressLZ4, 5, 0x101},
		{"zstd", CompressZSTD, 3, 0x201},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			out, flag := maybeCompress(body, 4096, tc.level, tc.ctype)
			if flag != tc.flag {
				t.Fatalf("flag %#x, want %#x", flag, tc.flag)
			}
			back, err := message.DecompressBody(flag, out, 1<<20)
			if err != nil || !bytes.Equal(back, body) {
				t.Fatalf("round trip: %d bytes, %v", len(back), err)
			}
			if small, f := maybeCompress(body[:100], 4096, tc.level, tc.ctype); f != 0 || len(small) != 100 {
				t.Fatalf("a small body was compressed (flag %#x)", f)
			}
		})
	}
	for _, bad := range []struct {
		ctype CompressType
		level int
	}{{CompressZLIB, 10}, {CompressZSTD, 23}, {CompressType(0x400), 5}} {
		if _, err := NewProducer("pg", WithNameServers("127.0.0.1:1"), WithCompressType(bad.ctype), WithCompressLevel(bad.level)); err == nil {
			t.Errorf("type %#x level %d accepted", int32(bad.ctype), bad.level)
		}
	}
	if _, err := NewProducer("pg", WithNameServers("127.0.0.1:1"), WithCompressType(CompressLZ4), WithCompressLevel(17)); err != nil {
		t.Errorf("LZ4 ignores the level: %v", err)
	}
}
