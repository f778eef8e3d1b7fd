// Package grpce2e drives a real apogee process with the official RocketMQ 5
// clients over gRPC: github.com/apache/rocketmq-clients/golang/v5 at v5.1.3
// (this module pins it) and, from the root module's e2e tests, interop with
// the v2 remoting client.
//
// It is a module of its own because the official client's generated code
// registers the same protobuf names (apache.rocketmq.v2.*) as Apogee's
// internal/rmqpb; linking both into one binary panics at start-up. Here the
// server runs as a child process (the apogee binary built from this tree,
// via the replace directive), so only the client's copy is linked.
//
// Run with: cd e2e/grpc && go test ./...
package grpce2e
