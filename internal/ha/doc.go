// Package ha is classic RocketMQ master/slave replication (DefaultHAService,
// docs/broker.md §2.1): a master streams its raw commit log to every
// slave over a plain TCP port (haListenPort, listenPort+1 by default), each
// slave appends the bytes at exactly the same offsets and reports how far it
// got, and SYNC_MASTER puts wait for enough reports (inSyncReplicas).
//
// It knows the store's exported API and sockets, never the broker or the
// remoting protocol. Imports: store (statuses, Replicator), stdlib.
//
// Pieces (each wire-independent part separate, so controller mode can reuse
// the transfer loop and the ack bookkeeping with its own framing):
//
//	Server       master: accept loop, one slaveConn per slave, Stats
//	slaveConn    read loop (reports -> ack offset) + write loop (transfers)
//	GroupTransfer ack bookkeeping: store.Replicator for SYNC_MASTER
//	Client       slave: connect, report, append, reconnect
//	transferDecoder  frame splitter of the master's stream (fuzzed)
//
// Wire protocol, all integers big-endian. Part of the wire format shared
// with Java brokers; never change.
//
//	slave -> master, REPORT (8 bytes), at connect, after every append that
//	grew the log, and at least every haSendHeartbeatInterval:
//	+--------+------+---------------+-------------------------------------+
//	| offset | size | field         | notes                               |
//	+--------+------+---------------+-------------------------------------+
//	|      0 |    8 | maxPhyOffset  | slave's commit-log end; 0 = empty   |
//	+--------+------+---------------+-------------------------------------+
//
//	master -> slave, TRANSFER (12-byte header + body):
//	+--------+------+----------------+------------------------------------+
//	|      0 |    8 | physicalOffset | commit-log offset of body[0]       |
//	|      8 |    4 | bodySize       | 0 = heartbeat; <= haTransferBatch- |
//	|        |      |                | Size, never crosses a file end     |
//	|     12 |    n | body           | raw commit-log bytes               |
//	+--------+------+----------------+------------------------------------+
//
// Start point: a slave reporting 0 gets the master's last commit-log file
// onwards (maxOffset - maxOffset % mappedFileSizeCommitLog), never history;
// any other slave continues at its reported offset. A slave that has data
// and receives a frame at another offset closes the connection, waits
// ReconnectInterval and reports again. Master and slave must use the same
// mappedFileSizeCommitLog, and a slave must not use the transient store
// pool (its readable end must be its written end).
package ha
