// Package pop owns the durable state of POP consumption (docs/grpc.md §8,
// docs/broker.md §1.14): per consumer group and queue, the next offset
// to pop, the in-flight checkpoints (which popped messages are still
// invisible, until when, and which of them are acked), and the FIFO
// (orderly) block of each queue.
//
// It knows nothing of sockets, the commit log or request codes: the broker
// reads messages from its store, tells this package what it handed out
// (AddCheckpoint, OrderPop), what was acked (Ack, OrderAck) or re-timed
// (ChangeInvisible, OrderChange), asks which checkpoints expired
// (TakeExpired) and reports them re-delivered (Revived). The package starts
// no goroutines; the broker calls Sync and Maintain from its own loop.
//
// # Durability
//
// Every state change is one record appended to the active log file with a
// single write(2) before the call returns, so a SIGKILL loses nothing that
// was acknowledged to a client (the page cache survives the process). Sync
// fsyncs the file; the broker calls it every second (and a machine crash
// can lose at most that window). On Open the newest complete log is
// replayed: handles issued before a restart name the same checkpoints after
// it, so they stay valid.
//
// # Replication
//
// A slave's Store follows its master's: ReadReplication on the master
// returns the records framed after a stream position (or a snapshot),
// ApplyReplicated on the slave applies them and writes them to its own log
// in the same format, so a slave promoted to master recovers the POP state
// its master had (repl.go, DESIGN.md).
//
// # On-disk format (part of the on-disk format; never change)
//
// Directory <root>/pop holds files named <seq>.poplog (20 decimal digits).
// Each file is a sequence of frames:
//
//	+-----------+-----------+--------------------+
//	| length u32| crc32c u32| payload (length B) |
//	+-----------+-----------+--------------------+
//	big-endian; crc over the payload; payload[0] is the record type.
//
// Record payloads (v = signed varint, u = unsigned varint, s = u length +
// bytes, key = s group, s topic, v queueId):
//
//	1 checkpoint   key v start v popTime v invisibleTime v nextOffset
//	               u n, n x u offset-start, u ackedBits
//	2 ack          key v start v popTime v offset
//	3 change       key v start v popTime v offset v newPopTime v newInvisible
//	               (ack offset in the old checkpoint; new 1-message one)
//	4 revived      key v start v popTime
//	5 pop offset   key v offset
//	6 order pop    key v popTime v invisibleTime v nextOffset s attemptId
//	               u n, v first (when n > 0), n x (u offset-first, u deliveries)
//	7 order ack    key v popTime v offset
//	8 order change key v popTime v offset v nextVisibleTime
//	9 order commit key v commitOffset
//	10 snapshot begin  u seq
//	11 snapshot end
//	12 ack bits    key v start v popTime u bits (bit i: the checkpoint's
//	               message i is acked; a batch ack of several messages)
//	13 drop        byte kind (1 topic, 2 group), s name: every queue of
//	               the deleted topic or group is forgotten
//
// Every file starts with a snapshot: records 10, then the live state
// (5, 9, 1 with its acked bits, 6 + 7 + 8), then 11; appends follow. A
// file without record 11 (a compaction cut short by a crash) is ignored and
// deleted; the previous file is then still the complete, active one,
// because compaction holds the state lock from its first write until the
// switch. A torn or corrupt tail is truncated at the last good frame and
// reported.
//
// # Memory
//
// One checkpoint per popped queue per pop (up to 32 messages: its acked
// bits are one uint32); offsets are stored as a count when contiguous and
// as uint32 diffs only when a filter skipped messages. See DESIGN.md for
// the measured footprint.
package pop
