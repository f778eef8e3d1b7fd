package broker

import "sync/atomic"

// brokerStats counts what the broker serves; Stats() snapshots it.
type brokerStats struct {
	sendRequests     atomic.Int64
	sendFailed       atomic.Int64
	sendRejected     atomic.Int64 // refused before the store (size, permissions)
	sendQueueTimeout atomic.Int64 // [TIMEOUT_CLEAN_QUEUE] answers
	pageCacheBusy    atomic.Int64 // [PC_SYNCHRONIZED] answers
	messagesIn       atomic.Int64
	bytesIn          atomic.Int64
	pullRequests     atomic.Int64
	pullFound        atomic.Int64
	pullMiss         atomic.Int64
	pullHeld         atomic.Int64 // requests parked by long polling
	messagesOut      atomic.Int64
	bytesOut         atomic.Int64
}

// Stats is a snapshot of the broker's counters (RocketMQ 5 metric names in
// the comments), read by internal/metrics at scrape time.
type Stats struct {
	SendRequests     int64 // rocketmq_rpc requests, send
	SendFailed       int64
	SendRejected     int64
	SendQueueTimeout int64 // SYSTEM_BUSY [TIMEOUT_CLEAN_QUEUE]
	PageCacheBusy    int64 // SYSTEM_BUSY [PC_SYNCHRONIZED]
	MessagesIn       int64 // rocketmq_messages_in_total
	BytesIn          int64 // rocketmq_throughput_in_total
	PullRequests     int64
	PullFound        int64
	PullMiss         int64
	PullHeld         int64 // currently suspended pulls
	MessagesOut      int64 // rocketmq_messages_out_total
	BytesOut         int64 // rocketmq_throughput_out_total
	Topics           int
	ConsumerGroups   int
	ProducerGroups   int
}

// Stats returns a snapshot of the broker's counters.
func (b *Broker) Stats() Stats {
	s := &b.stats
	return Stats{
		SendRequests:     s.sendRequests.Load(),
		SendFailed:       s.sendFailed.Load(),
		SendRejected:     s.sendRejected.Load(),
		SendQueueTimeout: s.sendQueueTimeout.Load(),
		PageCacheBusy:    s.pageCacheBusy.Load(),
		MessagesIn:       s.messagesIn.Load(),
		BytesIn:          s.bytesIn.Load(),
		PullRequests:     s.pullRequests.Load(),
		PullFound:        s.pullFound.Load(),
		PullMiss:         s.pullMiss.Load(),
		PullHeld:         s.pullHeld.Load(),
		MessagesOut:      s.messagesOut.Load(),
		BytesOut:         s.bytesOut.Load(),
		Topics:           b.Topics.Len(),
		ConsumerGroups:   len(b.Clients.ConsumerGroups()),
		ProducerGroups:   len(b.Clients.ProducerGroups()),
	}
}
