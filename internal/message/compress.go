package message

import (
	"bytes"
	"compress/zlib"
	"fmt"
	"io"
)

// Compress returns body as a zlib stream (RFC 1950) at the given level
// (1..9, or zlib.DefaultCompression), interoperable with Java's Deflater.
// RocketMQ producers use level 5 for bodies of 4096 bytes or more.
func Compress(body []byte, level int) ([]byte, error) {
	var buf bytes.Buffer
	buf.Grow(len(body)/2 + 64)
	w, err := zlib.NewWriterLevel(&buf, level)
	if err != nil {
		return nil, fmt.Errorf("message: compress: %w", err)
	}
	if _, err := w.Write(body); err != nil {
		return nil, fmt.Errorf("message: compress: %w", err)
	}
	if err := w.Close(); err != nil {
		return nil, fmt.Errorf("message: compress: %w", err)
	}
	return buf.Bytes(), nil
}

// Decompress inflates a zlib body, up to DefaultMaxDecompressedSize bytes.
func Decompress(body []byte) ([]byte, error) {
	return DecompressLimit(body, DefaultMaxDecompressedSize)
}

// DecompressLimit inflates a zlib body; an output longer than limit bytes
// fails with ErrBodyTooLarge (a decompression bomb costs at most limit).
func DecompressLimit(body []byte, limit int) ([]byte, error) {
	r, err := zlib.NewReader(bytes.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("message: decompress: %w", err)
	}
	defer r.Close()
	var buf bytes.Buffer
	// Deflate rarely shrinks below a quarter; start there, capped.
	buf.Grow(min(4*len(body), limit) + 1)
	n, err := io.Copy(&buf, io.LimitReader(r, int64(limit)+1))
	if err != nil {
		return nil, fmt.Errorf("message: decompress: %w", err)
	}
	if n > int64(limit) {
		return nil, fmt.Errorf("message: decompressed body exceeds %d bytes: %w", limit, ErrBodyTooLarge)
	}
	return buf.Bytes(), nil
}
