package broker

import (
	"context"
	"hash/crc32"
	"net"
	"sort"
	"strconv"
	"sync"
	"time"

	"github.com/apogeemq/apogee/internal/protocol"
)

// registerPending is what the next registration must ship: the topics
// created or updated since the last one (RocketMQ's
// registerIncrementBrokerData), or everything (full).
type registerPending struct {
	mu     sync.Mutex
	full   bool                // guarded by mu
	topics map[string]struct{} // guarded by mu
}

// take returns and clears the pending work.
func (p *registerPending) take() (full bool, topics []string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	full, p.full = p.full, false
	for t := range p.topics {
		topics = append(topics, t)
	}
	clear(p.topics)
	return full, topics
}

// requestRegister asks the registration loop for a full registration at
// once (broker permission, role or deletions changed). Non-blocking;
// requests coalesce.
func (b *Broker) requestRegister() {
	b.regPending.mu.Lock()
	b.regPending.full = true
	b.regPending.mu.Unlock()
	b.wakeRegister()
}

// registerChanged asks the registration loop to ship the given topics
// only (they were created or updated).
func (b *Broker) registerChanged(tcs []protocol.TopicConfig) {
	b.regPending.mu.Lock()
	if b.regPending.topics == nil {
		b.regPending.topics = make(map[string]struct{})
	}
	for _, tc := range tcs {
		b.regPending.topics[tc.TopicName] = struct{}{}
	}
	b.regPending.mu.Unlock()
	b.wakeRegister()
}

func (b *Broker) wakeRegister() {
	select {
	case b.registerWake <- struct{}{}:
	default:
	}
}

// registerLoop registers the whole topic table with every name server
// every registerNameServerPeriod (clamped to 10..60 s); when woken it
// ships only the topics changed since (incremental registration: the
// name server upserts the listed topics, whose data version moved, and
// keeps the others), or everything after a full request.
func (b *Broker) registerLoop() {
	t := time.NewTicker(b.cfg.registerPeriod())
	defer t.Stop()
	for {
		full := false
		var topics []string
		select {
		case <-b.quit:
			return
		case <-t.C:
			full = true
			b.regPending.take() // the full table covers them
		case <-b.registerWake:
			full, topics = b.regPending.take()
		}
		ctx, cancel := context.WithTimeout(b.baseCtx, b.cfg.RegisterBrokerTimeoutMills)
		if full {
			b.registerAll(ctx)
		} else if len(topics) > 0 {
			b.registerTopics(ctx, topics)
		}
		cancel()
	}
}

// registerCreatedTimeout caps how long a send that created its topic waits
// for the name servers: under the producer's default 3 s send timeout, so
// an unreachable name server delays the first message, never fails it.
const registerCreatedTimeout = 2 * time.Second

// registerCreated registers topic, just created by a send, with every name
// server before the send is answered, as RocketMQ's
// createTopicInSendMessageMethod does: a client that sees the send succeed
// and then asks the name server for the route (a consumer starting after
// the first message) finds it. The registration loop's incremental
// registration of the same topic follows and is idempotent.
func (b *Broker) registerCreated(topic string) {
	ctx, cancel := context.WithTimeout(b.baseCtx, min(b.cfg.RegisterBrokerTimeoutMills, registerCreatedTimeout))
	defer cancel()
	b.registerTopics(ctx, []string{topic})
}

// haServerAddr is brokerIP2:haListenPort (listenPort+1 by default; the
// HA server's real port when it listens, ha_config.go).
func (b *Broker) haServerAddr() string {
	port := b.haAdvertisedPort()
	ip := b.cfg.BrokerIP2
	if ip == "" {
		ip = b.cfg.BrokerIP1
	}
	return net.JoinHostPort(ip, strconv.Itoa(port))
}

// registerAll sends REGISTER_BROKER with the whole topic table to every name
// server in parallel (docs/protocol.md §3.5). Failures are logged; the next
// period retries.
func (b *Broker) registerAll(ctx context.Context) {
	w := b.topicWrapper()
	chunk := 0
	switch {
	case b.cfg.EnableSplitRegistration && b.cfg.SplitRegistrationSize > 0:
		chunk = b.cfg.SplitRegistrationSize
	case len(w.TopicConfigTable) > registerSplitAbove:
		chunk = registerSplitAbove
	}
	if chunk == 0 || len(w.TopicConfigTable) <= chunk {
		b.register(ctx, w)
		return
	}
	// Split registration: every chunk carries the same data version; the
	// name server upserts the first chunk's topics (version changed) and
	// adds the later chunks' topics it does not have yet, as RocketMQ's
	// enableSplitRegistration does.
	names := make([]string, 0, len(w.TopicConfigTable))
	for t := range w.TopicConfigTable {
		names = append(names, t)
	}
	sort.Strings(names)
	for i := 0; i < len(names); i += chunk {
		part := &protocol.TopicConfigSerializeWrapper{
			TopicConfigTable: make(map[string]protocol.TopicConfig, chunk),
			DataVersion:      w.DataVersion,
		}
		for _, t := range names[i:min(i+chunk, len(names))] {
			part.TopicConfigTable[t] = w.TopicConfigTable[t]
		}
		b.register(ctx, part)
	}
}

// registerSplitAbove is the largest table sent in one REGISTER_BROKER:
// 100,000 topics made a 17 MB body, over the 16 MiB frame limit, so the
// full registration failed and the broker expired from the name servers.
const registerSplitAbove = 20000

// registerTopics sends REGISTER_BROKER with only the given topics and the
// current data version (RocketMQ 5's registerIncrementBrokerData): its cost
// follows the change, not the table. A failure is repaired by the next
// full registration, whose data version still differs from the name
// server's.
func (b *Broker) registerTopics(ctx context.Context, topics []string) {
	w := &protocol.TopicConfigSerializeWrapper{
		TopicConfigTable: make(map[string]protocol.TopicConfig, len(topics)),
		DataVersion:      b.Topics.DataVersion(),
	}
	rw := protocol.PermRead | protocol.PermWrite
	perm := b.dyn.brokerPermission.Load()
	for _, t := range topics {
		tc, ok := b.Topics.Get(t)
		if !ok {
			continue // deleted since; deletion is the admin's DELETE_TOPIC_IN_NAMESRV
		}
		if perm&rw != rw {
			tc.Perm &= perm
		}
		w.TopicConfigTable[t] = tc
	}
	if len(w.TopicConfigTable) > 0 {
		b.register(ctx, w)
	}
}

func (b *Broker) register(ctx context.Context, w *protocol.TopicConfigSerializeWrapper) {
	if !b.stampRegistration(w) { // controller_mode.go
		return
	}
	body := protocol.RegisterBrokerBody{
		TopicConfigSerializeWrapper: *w,
		FilterServerList:            []string{},
	}
	data, err := body.Encode()
	if err != nil {
		b.logger.Error("encode registration", "err", err)
		return
	}
	enableActingMaster := b.cfg.EnableSlaveActingMaster
	h := protocol.RegisterBrokerRequestHeader{
		BrokerName:         b.cfg.BrokerName,
		BrokerAddr:         b.addr,
		ClusterName:        b.cfg.BrokerClusterName,
		HaServerAddr:       b.haServerAddr(),
		BrokerID:           b.cfg.BrokerID,
		EnableActingMaster: &enableActingMaster,
		BodyCrc32:          int32(crc32.ChecksumIEEE(data) & 0x7FFFFFFF),
	}
	ext := protocol.EncodeHeader(&h, false)
	var wg sync.WaitGroup
	for _, addr := range b.cfg.NamesrvAddr {
		wg.Add(1)
		go func() {
			defer wg.Done()
			req := protocol.NewRequest(protocol.RegisterBroker, cloneExt(ext), data)
			resp, err := b.nsClient.InvokeSync(ctx, addr, req)
			switch {
			case err != nil:
				b.logger.Warn("register broker failed", "addr", addr, "err", err)
			case resp.Code != int32(protocol.Success):
				b.logger.Warn("register broker refused", "addr", addr, "code", resp.Code, "remark", resp.Remark)
			default:
				b.onRegisterResult(resp) // slave_sync.go: the master's addresses
				b.logger.Debug("registered with name server", "addr", addr, "topics", len(body.TopicConfigSerializeWrapper.TopicConfigTable))
			}
		}()
	}
	wg.Wait()
}

// unregisterAll sends UNREGISTER_BROKER to every name server (clean
// shutdown), bounded by 3 s.
func (b *Broker) unregisterAll() {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	ext := protocol.EncodeHeader(&protocol.BrokerIdentityHeader{
		BrokerName: b.cfg.BrokerName, BrokerAddr: b.addr, ClusterName: b.cfg.BrokerClusterName, BrokerID: b.cfg.BrokerID,
	}, false)
	var wg sync.WaitGroup
	for _, addr := range b.cfg.NamesrvAddr {
		wg.Add(1)
		go func() {
			defer wg.Done()
			req := protocol.NewRequest(protocol.UnregisterBroker, cloneExt(ext), nil)
			if _, err := b.nsClient.InvokeSync(ctx, addr, req); err != nil {
				b.logger.Warn("unregister broker failed", "addr", addr, "err", err)
			}
		}()
	}
	wg.Wait()
}

func cloneExt(m map[string]string) map[string]string {
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}
