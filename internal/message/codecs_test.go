package message

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// TestDecompressReferenceFrames: LZ4 and zstd bodies written by the
// reference implementations (the lz4 1.9.4 and zstd 1.5.4 command-line
// tools, the C libraries Java's LZ4FrameOutputStream and zstd-jni wrap)
// decode to the original body.
func TestDecompressReferenceFrames(t *testing.T) {
	plain, err := os.ReadFile(filepath.Join("testdata", "body.txt"))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		file string
		flag int32
	}{
		{"body.lz4", SysFlagCompressed | SysFlagCompressionLZ4},
		{"body.zst", SysFlagCompressed | SysFlagCompressionZSTD},
	} {
		t.Run(tc.file, func(t *testing.T) {
			body, err := os.ReadFile(filepath.Join("testdata", tc.file))
			if err != nil {
				t.Fatal(err)
			}
			got, err := DecompressBody(tc.flag, body, 1<<20)
			if err != nil || !bytes.Equal(got, plain) {
				t.Fatalf("DecompressBody = %q, %v; want %q", got, err, plain)
			}
		})
	}
}

// TestCompressTypes: each compressType round-trips through a stored record
// decoded with Decompress (the flag is cleared, the type bits kept, as
// RocketMQ consumers see it); a bomb stops at the limit; an unknown type
// is refused.
func TestCompressTypes(t *testing.T) {
	plain := bytes.Repeat([]byte("RocketMQ 5 compressType "), 400)
	bomb := make([]byte, 4<<20)
	for _, tc := range []struct {
		name  string
		ctype int32
		level int
	}{
		{"zlib", CompressZLIB, 5},
		{"lz4", CompressLZ4, 5},
		{"zstd", CompressZSTD, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, flag, err := CompressAs(plain, tc.ctype, tc.level)
			if err != nil || flag != SysFlagCompressed|tc.ctype || len(c) >= len(plain) {
				t.Fatalf("CompressAs: %d bytes, flag %#x, %v", len(c), flag, err)
			}
			m := sampleExt()
			m.Body, m.SysFlag = c, flag
			rec, err := AppendStored(nil, m)
			if err != nil {
				t.Fatal(err)
			}
			dec, _, err := DecodeStored(rec, DecodeOptions{Decompress: true, VerifyCRC: true})
			if err != nil || !bytes.Equal(dec.Body, plain) || dec.SysFlag != tc.ctype {
				t.Fatalf("decoded %d bytes, sysFlag %#x, %v", len(dec.Body), dec.SysFlag, err)
			}
			cb, _, err := CompressAs(bomb, tc.ctype, tc.level)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := DecompressBody(flag, cb, 1<<20); !errors.Is(err, ErrBodyTooLarge) {
				t.Fatalf("a %d-byte bomb of 4 MiB: err %v, want ErrBodyTooLarge", len(cb), err)
			}
			if out, err := DecompressBody(flag, cb, len(bomb)); err != nil || len(out) != len(bomb) {
				t.Fatalf("at the limit: %d bytes, %v", len(out), err)
			}
		})
	}
	if IsDecompressible(SysFlagCompressed | 0x400) {
		t.Error("type 0x400 claimed decompressible")
	}
	if _, err := DecompressBody(SysFlagCompressed|0x400, []byte("x"), 10); !errors.Is(err, ErrUnknownCompression) {
		t.Errorf("unknown type: %v", err)
	}
}

// FuzzDecompressBody: for every compression type, arbitrary bytes never
// panic and never yield more than the limit; what CompressAs wrote comes
// back.
func FuzzDecompressBody(f *testing.F) {
	for _, name := range []string{"body.lz4", "body.zst"} {
		if b, err := os.ReadFile(filepath.Join("testdata", name)); err == nil {
			f.Add(b, uint8(1))
			f.Add(b, uint8(2))
		}
	}
	z, _ := Compress([]byte("seed seed seed"), 5)
	f.Add(z, uint8(3))
	f.Add([]byte{0x04, 0x22, 0x4d, 0x18, 0x64, 0x40, 0xa7}, uint8(1)) // an LZ4 frame header only
	f.Add([]byte{0x28, 0xb5, 0x2f, 0xfd, 0x00, 0x58}, uint8(2))       // a zstd frame header only
	const limit = 1 << 16
	f.Fuzz(func(t *testing.T, body []byte, kind uint8) {
		flag := SysFlagCompressed | int32(kind&7)<<8
		out, err := DecompressBody(flag, body, limit)
		if err == nil && len(out) > limit {
			t.Fatalf("%d bytes out past the %d limit", len(out), limit)
		}
		if ctype := int32(kind&3) << 8; ctype != 0 && len(body) <= limit {
			c, cf, err := CompressAs(body, ctype, 3)
			if err != nil {
				t.Fatal(err)
			}
			back, err := DecompressBody(cf, c, limit)
			if err != nil || !bytes.Equal(back, body) {
				t.Fatalf("round trip of %d bytes as %#x: %d bytes back, %v", len(body), ctype, len(back), err)
			}
		}
	})
}
