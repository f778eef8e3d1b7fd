// Package natsbench measures Apogee against NATS JetStream side by side, in
// one `go test -bench` run on the same machine. It has no library code:
// everything lives in the _test.go files, and this module is separate from
// Apogee's own so that nats-server and nats.go never enter Apogee's go.mod.
//
// One benchmark invocation:
//
//	go test process (clients)                child processes (servers)
//	+-------------------------------+       +------------------------------+
//	| TestMain: go build both       |       | apogee standalone            |
//	|   binaries once               |  TCP  |   --namesrv-port 0           |
//	| client.Producer / LitePull ---+------>|   --broker-port 0 -c conf    |
//	|                               |       +------------------------------+
//	| nats.go jetstream ------------+------>| nats-server -c nats.conf     |
//	|                               |       |   listen 127.0.0.1:-1, JS on |
//	| rounds (b.Loop): apogee chunk,|       +------------------------------+
//	|   nats chunk, then the other  |        /proc/PID/stat  -> CPU seconds
//	|   order in the next round     |        /proc/PID/status -> VmHWM
//	+-------------------------------+
//
// Each round measures both systems for the same fixed time (-chunk) with the
// same number of client goroutines and the same in-flight window; the
// figures are totals over all rounds (messages / seconds), reported with
// b.ReportMetric. See README.md for the cases, the flags and the results.
package natsbench
