// Package client is Apogee's Go SDK for RocketMQ-compatible clusters
// (Apogee or Apache RocketMQ): a Producer (sync, async, one-way, batch,
// ordered and transactional sends) and consumers (PushConsumer,
// PullConsumer, LitePullConsumer). It speaks the remoting protocol through
// internal/remoting and interoperates with the official Java and Go clients
// (same wire headers, properties, compression flags and message ids).
//
// Options are typed by target, as in franz-go: an Opt (name servers,
// namespace, logger, ...) configures any client; a ProducerOpt only a
// producer; a ConsumerOpt only consumers.
//
//	p, err := client.NewProducer("my-group",
//		client.WithNameServers("127.0.0.1:9876"),
//		client.WithSendTimeout(3*time.Second))
//	if err != nil { ... }
//	if err := p.Start(); err != nil { ... }
//	defer p.Close()
//	res, err := p.Send(ctx, client.NewMessage("TopicA", []byte("hi")).WithTag("TagA"))
//
// Lifecycle: constructors validate options and start nothing; Start starts
// the background goroutines (route refresh, heartbeats, ...); Close is
// idempotent and returns after every goroutine has exited. Every blocking
// call takes a context first. Errors a broker answered are *BrokerError
// (address, broker name, topic, code, remark); callers branch on the
// sentinels (ErrClosed, ErrNoRoute, ErrTimeout, ErrIllegalMessage) with
// errors.Is. The package has no package-level mutable state: each client
// owns its connections.
//
// What a producer sends (docs/protocol.md §3.3; wire names in brackets):
//
//	send          SEND_MESSAGE_V2 (310), header letters a..n, binary ROCKETMQ header
//	               a producerGroup  b topic  c defaultTopic (TBW102)  d defaultTopicQueueNums (4)
//	               e queueId  f sysFlag  g bornTimestamp  h flag  i properties
//	               j reconsumeTimes  k unitMode  l maxReconsumeTimes  m batch  n bname
//	batch         SEND_BATCH_MESSAGE (320), body = records
//	               | TOTALSIZE 4 | MAGIC 4 (0) | BODYCRC 4 (0) | FLAG 4 | BODYLEN 4 | BODY | PROPLEN 2 | PROPS |
//	transaction   half message (TRAN_MSG=true, PGROUP, sysFlag |= 0x4), then END_TRANSACTION (37) one-way
//	request/reply Request: CORRELATION_ID, REPLY_TO_CLIENT, TTL; SendReply: SEND_REPLY_MESSAGE_V2 (325)
//	              to <cluster>_REPLY_TOPIC; the reply arrives as PUSH_REPLY_MESSAGE_TO_CLIENT (326)
//	heartbeat     HEART_BEAT (34) every 30 s to every master (and slaves with consumers)
//	route         GET_ROUTEINFO_BY_TOPIC (105) on first use and every 30 s
//
// Bodies of 4096 bytes or more are compressed, zlib by default (sysFlag 0x301;
// WithCompressType picks LZ4 0x101 or zstd 0x201, and consumers inflate all
// three); batches
// never are. Every message gets a UNIQ_KEY (its MsgID).
//
// Never imported here: store, broker, namesrv, prometheus (metrics plug in
// through hooks). See DESIGN.md for ownership, goroutines and lock order.
package client
