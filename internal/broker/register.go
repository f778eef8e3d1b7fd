package broker

import (
	"context"
	"hash/crc32"
	"net"
	"strconv"
	"sync"
	"time"

	"github.com/apogeemq/apogee/internal/protocol"
)

// requestRegister asks the registration loop to register at once (after a
// topic was created, updated or deleted). Non-blocking; requests coalesce.
func (b *Broker) requestRegister() {
	select {
	case b.registerWake <- struct{}{}:
	default:
	}
}

// registerLoop registers with every name server every
// registerNameServerPeriod (clamped to 10..60 s) and whenever asked.
func (b *Broker) registerLoop() {
	t := time.NewTicker(b.cfg.registerPeriod())
	defer t.Stop()
	for {
		select {
		case <-b.quit:
			return
		case <-t.C:
		case <-b.registerWake:
		}
		ctx, cancel := context.WithTimeout(b.baseCtx, b.cfg.RegisterBrokerTimeoutMills)
		b.registerAll(ctx)
		cancel()
	}
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
	body := protocol.RegisterBrokerBody{
		TopicConfigSerializeWrapper: *b.topicWrapper(),
		FilterServerList:            []string{},
	}
	data, err := body.Encode()
	if err != nil {
		b.logger.Error("encode registration", "err", err)
		return
	}
	enableActingMaster := false
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
