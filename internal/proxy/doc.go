// Package proxy is Apogee's RocketMQ 5 gRPC endpoint: the
// apache.rocketmq.v2.MessagingService that the 5.x clients (Java, Go, Node,
// ...) speak. It owns the listener (TLS and plaintext on one port, told
// apart by the first byte), the per-client registry (settings from
// Telemetry, liveness), and the translation of every RPC into the RocketMQ
// remoting requests brokers already serve: SEND_MESSAGE_V2 for SendMessage,
// END_TRANSACTION for EndTransaction, GET_TOPIC_CONFIG and
// GET_ROUTEINFO_BY_TOPIC for routes, the POP codes for receives.
//
// It never touches a store: brokers are reached over remoting only, the
// broker the endpoint runs inside (local mode, `apogee broker` and
// `apogee standalone`) as much as the brokers of a cluster (cluster mode,
// `apogee proxy -n`). The generated protocol code is internal/rmqpb.
//
// # Wire shape worth knowing
//
//   - Every unary response and stream frame carries a business Status
//     (apache.rocketmq.v2.Code) next to gRPC OK; gRPC error codes are left to
//     transport failures, Telemetry stream errors and RPCs not served
//     (UNIMPLEMENTED).
//   - x-mq-client-id is required on every RPC (CLIENT_ID_REQUIRED).
//   - Routes report every master broker with this endpoint's address and
//     queue ids from 0; accept_message_types comes from the topic's
//     message.type attribute (absent = NORMAL, MIXED = all four).
//   - A gRPC producer's group is the topic; the client's message id is the
//     stored UNIQ_KEY and, for half messages, the transaction id.
//
// See DESIGN.md for ownership, goroutines and locks.
package proxy
