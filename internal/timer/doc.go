// Package timer is Apogee's timer-message store (RocketMQ 5.x
// TimerMessageStore, docs/broker.md §1.9): messages sent with
// TIMER_DELIVER_MS / TIMER_DELAY_SEC / TIMER_DELAY_MS are parked in topic
// rmq_sys_wheel_timer and put back to their real topic when their time
// comes.
//
// It owns the timer log files (<root>/timerlog), the timer checkpoint
// (<root>/config/timercheck) and the in-memory wheel. It reads the timer
// topic's consume queue and the commit log, and puts delivered messages,
// only through the store's API. It never imports the broker or remoting.
//
// Data flow
//
//	send ──Rewrite──> commit log, topic rmq_sys_wheel_timer, queue 0
//	                    │ consume queue (store dispatch)
//	        enqueue goroutine: for each unit from the checkpointed queue
//	        offset, append a 52-byte record to the timer log and link it
//	        into the wheel slot of its (aligned) delivery time
//	                    │
//	        dequeue goroutine: when now >= slot + precision, walk the
//	        slot's list, read each message from the commit log, restore
//	        REAL_TOPIC/REAL_QID, add TIMER_ENQUEUE_MS/TIMER_DEQUEUE_MS, put
//
// Timer log record (RocketMQ's layout; big-endian; part of the on-disk
// format, never change):
//
//	offset size field
//	0      4    size = 52
//	4      8    prevPos: log position of the previous record of the same
//	            slot, -1 for the first (a backward linked list)
//	12     4    magic: 1 (default), 5 (delete: cancels a timer of the slot)
//	16     8    currWriteTimeMs: when the record was appended
//	24     4    delayMs: slotTimeMs - currWriteTimeMs
//	28     8    commitLogOffset of the timer message
//	36     4    size of the timer message in the commit log
//	40     4    realTopicHash (Java String.hashCode of REAL_TOPIC)
//	44     8    queue offset of the unit in rmq_sys_wheel_timer
//
// Log files are named by their starting position (20 digits), hold
// floor(fileSize/52) records and never split one; the bytes past the last
// record of a file are unused. Positions are global: file base + offset.
//
// Checkpoint (<root>/config/timercheck, written atomically):
//
//	magic(int32)=0x54494D52 version(int32)=1 doneMs(int64) flushPos(int64)
//	queueOffset(int64) crc32(int32 over the preceding bytes)
//
// doneMs is the first slot not yet fully delivered; flushPos the log
// position up to which the log is synced; queueOffset the next timer-topic
// queue offset to enqueue. The three are captured together, so records
// below flushPos are exactly the units below queueOffset.
//
// The wheel (slot time -> last record position and count) lives in memory
// only, one small map entry per occupied slot: pending timers cost 52 bytes
// of disk each and no heap. This departs from RocketMQ, whose wheel is a
// 38 MB memory-mapped file (<root>/timerwheel) of 2 x 7 days of slots and
// which needs "roll" records for delays beyond two days: a map keyed by
// slot time has no wrap-around, so any delay up to timerMaxDelaySec is
// linked directly, and its size follows the occupied slots (about 50 bytes
// each: 13 MiB for timers spread over every second of three days). Start rebuilds it by scanning the retained log
// files up to flushPos (records of slots before doneMs are skipped); any
// records past flushPos are discarded and re-enqueued from queueOffset.
// Log files whose every slot is before doneMs are deleted.
//
// Cancel: a message with TIMER_DEL_UNIQKEY = "<realTopic>+<UNIQ_KEY>" and
// the same delivery time as the timer it cancels is parked like any timer
// but linked as a delete record; when the slot fires, the timers whose
// REAL_TOPIC+UNIQ_KEY match a delete record of the slot are skipped and the
// delete messages themselves are never delivered.
//
// Delivery guarantees: a slot is fired once now >= slot + precision, and a
// slot is aligned as RocketMQ does (a multiple of the precision minus one
// precision, other times floored), so a message is never delivered early
// and at most about one precision late. doneMs advances only after every
// put of the slot succeeded; a crash can redeliver the slot in progress
// (at-least-once), a clean Close never does. After a restart with another
// timerPrecisionMs, pending timers are folded into the new grid (a slot
// may then hold several lists) and may fire up to one old precision early.
package timer
