// Package protocol owns RocketMQ's remoting command: request and response
// codes, the RemotingCommand (Command), its two header encodings (JSON and
// the binary "ROCKETMQ" form), the frame codec, custom-header helpers, and the
// JSON bodies exchanged by clients, brokers and name servers.
//
// It never does I/O beyond reading frames from an io.Reader (FrameReader);
// sockets, pools and timeouts belong to internal/remoting.
//
// # Frame layout (docs/protocol.md §1.2–1.3)
//
// Every request and response is one frame. All integers are big-endian.
// Part of the wire protocol; never change.
//
//	0               4               8                     8+H                  4+L
//	+---------------+---------------+----------------------+--------------------+
//	| total length L| type | H      | header (H bytes)     | body (L-4-H bytes) |
//	| uint32        | u8   | u24    | JSON or ROCKETMQ     | opaque bytes       |
//	+---------------+---------------+----------------------+--------------------+
//
// L counts the header-length word, the header and the body but not itself.
// type is the SerializeType (0 JSON, 1 ROCKETMQ). The largest accepted L is
// DefaultMaxFrameSize-4 = 16777212 (Java's limit counts the length word).
//
// # ROCKETMQ header (docs/protocol.md §1.5)
//
//	+------+------+---------+--------+------+----------+--------+----------+-----------+
//	| code | lang | version | opaque | flag | remarkLen| remark | extLen E | ext block |
//	| i16  | u8   | i16     | i32    | i32  | i32 (R)  | R bytes| i32      | E bytes   |
//	+------+------+---------+--------+------+----------+--------+----------+-----------+
//	ext entry: keyLen i16 | key | valueLen i32 | value
//
// # JSON header (docs/protocol.md §1.4)
//
//	{"code":105,"extFields":{"topic":"T"},"flag":0,"language":"GO","opaque":1,
//	 "remark":"...","serializeTypeCurrentRPC":"JSON","version":479}
//
// Encoding is hand-written (no reflection): compact, alphabetical, ext keys
// sorted (Command.ExtList's pairs follow in their own order: hot request
// paths build that list instead of a map), every property present (extFields {} and remark "" when empty). Decoding is a lenient
// hand-written scanner: any order, nulls, unknown properties, language as a
// name or a number.
//
// Decoders never panic on any input; errors wrap ErrBadFrame or
// ErrFrameTooLarge and mean "close the connection the bytes came from".
package protocol
