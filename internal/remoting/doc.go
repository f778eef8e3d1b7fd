// Package remoting owns RocketMQ's TCP transport: framing on the socket,
// connection read and write loops, the Server (processor table, per-code
// worker pools, RPC hooks, connection events, idle close, permissive TLS)
// and the Client (one connection per address, opaque-matched futures,
// sync/async/oneway calls with permits). Both ends can send requests on a
// connection: the broker calls back into clients through Server.InvokeSync
// and Server.InvokeOneway, and a Client serves them with RegisterProcessor.
//
// It never interprets request codes or bodies; that is the business of the
// name server, broker and client packages. Commands and their encoding are
// internal/protocol's.
//
// # Frame layout on the wire (docs/protocol.md §1.2–1.3)
//
//	0               4       5               8                     8+H                  4+L
//	+---------------+-------+---------------+----------------------+--------------------+
//	| total length L| type  | header len H  | header (H bytes)     | body (L-4-H bytes) |
//	| uint32 BE     | u8    | u24 BE        | JSON (0)/ROCKETMQ (1)| opaque bytes       |
//	+---------------+-------+---------------+----------------------+--------------------+
//
// L excludes its own 4 bytes. The largest accepted L is MaxFrameSize-4
// (16777212 by default). A frame that is too large, a header that does not
// decode or an unknown type closes that connection (logged, reported to
// ConnListener.OnException); nothing else is affected, and nothing is
// allocated for a length above the limit.
//
// # Behaviour worth knowing (docs/protocol.md §2, §9.1)
//
//   - A response carries the request's opaque and serialize type, with flag
//     bit 0 set. Oneway requests (flag bit 1) are never answered.
//   - Unknown codes get REQUEST_CODE_NOT_SUPPORTED " request type <code> not
//     supported" unless SetDefaultProcessor is used. A full pool queue gets
//     SYSTEM_BUSY "[OVERLOAD]system busy, start flow control for a while".
//   - Calls take ctx first; its deadline bounds the call (DefaultTimeout when
//     it has none). When a connection dies, every call pending on it fails
//     at once with ErrConnClosed.
//
// See DESIGN.md for ownership, goroutines, lock order and the hot path.
package remoting
