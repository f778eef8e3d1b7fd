package message

import (
	"bytes"
	"errors"
	"fmt"
	"io"

	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4/v4"
)

// Body compression types of RocketMQ 5 (docs/protocol.md §6.5): the
// producer's compressType in sysFlag bits 8-10 beside SysFlagCompressed.
// LZ4 is the LZ4 frame format (Java's LZ4FrameOutputStream), ZSTD a zstd
// stream (zstd-jni's ZstdOutputStream), ZLIB (or 0, older producers) an
// RFC 1950 stream.
const (
	CompressZLIB = SysFlagCompressionZLIB
	CompressLZ4  = SysFlagCompressionLZ4
	CompressZSTD = SysFlagCompressionZSTD
)

// ErrUnknownCompression is returned for a compressed body whose type bits
// name no known algorithm.
var ErrUnknownCompression = errors.New("message: unknown body compression type")

// IsDecompressible reports whether sysFlag marks a compressed body of a
// type this package undoes (zlib, LZ4 or zstd).
func IsDecompressible(sysFlag int32) bool {
	if sysFlag&SysFlagCompressed == 0 {
		return false
	}
	switch CompressionType(sysFlag) {
	case 0, SysFlagCompressionZLIB, SysFlagCompressionLZ4, SysFlagCompressionZSTD:
		return true
	}
	return false
}

// CompressAs compresses body with the algorithm of compressType
// (CompressZLIB, CompressLZ4 or CompressZSTD) at level (zlib 1..9; zstd
// 1..22 mapped to the encoder's four speeds; LZ4 ignores it, as Java's
// frame stream does) and returns it with the sysFlag bits that describe it.
func CompressAs(body []byte, compressType int32, level int) ([]byte, int32, error) {
	flag := SysFlagCompressed | compressType
	switch compressType {
	case CompressZLIB:
		out, err := Compress(body, level)
		return out, flag, err
	case CompressLZ4:
		var buf bytes.Buffer
		buf.Grow(len(body)/2 + 64)
		w := lz4.NewWriter(&buf)
		if _, err := w.Write(body); err != nil {
			return nil, 0, fmt.Errorf("message: lz4 compress: %w", err)
		}
		if err := w.Close(); err != nil {
			return nil, 0, fmt.Errorf("message: lz4 compress: %w", err)
		}
		return buf.Bytes(), flag, nil
	case CompressZSTD:
		enc, err := zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.EncoderLevelFromZstd(level)), zstd.WithEncoderConcurrency(1))
		if err != nil {
			return nil, 0, fmt.Errorf("message: zstd compress: %w", err)
		}
		defer enc.Close()
		return enc.EncodeAll(body, make([]byte, 0, len(body)/2+64)), flag, nil
	}
	return nil, 0, fmt.Errorf("%w: 0x%x", ErrUnknownCompression, compressType)
}

// DecompressBody undoes the compression sysFlag names (IsDecompressible);
// an output longer than limit bytes fails with ErrBodyTooLarge, so a
// decompression bomb costs at most limit whatever the algorithm.
func DecompressBody(sysFlag int32, body []byte, limit int) ([]byte, error) {
	if sysFlag&SysFlagCompressed == 0 {
		return body, nil
	}
	switch CompressionType(sysFlag) {
	case 0, SysFlagCompressionZLIB:
		return DecompressLimit(body, limit)
	case SysFlagCompressionLZ4:
		return readAllLimit("lz4", lz4.NewReader(bytes.NewReader(body)), len(body), limit)
	case SysFlagCompressionZSTD:
		// The frame's declared size is not trusted: the decoder's
		// memory is bounded by limit, and the output by readAllLimit.
		dec, err := zstd.NewReader(bytes.NewReader(body), zstd.WithDecoderConcurrency(1),
			zstd.WithDecoderMaxMemory(uint64(limit)+1), zstd.WithDecoderMaxWindow(uint64(min(max(limit, 1<<10), 1<<29))))
		if err != nil {
			return nil, fmt.Errorf("message: zstd decompress: %w", err)
		}
		defer dec.Close()
		return readAllLimit("zstd", dec, len(body), limit)
	}
	return nil, fmt.Errorf("%w: sysFlag 0x%x", ErrUnknownCompression, sysFlag)
}

func readAllLimit(name string, r io.Reader, inLen, limit int) ([]byte, error) {
	var buf bytes.Buffer
	buf.Grow(min(4*inLen, limit) + 1)
	n, err := io.Copy(&buf, io.LimitReader(r, int64(limit)+1))
	if errors.Is(err, zstd.ErrDecoderSizeExceeded) {
		return nil, fmt.Errorf("message: decompressed body exceeds %d bytes: %w", limit, ErrBodyTooLarge)
	}
	if err != nil {
		return nil, fmt.Errorf("message: %s decompress: %w", name, err)
	}
	if n > int64(limit) {
		return nil, fmt.Errorf("message: decompressed body exceeds %d bytes: %w", limit, ErrBodyTooLarge)
	}
	return buf.Bytes(), nil
}
