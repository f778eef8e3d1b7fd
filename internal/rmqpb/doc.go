// Package rmqpb holds the Go code generated from Apogee's copy of the
// RocketMQ 5 gRPC protocol (package apache.rocketmq.v2, rocketmq-apis
// v2.1.2): messages, enums and the MessagingService server and client stubs.
//
// Only generated code lives here, plus this file. The .proto sources are in
// proto/apache/rocketmq/v2; generate.sh regenerates the files with pinned
// protoc-gen-go and protoc-gen-go-grpc, and `generate.sh --check` (run by CI)
// fails when they are stale.
//
// The files register as apache/rocketmq/v2/*.proto under the full names
// apache.rocketmq.v2.*. The official Go client's protocol/v2 package
// registers the same full names, so a binary linking both panics at start-up
// unless GOLANG_PROTOBUF_REGISTRATION_CONFLICT=warn is set; Apogee's tests
// run the official client in its own module (e2e/grpc) for that reason.
package rmqpb

//go:generate bash generate.sh
