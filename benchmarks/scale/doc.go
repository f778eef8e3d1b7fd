// Package scalebench holds the many-queues benchmarks of one broker: topic
// creation at 100,000 topics, pipelined publishing and consuming spread
// round-robin over 1 to 100,000 queues, and restart with 100,000 queues.
// Each benchmark runs `apogee standalone` as a child process on free
// loopback ports with RocketMQ's defaults, under the machine's default
// limits, and reports the broker's open files, mappings, RSS and data-dir
// size read from /proc.
//
// Run (figures are ratios within one run: the machine is shared):
//
//	go test -run '^$' -bench . -benchtime 1x -timeout 60m ./benchmarks/scale
//	go test -run '^$' -bench Publish -benchtime 1x ./benchmarks/scale -args -scale.rounds=5 -scale.chunk=3s
//
// Flags (after -args): -scale.topics1 (100000) and -scale.topics4 (10000)
// for the creation benchmarks, -scale.queues (1,1000,10000,100000),
// -scale.rounds (3) and -scale.chunk (2s of publishing per queue count per
// round), -scale.window (pipelined sends in flight, 128), -scale.profile
// (a directory: broker CPU profiles of the last count's last publish round
// and of the consumes, through metricsPprofEnable). Run with
// -benchtime 1x: each benchmark sets up its own server, and the rounds
// come from -scale.rounds, not b.N.
//
// The comparison with NATS JetStream (the same subject counts in one
// stream, interleaved in the same run) is BenchmarkManySubjects in
// benchmarks/nats, whose module keeps nats-server out of Apogee's go.mod.
package scalebench
