package client

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net"
	"net/netip"
	"os"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/apogeemq/apogee/internal/message"
	"github.com/apogeemq/apogee/internal/protocol"
	"github.com/apogeemq/apogee/internal/remoting"
	"github.com/apogeemq/apogee/internal/run"
)

// instance is what RocketMQ calls the MQClientInstance: the connection pool
// (one remoting.Client), the route cache refreshed from the name servers,
// broker address lookup, heartbeats to every broker and the table of
// requests brokers send us. Each Producer or consumer owns exactly one
// instance (there is no process-wide factory: no package-level state).
//
// Lifecycle: newInstance starts nothing; handle/addHeartbeatSource/
// onRouteChange are called before start; start dials nothing but starts the
// route and heartbeat loops; close stops them, closes every connection and
// waits.
type instance struct {
	cfg      clientConfig
	logger   *slog.Logger
	clientID string
	ip       netip.Addr
	remote   *remoting.Client
	idGen    *message.UniqIDGenerator

	ns remoting.RoundRobin // spreads name-server requests over cfg.nameServers

	mu sync.RWMutex
	// routes maps wire topic -> current route; guarded by mu.
	routes map[string]*topicRoute
	// brokers maps broker name -> broker id -> address, merged from every
	// route ever seen; guarded by mu.
	brokers map[string]map[int64]string

	// Registered before start, read-only after.
	heartbeatSources []func(*protocol.HeartbeatData)
	routeListeners   []func(topic string, r *topicRoute)

	heartbeatWake chan struct{} // capacity 1; a send asks for a heartbeat now
	routeWake     chan string   // topics to refresh soon (after failures); bounded, sends never block

	state atomic.Int32 // stateCreated -> stateStarted -> stateClosed
	// routines owns the instance's goroutines. ctx is its context and quit
	// its Done channel: close stops it, so background calls (route refresh,
	// heartbeats, transaction checks) in flight end at once.
	routines *run.Group
	ctx      context.Context
	quit     <-chan struct{}
}

const (
	stateCreated int32 = iota
	stateStarted
	stateClosed
)

// nameServerTimeout bounds one name-server round trip.
const nameServerTimeout = 3 * time.Second

func newInstance(cfg clientConfig) *instance {
	ip := resolveClientIP(cfg.clientIP)
	instanceName := cfg.instanceName
	if instanceName == "" || instanceName == "DEFAULT" {
		instanceName = strconv.Itoa(os.Getpid()) + "#" + strconv.FormatInt(time.Now().UnixNano(), 10)
	}
	id := ip.String() + "@" + instanceName
	if cfg.unitName != "" {
		id += "@" + cfg.unitName
	}
	logger := cfg.logger.With("component", "client", "clientId", id)
	in := &instance{
		cfg:      cfg,
		logger:   logger,
		clientID: id,
		ip:       ip,
		remote: remoting.NewClient(remoting.ClientConfig{
			DialTimeout: cfg.dialTimeout,
			TLS:         cfg.tls,
			Logger:      logger,
			Sign:        cfg.signer(),
			// Send responses are read through Command.Ext only
			// (Producer.result, the consumer's send-back): no map per
			// response.
			ExtListResponseCodes: []protocol.RequestCode{protocol.SendMessage, protocol.SendMessageV2,
				protocol.SendBatchMessage, protocol.SendReplyMessage, protocol.SendReplyMessageV2},
		}),
		idGen:         message.NewUniqIDGenerator(ip, os.Getpid()),
		routes:        make(map[string]*topicRoute),
		brokers:       make(map[string]map[int64]string),
		heartbeatWake: make(chan struct{}, 1),
		routeWake:     make(chan string, 64),
		routines:      run.NewGroup("apogee"),
	}
	in.ctx, in.quit = in.routines.Context(), in.routines.Done()
	return in
}

// resolveClientIP parses ip, or finds the first non-loopback IPv4 address.
func resolveClientIP(ip string) netip.Addr {
	if a, err := netip.ParseAddr(ip); err == nil {
		return a.Unmap()
	}
	addrs, err := net.InterfaceAddrs()
	if err == nil {
		for _, a := range addrs {
			if pn, ok := a.(*net.IPNet); ok {
				if v, ok := netip.AddrFromSlice(pn.IP); ok {
					v = v.Unmap()
					if v.Is4() && !v.IsLoopback() && !v.IsLinkLocalUnicast() {
						return v
					}
				}
			}
		}
	}
	return netip.AddrFrom4([4]byte{127, 0, 0, 1})
}

// handle registers the processor of a request brokers send us (transaction
// checks, consumer notifications). REQUIRES: before start.
func (in *instance) handle(code protocol.RequestCode, p remoting.Processor) {
	in.remote.RegisterProcessor(code, p)
}

// addHeartbeatSource registers a function that adds its producer or
// consumer groups to every heartbeat. REQUIRES: before start. Sources run
// on the heartbeat goroutine and must not block.
func (in *instance) addHeartbeatSource(fn func(*protocol.HeartbeatData)) {
	in.heartbeatSources = append(in.heartbeatSources, fn)
}

// onRouteChange registers a callback run (on the goroutine that fetched the
// route, without locks held) whenever a topic's route changes. REQUIRES:
// before start.
func (in *instance) onRouteChange(fn func(topic string, r *topicRoute)) {
	in.routeListeners = append(in.routeListeners, fn)
}

// start starts the remoting client, the route refresh loop and the
// heartbeat loop.
func (in *instance) start() error {
	if err := in.cfg.validate(); err != nil {
		return err
	}
	if !in.state.CompareAndSwap(stateCreated, stateStarted) {
		if in.state.Load() == stateClosed {
			return ErrClosed
		}
		return nil
	}
	if err := in.remote.Start(); err != nil {
		return fmt.Errorf("client: start remoting: %w", err)
	}
	in.goFunc("client-route-refresh", in.routeLoop)
	in.goFunc("client-heartbeat", in.heartbeatLoop)
	in.logger.Info("client instance started", "namesrv", in.cfg.nameServers)
	return nil
}

// close stops the loops, closes every connection and waits. Idempotent.
func (in *instance) close() error {
	prev := in.state.Swap(stateClosed)
	if prev == stateClosed {
		return nil
	}
	in.routines.Close()
	if prev == stateStarted {
		if err := in.remote.Close(); err != nil {
			return fmt.Errorf("client: close remoting: %w", err)
		}
	}
	return nil
}

// running reports whether the instance is started and not closed.
func (in *instance) running() error {
	switch in.state.Load() {
	case stateStarted:
		return nil
	case stateCreated:
		return ErrNotStarted
	default:
		return ErrClosed
	}
}

// goFunc runs fn on a goroutine of in.routines. It refuses (false) once
// close has begun.
func (in *instance) goFunc(name string, fn func()) bool {
	return in.routines.Go(name, func(context.Context) { fn() })
}

// ---- routes ----

func (in *instance) routeLoop() {
	t := time.NewTicker(in.cfg.pollNameServer)
	defer t.Stop()
	for {
		select {
		case <-in.quit:
			return
		case <-t.C:
			in.refreshAllRoutes()
		case topic := <-in.routeWake:
			ctx, cancel := context.WithTimeout(in.ctx, nameServerTimeout)
			if _, err := in.refreshRoute(ctx, topic); err != nil {
				in.logger.Debug("route refresh after failure failed", "topic", topic, "err", err)
			}
			cancel()
		}
	}
}

// refreshSoon asks the route loop to refetch a topic's route (after a send
// to it failed). It never blocks; a full queue drops the request (the 30 s
// refresh still runs).
func (in *instance) refreshSoon(topic string) {
	select {
	case in.routeWake <- topic:
	default:
	}
}

func (in *instance) refreshAllRoutes() {
	in.mu.RLock()
	topics := slices.Collect(maps.Keys(in.routes))
	in.mu.RUnlock()
	for _, topic := range topics {
		select {
		case <-in.quit:
			return
		default:
		}
		ctx, cancel := context.WithTimeout(in.ctx, nameServerTimeout)
		if _, err := in.refreshRoute(ctx, topic); err != nil && !errors.Is(err, ErrNoRoute) {
			in.logger.Debug("route refresh failed", "topic", topic, "err", err)
		}
		cancel()
	}
}

// cachedRoute returns the cached route of a wire topic, or nil.
// anyTopic is one topic with a cached route ("" when none), as the Java
// producer's pickTopic takes the first of its publish table.
func (in *instance) anyTopic() string {
	in.mu.RLock()
	defer in.mu.RUnlock()
	for topic := range in.routes {
		return topic
	}
	return ""
}

func (in *instance) cachedRoute(topic string) *topicRoute {
	in.mu.RLock()
	defer in.mu.RUnlock()
	return in.routes[topic]
}

// route returns the route of a wire topic, fetching it on a cache miss.
// Unknown topics give ErrNoRoute.
func (in *instance) route(ctx context.Context, topic string) (*topicRoute, error) {
	if r := in.cachedRoute(topic); r != nil && !r.fromDefault {
		return r, nil
	}
	return in.refreshRoute(ctx, topic)
}

// publishRoute is route for producers: an unknown topic gets the route of
// createTopicKey (TBW102) with queue counts capped at queueNums, so the
// broker auto-creates the topic (docs/protocol.md Appendix B).
func (in *instance) publishRoute(ctx context.Context, topic, createTopicKey string, queueNums int32) (*topicRoute, error) {
	if r := in.cachedRoute(topic); r != nil && len(r.publish) > 0 {
		return r, nil
	}
	r, err := in.refreshRoute(ctx, topic)
	if err == nil && len(r.publish) > 0 {
		return r, nil
	}
	if err != nil && !errors.Is(err, ErrNoRoute) {
		return nil, err
	}
	def, derr := in.fetchRoute(ctx, createTopicKey)
	if derr != nil {
		if err != nil {
			return nil, err
		}
		return nil, derr
	}
	in.learnBrokers(def)
	r = newTopicRoute(topic, capQueues(topic, def, queueNums))
	r.fromDefault = true
	in.mu.Lock()
	if cur := in.routes[topic]; cur == nil || cur.fromDefault {
		in.routes[topic] = r
	}
	in.mu.Unlock()
	return r, nil
}

// refreshRoute fetches a wire topic's route now and stores it.
func (in *instance) refreshRoute(ctx context.Context, topic string) (*topicRoute, error) {
	data, err := in.fetchRoute(ctx, topic)
	if err != nil {
		return nil, err
	}
	in.learnBrokers(data)
	r := newTopicRoute(topic, data)
	in.mu.Lock()
	old := in.routes[topic]
	changed := old == nil || old.fromDefault || !routeEqual(old.data, data)
	if changed {
		in.routes[topic] = r
	} else {
		r = old
	}
	in.mu.Unlock()
	if changed {
		for _, fn := range in.routeListeners {
			fn(topic, r)
		}
	}
	return r, nil
}

// forgetRoute drops a topic from the cache (it is no longer refreshed).
func (in *instance) forgetRoute(topic string) {
	in.mu.Lock()
	delete(in.routes, topic)
	in.mu.Unlock()
}

func (in *instance) learnBrokers(data *protocol.TopicRouteData) {
	fresh := false
	in.mu.Lock()
	for _, b := range data.BrokerDatas {
		cur := in.brokers[b.BrokerName]
		if !maps.Equal(cur, b.BrokerAddrs) {
			fresh = true
		}
		m := make(map[int64]string, len(b.BrokerAddrs))
		maps.Copy(m, b.BrokerAddrs)
		in.brokers[b.BrokerName] = m
	}
	in.mu.Unlock()
	if fresh {
		// New brokers (or addresses) must learn our groups now, not in up to
		// 30 s: transaction checks and consumer lists depend on it.
		in.triggerHeartbeat()
	}
}

// fetchRoute asks the name servers for a wire topic's route. TOPIC_NOT_EXIST
// gives an error wrapping ErrNoRoute.
func (in *instance) fetchRoute(ctx context.Context, topic string) (*protocol.TopicRouteData, error) {
	req := protocol.NewRequest(protocol.GetRouteInfoByTopic, map[string]string{"topic": topic}, nil)
	resp, addr, err := in.invokeNameServer(ctx, req)
	if err != nil {
		return nil, err
	}
	switch protocol.ResponseCode(resp.Code) {
	case protocol.Success:
	case protocol.TopicNotExist:
		return nil, fmt.Errorf("%w %s (name server %s: %s)", ErrNoRoute, topic, addr, resp.Remark)
	default:
		return nil, newBrokerError(addr, "", topic, resp)
	}
	data, err := protocol.DecodeTopicRouteData(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("client: route of %s from %s: %w", topic, addr, err)
	}
	return data, nil
}

// invokeNameServer sends req to the name servers, starting with the next in
// round-robin order and moving on after network errors. It returns the
// response and the address that gave it.
func (in *instance) invokeNameServer(ctx context.Context, req *protocol.Command) (*protocol.Command, string, error) {
	if err := in.running(); err != nil {
		return nil, "", err
	}
	resp, addr, err := in.ns.InvokeSync(ctx, in.remote, in.cfg.nameServers, nameServerTimeout, req)
	if err != nil {
		return nil, "", fmt.Errorf("client: name server %s: %w", addr, err)
	}
	return resp, addr, nil
}

// unregisterTimeout bounds each UNREGISTER_CLIENT call (the Java client's
// mqClientApiTimeout, 3 s).
const unregisterTimeout = 3 * time.Second

// unregisterClient sends UNREGISTER_CLIENT with h to every known master in
// parallel, as the Java client does on shutdown, so brokers forget the
// group's member at once (consumers rebalance, transaction checks stop
// coming). Best effort: failures are logged at Debug. It returns when
// every call ended, after at most unregisterTimeout.
func (in *instance) unregisterClient(h protocol.UnregisterClientRequestHeader) {
	var addrs []string
	in.mu.RLock()
	for _, ids := range in.brokers {
		if a := ids[protocol.MasterID]; a != "" {
			addrs = append(addrs, a)
		}
	}
	in.mu.RUnlock()
	var wg sync.WaitGroup
	for _, addr := range addrs {
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(context.Background(), unregisterTimeout)
			defer cancel()
			req := protocol.NewRequest(protocol.UnregisterClient, protocol.EncodeHeader(&h, false), nil)
			if _, err := in.remote.InvokeSync(ctx, addr, req); err != nil {
				in.logger.Debug("unregister client failed", "addr", addr, "err", err)
			}
		})
	}
	wg.Wait()
}

// masterAddr returns the master address of a broker group, "" if unknown.
func (in *instance) masterAddr(brokerName string) string {
	in.mu.RLock()
	defer in.mu.RUnlock()
	return in.brokers[brokerName][protocol.MasterID]
}

// findBrokerAddr returns the address of broker id in a group; without
// onlyThisBroker it falls back to any address of the group (master first).
// slave reports whether the returned address is not the master's.
func (in *instance) findBrokerAddr(brokerName string, id int64, onlyThisBroker bool) (addr string, slave, found bool) {
	in.mu.RLock()
	defer in.mu.RUnlock()
	addrs := in.brokers[brokerName]
	if a := addrs[id]; a != "" {
		return a, id != protocol.MasterID, true
	}
	if onlyThisBroker || len(addrs) == 0 {
		return "", false, false
	}
	if a := addrs[protocol.MasterID]; a != "" {
		return a, false, true
	}
	ids := slices.Sorted(maps.Keys(addrs))
	return addrs[ids[0]], true, true
}

// brokerNameOf returns the group name of a broker address, "" if unknown.
func (in *instance) brokerNameOf(addr string) string {
	in.mu.RLock()
	defer in.mu.RUnlock()
	for name, addrs := range in.brokers {
		for _, a := range addrs {
			if a == addr {
				return name
			}
		}
	}
	return ""
}

// sendAddr is where messages to a broker address go: its VIP port (port -
// 2) with the VIP channel on.
func (in *instance) sendAddr(addr string) string {
	if !in.cfg.vipChannel {
		return addr
	}
	return vipAddr(addr)
}

func vipAddr(addr string) string {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return addr
	}
	p, err := strconv.Atoi(port)
	if err != nil || p < 3 {
		return addr
	}
	return net.JoinHostPort(host, strconv.Itoa(p-2))
}

// ---- heartbeats ----

func (in *instance) heartbeatLoop() {
	first := time.NewTimer(10 * time.Millisecond)
	defer first.Stop()
	t := time.NewTicker(in.cfg.heartbeatBroker)
	defer t.Stop()
	for {
		select {
		case <-in.quit:
			return
		case <-first.C:
		case <-t.C:
		case <-in.heartbeatWake:
		}
		ctx, cancel := context.WithTimeout(in.ctx, nameServerTimeout)
		in.sendHeartbeat(ctx)
		cancel()
	}
}

// triggerHeartbeat asks the heartbeat loop to run now (non-blocking).
func (in *instance) triggerHeartbeat() {
	select {
	case in.heartbeatWake <- struct{}{}:
	default:
	}
}

// heartbeatData assembles the body from every registered source.
func (in *instance) heartbeatData() *protocol.HeartbeatData {
	hb := &protocol.HeartbeatData{ClientID: in.clientID}
	for _, fn := range in.heartbeatSources {
		fn(hb)
	}
	if hb.ProducerDataSet == nil {
		hb.ProducerDataSet = []protocol.ProducerData{}
	}
	if hb.ConsumerDataSet == nil {
		hb.ConsumerDataSet = []protocol.ConsumerData{}
	}
	return hb
}

// sendHeartbeat sends HEART_BEAT to every known broker master (and slaves
// when the client has consumers), in parallel, and returns the first error.
func (in *instance) sendHeartbeat(ctx context.Context) error {
	hb := in.heartbeatData()
	if len(hb.ProducerDataSet) == 0 && len(hb.ConsumerDataSet) == 0 {
		return nil
	}
	body, err := protocol.MarshalJSON(hb)
	if err != nil {
		return fmt.Errorf("client: encode heartbeat: %w", err)
	}
	withSlaves := len(hb.ConsumerDataSet) > 0
	var addrs []string
	in.mu.RLock()
	for _, ids := range in.brokers {
		for id, a := range ids {
			if a != "" && (id == protocol.MasterID || withSlaves) {
				addrs = append(addrs, a)
			}
		}
	}
	in.mu.RUnlock()
	var (
		wg       sync.WaitGroup
		errMu    sync.Mutex
		firstErr error
	)
	for _, addr := range addrs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			req := protocol.NewRequest(protocol.HeartBeat, map[string]string{}, body)
			resp, err := in.remote.InvokeSync(ctx, addr, req)
			if err == nil && resp.Code != int32(protocol.Success) {
				err = newBrokerError(addr, "", "", resp)
			}
			if err != nil {
				in.logger.Debug("heartbeat failed", "addr", addr, "err", err)
				errMu.Lock()
				if firstErr == nil {
					firstErr = err
				}
				errMu.Unlock()
			}
		}()
	}
	wg.Wait()
	return firstErr
}
