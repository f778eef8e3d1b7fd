package broker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/apogeemq/apogee/internal/message"
	"github.com/apogeemq/apogee/internal/protocol"
	"github.com/apogeemq/apogee/internal/remoting"
	"github.com/apogeemq/apogee/internal/run"
	"github.com/apogeemq/apogee/internal/store"
	"github.com/apogeemq/apogee/internal/timer"
)

// Broker is one RocketMQ broker: a store, the metadata managers, and the
// remoting servers whose processors serve clients. New starts nothing;
// Start brings it up; Close shuts it down (startup in reverse) and waits for
// every goroutine it started.
type Broker struct {
	cfg    Config
	logger *slog.Logger
	now    func() time.Time

	// Metadata managers, loaded in Start from <storePathRootDir>/config.
	Topics       *TopicConfigManager
	Groups       *SubscriptionGroupManager
	Offsets      *ConsumerOffsetManager
	DelayOffsets *DelayOffsetTable
	Clients      *ClientManager
	Locks        *RebalanceLockManager
	// Store is created in Start, once the serving address is known (it is
	// the STOREHOST of every message).
	Store *store.Store

	server    *remoting.Server // main port (listenPort)
	vipServer *remoting.Server // VIP/fast port (listenPort-2); nil when disabled
	nsClient  *remoting.Client // to name servers
	pullHold  *pullHoldService
	pop       *popService  // POP consumption (pop.go); nil until Start
	acting    actingState  // slave acting master (acting_master.go)
	lite      *liteService // lite topics (lite.go); created in New
	sendQueue *sendQueue
	schedule  *scheduleService
	stats     brokerStats
	meters    *meters       // per-topic/group counters (meters.go); nil when metrics are disabled
	tps       tpsSampler    // runtime-info TPS windows (runtime_tps.go)
	dyn       dynamicConfig // run-time broker.conf keys (admin_config.go)

	requestModes *requestModeTable // QUERY_ASSIGNMENT modes (request_mode.go)

	timerStore *timer.Timer // timer messages (timer.go); nil when disabled or on a slave
	ha         haState      // replication (ha_config.go, slave_sync.go)
	auth       authState    // ACL 2.0 (auth.go, admin_auth.go)
	ctl        ctlState     // controller mode (controller_mode.go)
	tls        tlsState     // tlsMode (tls.go)

	addr      string         // brokerIP1:port, as advertised; set in Start
	storeHost netip.AddrPort // same address, for ids
	uniq      *message.UniqIDGenerator
	bootTime  time.Time
	// sendResps recycles send responses written to remoting connections
	// (*sendResponse; send.go writeSendResponse).
	sendResps sync.Pool
	// commitStaged is the read loops' commit of deferred sends
	// (send_raw.go), one func value for every AtReadIdle call.
	commitStaged func(*remoting.Conn)

	// registerWake asks the registration loop to register at once (after a
	// topic change). Capacity 1, non-blocking send.
	registerWake chan struct{}
	// reserved is the main port, bound in start and listening once the
	// broker can serve (limits.go).
	reserved   *reservedPort
	regPending registerPending // register.go

	// routines owns every background goroutine. baseCtx is its context
	// and quit its Done channel: both end when shutdown stops the group,
	// after the unregistration; background calls derive from baseCtx.
	routines *run.Group
	baseCtx  context.Context
	quit     <-chan struct{}

	// state: 0 new, 1 starting, 2 running, 3 closing, 4 closed.
	state   atomic.Int32
	closeMu sync.Mutex // serialises Close
}

const (
	stateNew int32 = iota
	stateStarting
	stateRunning
	stateClosing
	stateClosed
)

// ErrClosed is returned by Start after Close.
var ErrClosed = errors.New("broker: closed")

// New validates cfg and builds a broker; it opens nothing and starts nothing.
func New(cfg Config, logger *slog.Logger) (*Broker, error) {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if err := cfg.validateHA(); err != nil { // ha_config.go; forces a master's brokerId to 0
		return nil, err
	}
	logger = logger.With("component", "broker", "brokerName", cfg.BrokerName)
	routines := run.NewGroup("broker")
	b := &Broker{
		routines:     routines,
		baseCtx:      routines.Context(),
		quit:         routines.Done(),
		cfg:          cfg,
		logger:       logger,
		now:          time.Now,
		registerWake: make(chan struct{}, 1),
	}
	dir := b.configDir()
	b.Topics = newTopicConfigManager(filepath.Join(dir, "topics.json"), logger, b.now)
	b.Topics.onChange = b.registerChanged // register.go: incremental registration
	b.lite = newLiteService(b)
	b.Topics.virtual = b.lite.topicConfig // lite.go: lite topics' queues
	b.Groups = newSubscriptionGroupManager(filepath.Join(dir, "subscriptionGroup.json"), logger, b.now)
	b.Offsets = newConsumerOffsetManager(filepath.Join(dir, "consumerOffset.json"), logger, b.now, cfg.ConsumerOffsetUpdateVersionStep)
	b.DelayOffsets = newDelayOffsetTable(filepath.Join(dir, "delayOffset.json"))
	b.requestModes = newRequestModeTable(filepath.Join(dir, "messageRequestMode.json")) // request_mode.go
	b.Clients = newClientManager(b.notifyConsumerIDsChanged)
	b.pullHold = newPullHoldService(b)
	b.sendQueue = newSendQueue(b)
	b.commitStaged = b.commitDeferred
	b.dyn.init(&b.cfg)
	b.Locks = newRebalanceLockManager(b.now, b.cfg.RebalanceLockMaxLiveTime)
	if cfg.MetricsEnabled() {
		b.meters = newMeters()
	}
	return b, nil
}

// Config returns the broker's configuration (after Start, Store.StoreHost
// and ListenPort hold the real values).
func (b *Broker) Config() Config { return b.cfg }

// Addr returns the advertised client address (brokerIP1:port); valid after Start.
func (b *Broker) Addr() string { return b.addr }

// VIPAddr returns the VIP channel's address, or "" when disabled.
func (b *Broker) VIPAddr() string {
	if b.vipServer == nil {
		return ""
	}
	return net.JoinHostPort(b.cfg.BrokerIP1, strconv.Itoa(b.vipServer.Addr().(*net.TCPAddr).Port))
}

func (b *Broker) configDir() string { return filepath.Join(b.cfg.Store.StorePathRootDir, "config") }

// Start loads metadata, listens, opens the store, registers with the name
// servers and starts the background services. On error everything started
// so far is closed again.
func (b *Broker) Start() error {
	if !b.state.CompareAndSwap(stateNew, stateStarting) {
		return ErrClosed
	}
	if err := b.start(); err != nil {
		b.shutdown()
		return err
	}
	b.state.Store(stateRunning)
	b.logger.Info("broker ready: store recovered, listening, registered", "addr", b.addr, "cluster", b.cfg.BrokerClusterName,
		"brokerId", b.cfg.BrokerID, "namesrvAddr", b.cfg.NamesrvAddr, "storePathRootDir", b.cfg.Store.StorePathRootDir)
	return nil
}

func (b *Broker) start() error {
	b.bootTime = b.now()
	if err := os.MkdirAll(b.configDir(), 0o755); err != nil {
		return fmt.Errorf("broker: %w", err)
	}
	for _, l := range []func() error{b.Topics.load, b.Groups.load, b.Offsets.load, b.DelayOffsets.load, b.requestModes.load} {
		if err := l(); err != nil {
			return err
		}
	}
	if err := b.Topics.ensureSystemTopics(&b.cfg); err != nil {
		return err
	}
	if err := b.Groups.ensureSystemGroups(); err != nil {
		return err
	}

	if err := b.startAuth(); err != nil { // auth.go
		return err
	}
	if err := b.startTLS(); err != nil { // tls.go
		return err
	}

	// Bind first: the store needs the real port for STOREHOST. The port
	// listens only once the store is recovered (limits.go: readiness).
	configured := b.cfg.ListenPort
	rp, err := reservePort(b.cfg.BindAddress, configured)
	if err != nil {
		return err
	}
	b.reserved = rp
	b.server = b.newServer(configured)
	port := rp.port
	b.cfg.ListenPort = port
	b.logResourceLimits() // limits.go
	ip, err := netip.ParseAddr(b.cfg.BrokerIP1)
	if err != nil {
		return fmt.Errorf("broker: brokerIP1: %w", err)
	}
	b.storeHost = netip.AddrPortFrom(ip, uint16(port))
	b.addr = b.storeHost.String()
	b.uniq = message.NewUniqIDGenerator(ip, os.Getpid())

	if err := b.controllerPrepare(); err != nil { // controller_mode.go
		return err
	}
	b.cfg.Store.StoreHost = b.storeHost
	st, err := store.New(b.cfg.Store, b.logger)
	if err != nil {
		return fmt.Errorf("broker: store: %w", err)
	}
	if err := st.Start(); err != nil {
		return fmt.Errorf("broker: store: %w", err)
	}
	b.Store = st
	if err := b.controllerJoin(); err != nil { // controller_mode.go: may reopen the store
		return err
	}
	if b.cfg.LongPollingEnable {
		b.Store.AddArrivalNotifier(b.pullHold.onArrival)
	}

	b.nsClient = remoting.NewClient(remoting.ClientConfig{Logger: b.logger.With("component", "broker-nsclient"),
		Sign: b.signInner, TLS: b.tls.client})
	if err := b.nsClient.Start(); err != nil {
		return fmt.Errorf("broker: name-server client: %w", err)
	}
	if err := b.startHA(configured); err != nil { // ha_config.go
		return err
	}
	if err := b.startControllerMode(); err != nil { // controller_mode.go
		return err
	}

	b.sendQueue.start()
	b.goFunc("pull-hold", b.pullHold.run)
	b.pullHold.startWorkers()
	b.schedule = newScheduleService(b)
	b.goFunc("schedule", b.schedule.run)
	if err := b.startTimer(); err != nil { // timer.go
		return err
	}
	if err := b.startPop(); err != nil { // pop.go
		return err
	}
	b.startLite() // lite.go
	b.goFunc("transaction-check", b.transactionCheckLoop)
	b.goFunc("persist", b.persistLoop)
	b.goFunc("config-compact", b.compactLoop) // persist.go
	b.goFunc("client-scan", b.clientScanLoop)
	b.startStatsSampler() // admin_statsdata.go: VIEW_BROKER_STATS_DATA
	b.startTPSSampler()   // runtime_tps.go: GET_BROKER_RUNTIME_INFO
	b.state.Store(stateRunning)
	if err := b.server.Start(); err != nil { // the port opens: recovery is done
		return fmt.Errorf("broker: listen: %w", err)
	}
	if b.cfg.VIPChannelEnable {
		vipPort := 0 // an ephemeral main port gets an ephemeral VIP port
		if configured > 2 {
			vipPort = configured - 2
		}
		b.vipServer = b.newServer(vipPort)
		if err := b.vipServer.Start(); err != nil {
			b.logger.Warn("VIP channel disabled: cannot listen", "port", vipPort, "err", err)
			b.vipServer = nil
		}
	}
	b.startActingMaster() // acting_master.go: a returning master's pre-online
	if len(b.cfg.NamesrvAddr) > 0 {
		ctx, cancel := context.WithTimeout(b.baseCtx, b.cfg.RegisterBrokerTimeoutMills)
		b.registerAll(ctx)
		cancel()
		b.goFunc("register", b.registerLoop)
	}
	return nil
}

// newServer builds a remoting server with every processor registered.
func (b *Broker) newServer(port int) *remoting.Server {
	idle := time.Duration(b.cfg.ServerChannelMaxIdleTimeSeconds) * time.Second
	listen := func(network, addr string) (net.Listener, error) {
		ln, err := net.Listen(network, addr)
		if err != nil {
			return nil, err
		}
		return newGuardListener(ln, b.logger), nil // limits.go
	}
	if b.reserved != nil && b.server == nil { // the main port, bound in start
		rp := b.reserved
		listen = func(network, addr string) (net.Listener, error) {
			ln, err := rp.listen(network, addr)
			if err != nil {
				return nil, err
			}
			return newGuardListener(ln, b.logger), nil
		}
	}
	s := remoting.NewServer(remoting.ServerConfig{
		ListenAddr:  net.JoinHostPort(b.cfg.BindAddress, strconv.Itoa(port)),
		IdleTimeout: idle,
		Logger:      b.logger.With("component", "broker-remoting"),
		TLS:         b.tls.server, // tls.go: nil unless tlsMode is set
		TLSEnforce:  b.tls.enforce,
		Listen:      listen,
		// processSend reads the send header through DecodeSendHeaderOf
		// and hooks through Command.Ext: no ext map per send.
		ExtListCodes: []protocol.RequestCode{protocol.SendMessage, protocol.SendMessageV2, protocol.SendBatchMessage},
	})
	s.AddHook(gateHook{b})
	if b.auth.guard != nil {
		s.AddHook(authHook{b.auth.guard}) // auth.go
		s.AddConnListener(authConns{b.auth.guard})
	}
	if b.meters != nil {
		s.AddHook(rpcHook{b.meters}) // meters_rpc.go: rocketmq_rpc_latency
	}
	s.AddConnListener(connListener{b})
	b.registerProcessors(s)
	b.registerControllerProcessors(s) // controller_mode.go
	return s
}

// goFunc starts a background goroutine owned by b.routines; it refuses
// once the broker is closing.
func (b *Broker) goFunc(name string, f func()) {
	if b.state.Load() >= stateClosing {
		return
	}
	b.routines.Go(name, func(context.Context) { f() })
}

// Close shuts the broker down, startup in reverse: refuse new requests,
// unregister from the name servers, stop background services, close the
// servers (draining their pools), close the store (flush), persist the
// metadata. It is idempotent and returns after every goroutine exited.
func (b *Broker) Close() error {
	b.closeMu.Lock()
	defer b.closeMu.Unlock()
	if b.state.Load() == stateClosed {
		return nil
	}
	if b.state.Load() == stateNew {
		b.state.Store(stateClosed)
		b.routines.Stop()
		return nil
	}
	return b.shutdown()
}

func (b *Broker) shutdown() error {
	wasRunning := b.state.Swap(stateClosing) == stateRunning
	var errs []error
	if wasRunning && len(b.cfg.NamesrvAddr) > 0 && b.nsClient != nil && !b.ctl.handoff.Load() { // controller_mode.go
		b.unregisterAll()
	}
	b.routines.Close()
	b.closeControllerMode() // controller_mode.go
	for _, s := range []*remoting.Server{b.vipServer, b.server} {
		if s != nil {
			if err := s.Close(); err != nil {
				errs = append(errs, err)
			}
		}
	}
	if b.reserved != nil {
		b.reserved.close() // a port that never listened (start failed)
	}
	if b.nsClient != nil {
		b.nsClient.Close()
	}
	if err := b.closePop(); err != nil { // pop.go: its revive loop writes to the store
		errs = append(errs, err)
	}
	b.closeHA()                            // ha_config.go: before the store closes
	if err := b.closeTimer(); err != nil { // timer.go; its deliveries are puts
		errs = append(errs, err)
	}
	if b.Store != nil {
		if err := b.Store.Close(); err != nil {
			errs = append(errs, err)
		}
	}
	if b.bootTime != (time.Time{}) {
		if err := b.compactConfigs(true); err != nil { // persist.go
			errs = append(errs, err)
		}
		if err := b.Offsets.persist(true); err != nil {
			errs = append(errs, err)
		}
		if err := b.DelayOffsets.persist(); err != nil {
			errs = append(errs, err)
		}
	}
	b.state.Store(stateClosed)
	b.logger.Info("broker stopped")
	return errors.Join(errs...)
}

// persistLoop writes consumerOffset.json every flushConsumerOffsetInterval
// (first after 10 s, as RocketMQ) and delayOffset.json every
// flushDelayOffsetInterval.
func (b *Broker) persistLoop() {
	offsets := time.NewTimer(min(10*time.Second, b.cfg.FlushConsumerOffsetInterval))
	defer offsets.Stop()
	delayEvery := b.cfg.FlushDelayOffsetInterval
	if delayEvery <= 0 {
		delayEvery = 10 * time.Second
	}
	delay := time.NewTicker(delayEvery)
	defer delay.Stop()
	for {
		select {
		case <-b.quit:
			return
		case <-offsets.C:
			if err := b.Offsets.persist(false); err != nil {
				b.logger.Error("persist consumer offsets", "err", err)
			}
			offsets.Reset(b.cfg.FlushConsumerOffsetInterval)
		case <-delay.C:
			if err := b.DelayOffsets.persist(); err != nil {
				b.logger.Error("persist delay offsets", "err", err)
			}
		}
	}
}

// clientScanLoop drops client channels without a heartbeat for
// channelExpiredTimeout, every 10 s.
func (b *Broker) clientScanLoop() {
	run.Every(b.baseCtx, 10*time.Second, func(context.Context) {
		if n := b.Clients.ScanExpired(b.now(), b.cfg.ChannelExpiredTimeout); n > 0 {
			b.logger.Info("expired idle client channels", "count", n)
		}
	})
}

// gateHook answers SYSTEM_BUSY while the broker is not running (starting or
// shutting down), so no request reaches a processor without a store.
type gateHook struct{ b *Broker }

func (g gateHook) Before(_ *remoting.Conn, req *protocol.Command) error {
	if g.b.state.Load() != stateRunning {
		return protocol.Errorf(protocol.SystemBusy, "[REJECTREQUEST]system busy, start flow control for a while")
	}
	return nil
}

func (g gateHook) After(*remoting.Conn, *protocol.Command, *protocol.Command) {}

// connListener removes a closed connection's clients at once.
type connListener struct{ b *Broker }

func (l connListener) OnConnect(*remoting.Conn)              {}
func (l connListener) OnClose(c *remoting.Conn)              { l.b.Clients.ConnClosed(c.ID()) }
func (l connListener) OnIdle(c *remoting.Conn)               { l.b.Clients.ConnClosed(c.ID()) }
func (l connListener) OnException(c *remoting.Conn, _ error) { l.b.Clients.ConnClosed(c.ID()) }
