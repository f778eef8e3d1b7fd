// Package litebench holds the lite-topic scale benchmarks of one broker
// (RocketMQ 5.5 lite topics, docs/priority-and-lite.md): create and send to
// many lite topics under one parent (one message each), the broker's RSS and
// data-dir size afterwards, send throughput spread over up to 100,000 lite
// topics against one plain topic in the same run, and the restart time with
// every lite topic on disk. The broker is an `apogee standalone` child
// process on free loopback ports; figures come from /proc.
//
// Run (figures are ratios within one run: the machine is shared):
//
//	go test -run '^$' -bench . -benchtime 1x -timeout 60m ./benchmarks/lite
//	go test -run '^$' -bench . -benchtime 1x -timeout 60m ./benchmarks/lite -args -lite.topics=1000000
//
// Flags (after -args): -lite.topics (100000), -lite.spread (100000 lite
// topics for the throughput comparison), -lite.chunk (3s per side per
// round), -lite.rounds (3), -lite.window (pipelined sends in flight, 128).
package litebench
