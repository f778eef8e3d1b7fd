// Package store is Apogee's file-based message store, RocketMQ's
// DefaultMessageStore: one append-only CommitLog split into memory-mapped
// files, a ConsumeQueue per (topic, queueId) built from it by a single
// ordered dispatch pass, hash IndexFiles for key queries, group-commit and
// periodic flushing, crash recovery and expiry cleanup.
//
// The store knows nothing of sockets or the remoting protocol: the broker
// calls PutMessage/GetMessage and maps PutStatus/GetStatus to response
// codes. It imports only the standard library, internal/message (record
// codec) and golang.org/x/sys/unix (mmap, msync, flock, statfs).
//
// All multi-byte integers below are big-endian. "Offset" in a file name is
// a 20-digit zero-padded decimal. These layouts are part of the on-disk
// format (byte-compatible with Apache RocketMQ); never change them.
//
// Directory tree under storePathRootDir:
//
//	commitlog/00000000000000000000       commit-log files (mappedFileSizeCommitLog each)
//	consumequeue/<topic>/<queueId>/<20>  consume-queue files (300,000 units each)
//	index/<yyyyMMddHHmmssSSS>            index files
//	checkpoint                           4096 bytes, see below
//	consumequeue.snapshot                queue state at the last clean stop (cq_snapshot.go)
//	abort                                exists while running (PID); present at start = crash
//	lock                                 flock'ed while running
//
// Commit-log record (hosts shown IPv4; an IPv6 host takes 20 bytes and sets
// SYSFLAG 0x10 born / 0x20 store):
//
//	+--------+------+----------------------+---------------------------------------+
//	| offset | size | field                | notes                                 |
//	+--------+------+----------------------+---------------------------------------+
//	|      0 |    4 | TOTALSIZE            | whole record                          |
//	|      4 |    4 | MAGICCODE            | 0xDAA320A7 v1, 0xDAA320AB v2          |
//	|      8 |    4 | BODYCRC              | crc32(body) & 0x7FFFFFFF              |
//	|     12 |    4 | QUEUEID              |                                       |
//	|     16 |    4 | FLAG                 |                                       |
//	|     20 |    8 | QUEUEOFFSET          | patched under the append lock         |
//	|     28 |    8 | PHYSICALOFFSET       | patched under the append lock         |
//	|     36 |    4 | SYSFLAG              |                                       |
//	|     40 |    8 | BORNTIMESTAMP        |                                       |
//	|     48 |    8 | BORNHOST             | 4-byte IP + int32 port                |
//	|     56 |    8 | STORETIMESTAMP       | patched under the append lock         |
//	|     64 |    8 | STOREHOST            |                                       |
//	|     72 |    4 | RECONSUMETIMES       |                                       |
//	|     76 |    8 | PREPAREDTXOFFSET     |                                       |
//	|     84 |    4 | BODYLENGTH (B)       |                                       |
//	|     88 |    B | BODY                 |                                       |
//	|        | 1/2  | TOPICLENGTH (T)      | 1 byte v1, 2 bytes v2                 |
//	|        |    T | TOPIC                |                                       |
//	|        |    2 | PROPERTIESLENGTH (P) |                                       |
//	|        |    P | PROPERTIES           | name 0x01 value 0x02 ...              |
//	+--------+------+----------------------+---------------------------------------+
//
// Blank record (fills the end of every commit-log file; minimum 8 bytes):
//
//	+--------+------+-----------+--------------------------+
//	|      0 |    4 | TOTALSIZE | bytes left in the file   |
//	|      4 |    4 | MAGICCODE | 0xCBD43194               |
//	+--------+------+-----------+--------------------------+
//
// Consume-queue unit (20 bytes; unit for queue offset q at byte q*20):
//
//	+--------+------+-----------------+------------------------------------------+
//	|      0 |    8 | commitLogOffset |                                          |
//	|      8 |    4 | size            | 0x7FFFFFFF in a pre-blank filler unit     |
//	|     12 |    8 | tagsCode        | Java hash of TAGS; delivery time (ms) for |
//	|        |      |                 | SCHEDULE_TOPIC_XXXX                       |
//	+--------+------+-----------------+------------------------------------------+
//
// Consume-queue files have their full size (mappedFileSizeConsumeQueue) but
// are sparse: blocks are allocated ahead of the writer in steps of 4 KiB
// doubling to 1 MiB, and a hole reads as zero units (the end of the queue).
//
// Index file: header | hashSlotNum x 4-byte slots | indexNum x 20-byte items
//
//	header                          item
//	+----+---+----------------+     +----+---+-----------------------------------+
//	|  0 | 8 | beginTimestamp |     |  0 | 4 | keyHash  abs(javaHash(key))       |
//	|  8 | 8 | endTimestamp   |     |  4 | 8 | phyOffset                         |
//	| 16 | 8 | beginPhyOffset |     | 12 | 4 | timeDiff (s since beginTimestamp) |
//	| 24 | 8 | endPhyOffset   |     | 16 | 4 | prevIndex (0 = end of chain)      |
//	| 32 | 4 | hashSlotCount  |     +----+---+-----------------------------------+
//	| 36 | 4 | indexCount     |     slot = item number of the newest item, 0 = empty
//	+----+---+----------------+     key = topic + "#" + (UNIQ_KEY | KEYS token)
//
// Checkpoint (first 40 of 4096 bytes):
//
//	+----+---+---------------------+
//	|  0 | 8 | physicMsgTimestamp  |
//	|  8 | 8 | logicsMsgTimestamp  |
//	| 16 | 8 | indexMsgTimestamp   |
//	| 24 | 8 | masterFlushedOffset |
//	| 32 | 8 | confirmPhyOffset    |
//	+----+---+---------------------+
package store
