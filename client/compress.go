package client

import (
	"github.com/apogeemq/apogee/internal/message"
)

// Compression of single-message bodies (docs/broker.md §4.4,
// docs/protocol.md §6.5): bodies of at least compressOver bytes are zlib-
// compressed at compressLevel and flagged COMPRESSED | ZLIB (0x301), as the
// Java producer does; every consumer (Java, Go, ours) inflates them.
// Batch bodies are never compressed.

const (
	defaultCompressOver  = 4096
	defaultCompressLevel = 5
)

// maybeCompress returns the body to send and the sysFlag bits describing
// it. Like the Java producer it compresses even when that does not shrink
// the body, so consumers see the flag whenever the size crossed the
// threshold; a compression failure sends the body as is.
func maybeCompress(body []byte, over, level int) ([]byte, int32) {
	if over <= 0 || len(body) < over {
		return body, 0
	}
	c, err := message.Compress(body, level)
	if err != nil {
		return body, 0
	}
	return c, message.SysFlagCompressed | message.SysFlagCompressionZLIB
}
