// Package message owns RocketMQ's message encodings: the Message and
// MessageExt types, the properties string, the batch body of
// SEND_BATCH_MESSAGE, the stored (commit-log) record that pull and query
// responses also carry, body compression (zlib, LZ4 frames, zstd: the
// compressType of the sysFlag; codecs.go, bounded output), tag hash codes,
// and the two message ids (offset id and UNIQ_KEY).
//
// It is pure: the stdlib plus the LZ4 and zstd codecs only, no I/O, no goroutines, no clock except the one a
// UniqIDGenerator is given. Decoders never panic on any input, never
// allocate more than the input length implies, and report errors the
// callers branch on with errors.Is: ErrShortBuffer (a torn tail), ErrBlank
// (end-of-file filler), ErrBadMagic, ErrBadCRC, ErrCorrupt.
//
// # Stored record (docs/storage.md §2.3, docs/protocol.md §6.8)
//
// Part of the on-disk format; never change. Integers are big-endian.
//
//	offset  size  field
//	     0     4  TOTALSIZE         int32, whole record incl. this field
//	     4     4  MAGICCODE         0xDAA320A7 (V1) | 0xDAA320AB (V2, topic > 127 bytes)
//	     8     4  BODYCRC           crc32 IEEE(body) & 0x7FFFFFFF
//	    12     4  QUEUEID           int32
//	    16     4  FLAG              int32 user flag
//	    20     8  QUEUEOFFSET       int64 consume-queue offset   (patched by the store)
//	    28     8  PHYSICALOFFSET    int64 commit-log offset      (patched by the store)
//	    36     4  SYSFLAG           int32, bits below
//	    40     8  BORNTIMESTAMP     int64 ms
//	    48   8|20 BORNHOST          4|16-byte address + int32 port (20 if SYSFLAG&0x10)
//	  56|68    8  STORETIMESTAMP    int64 ms                     (patched by the store)
//	     .   8|20 STOREHOST         as BORNHOST (20 if SYSFLAG&0x20)
//	     .     4  RECONSUMETIMES    int32
//	     .     8  PREPAREDTXOFFSET  int64
//	     .     4  BODYLENGTH        int32 B
//	     .     B  BODY              as sent (compressed if SYSFLAG&0x1)
//	     .   1|2  TOPICLENGTH       int8 (V1) | int16 (V2)
//	     .     T  TOPIC             UTF-8
//	     .     2  PROPERTIESLENGTH  int16 P (<= 32767)
//	     .     P  PROPERTIES        name 0x01 value 0x02 ...
//
// V1 with IPv4 hosts: TOTALSIZE = 91 + B + T + P. V2 adds 1, each IPv6 host
// adds 12. A blank record (end of a commit-log file) is TOTALSIZE = bytes
// left in the file, MAGICCODE = 0xCBD43194, nothing else written.
//
// # SYSFLAG bits (docs/protocol.md §6.4)
//
//	0x001 COMPRESSED     0x002 MULTI_TAGS    0x00C transaction type
//	                     (0x0 none, 0x4 prepared, 0x8 commit, 0xC rollback)
//	0x010 BORNHOST_V6    0x020 STOREHOST_V6  0x040 NEED_UNWRAP  0x080 INNER_BATCH
//	0x700 compression type: 0x100 LZ4, 0x200 ZSTD, 0x300 ZLIB, 0 = ZLIB
//
// # Batch body item (docs/protocol.md §6.7)
//
//	TOTALSIZE int32 | MAGICCODE int32 (0) | BODYCRC int32 (0) | FLAG int32 |
//	BODYLEN int32 | BODY | PROPERTIESLEN int16 | PROPERTIES
//
// # Message ids (docs/protocol.md §6.9), uppercase hex
//
//	offset id  = storeHostIP(4|16) | storePort int32 | commitLogOffset int64   (32|56 chars)
//	UNIQ_KEY   = clientIP(4|16) | pid int16 | classLoaderHash int32 |
//	             ms since month start int32 | counter int16                    (32|56 chars)
//
// # Hot path
//
// The store encodes a record with AppendStored into a reused buffer outside
// its append lock (no allocation), then inside the lock patches the fields
// only known there with SetQueueOffset, SetPhysicalOffset and
// SetStoreTimestamp (positions OffsetQueueOffset, OffsetPhysicalOffset,
// StoreTimestampOffset(sysFlag)). StoredSize / StoredSizeOf and CheckLimits
// size and validate a record before encoding. Readers that need a few fields
// of many records (dispatch, pull filtering, recovery) use ViewStored, a
// validated zero-copy view that allocates nothing; DecodeStored and
// DecodeStoredAll materialise Ext values that never alias their input's
// owner (DecodeStoredAll copies the input once).
//
// Properties are encoded in ascending key order so equal maps give equal
// bytes, and decoded with the Java broker's rules (empty names or values
// dropped; a value may contain 0x01).
package message
