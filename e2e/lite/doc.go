// Package litee2e runs RocketMQ 5.4/5.5 message models (priority messages,
// lite topics) end to end: the official Go client
// github.com/apache/rocketmq-clients/golang/v5 at v5.1.4 (the first with
// LitePushConsumer and priority) and the v2 remoting client against an
// `apogee standalone` child process built from this tree. It is its own
// module so that e2e/grpc stays on v5.1.3. node/lite.js drives the same
// features with the Node.js client 1.0.8 (TestNodeClient).
package litee2e
