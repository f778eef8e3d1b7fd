package client

import (
	"github.com/apogeemq/apogee/internal/message"
)

// Compression of single-message bodies (docs/broker.md §4.4,
// docs/protocol.md §6.5): bodies of at least compressOver bytes are
// compressed with compressType at compressLevel and flagged COMPRESSED |
// type (0x301 for zlib, 0x101 LZ4, 0x201 zstd), as the Java producer does.
// Consumers of this package inflate all three. Batch bodies are never
// compressed.

// CompressType is a body compression algorithm: RocketMQ 5's compressType,
// as the sysFlag bits 8-10 carry it.
type CompressType int32

// Compression types.
const (
	CompressZLIB CompressType = message.CompressZLIB
	CompressLZ4  CompressType = message.CompressLZ4
	CompressZSTD CompressType = message.CompressZSTD
)

const (
	defaultCompressOver  = 4096
	defaultCompressLevel = 5
)

// maybeCompress returns the body to send and the sysFlag bits describing
// it. Like the Java producer it compresses even when that does not shrink
// the body, so consumers see the flag whenever the size crossed the
// threshold; a compression failure sends the body as is.
func maybeCompress(body []byte, over, level int, ctype CompressType) ([]byte, int32) {
	if over <= 0 || len(body) < over {
		return body, 0
	}
	c, flag, err := message.CompressAs(body, int32(ctype), level)
	if err != nil {
		return body, 0
	}
	return c, flag
}
