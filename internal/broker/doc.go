// Package broker is Apogee's RocketMQ broker: request processors over a
// store, metadata managers, long polling and name-server registration.
//
// It owns the broker behaviour of docs/broker.md §1 and the broker
// side of docs/protocol.md §3.3–§3.7 and §7. It never parses files other than its
// own JSON metadata (broker.conf comes in as a Config), never touches the
// commit log except through the store's API, and never imports the name
// server or the client SDK.
//
// Wiring
//
//	clients ──TCP──> remoting.Server (listenPort) ─┐   remoting.Server (listenPort-2, VIP)
//	                                               │     │ same processors
//	          gateHook (SYSTEM_BUSY unless running)│<────┘
//	                                               v
//	registerProcessors: one line per request family, each on its pool
//	 ├─ send codes 10/310/320/324/325 and 36, enqueued inline on the
//	 │     connection's read loop (timestamp + non-blocking offer) ─>
//	 │     sendQueue (own executor: [TIMEOUT_CLEAN_QUEUE],
//	 │     [PCBUSY_CLEAN_QUEUE], [OVERLOAD] when full) ─>
//	 │     processSend / processSendBack ─> interceptTimer (timer.go:
//	 │     TIMER_DELIVER_MS / TIMER_DELAY_SEC / TIMER_DELAY_MS park the message
//	 │     in rmq_sys_wheel_timer) ─> Store.PutMessage(s) ... store
//	 │     completion callback ─> conn.WriteResponse   (send.go, send_back.go)
//	 ├─ 11/361 pull ─> processPull ─> Store.GetMessage with a tagFilter
//	 │     (pull.go) or, for SQL92 subscriptions with enablePropertyFilter,
//	 │     an sqlFilter (filter_sql.go: internal/filter expression matched
//	 │     against each candidate's properties); PULL_NOT_FOUND with
//	 │     the suspend flag ─> pullHoldService (pull_hold.go), woken by the
//	 │     store's arrival listener, the 5 s scan and hold deadlines
//	 ├─ 200050-200055, 200151 POP (pop.go, pop_ack.go, pop_hold.go) over the
//	 │     durable state of internal/pop; pop-revive (pop_revive.go) writes
//	 │     expired messages to the retry topic or the DLQ; 370 recall (recall.go)
//	 ├─ 34/35/46 clients ─> ClientManager (heartbeat.go, client_manager.go)
//	 ├─ 38/14/15/41/42 consumer management (heartbeat.go, consumer_offset.go,
//	 │     lock.go)
//	 ├─ 324/325 replies pushed to the requester with 326 (reply.go)
//	 ├─ 37 END_TRANSACTION (transaction.go; a commit goes through
//	 │     interceptTimer like a send); 12/33 queries (query.go)
//	 └─ admin pool: 29–32 queue offsets, 17/18/21/215/351 topics,
//	       200/201/207/225/352 groups, 43/45, 202/208/203/204/300/343/305/28/26
//	       stats and config, 222 reset offset, 307/309 relays, 25 config
//	       update (persisted to the -c file), 60/61 timer checkpoint and
//	       metrics, 223 consumer status (asks clients with 221), 308
//	       correction offset, 315 stats data (sampled every 10 s from
//	       counters the hot path keeps anyway), 321 consume-queue dump
//	       (admin_*.go)
//
//	Background services: scheduleService (schedule.go, delay levels back to
//	their topics), the timer store (timer.go: internal/timer opened on a
//	master with timerWheelEnable, <root>/timerlog + config/timercheck; it
//	reads rmq_sys_wheel_timer and re-puts due messages to their real topic;
//	its goroutines are its own, closed before the store), transactionCheckLoop
//	(transaction.go), registerLoop (register.go), persistLoop and
//	clientScanLoop (broker.go), statsSampleLoop (admin_statsdata.go).
//
//	Replication (ha_config.go, slave_sync.go; the protocol is internal/ha):
//	a master runs the HA server on haListenPort (default listenPort+1) and,
//	as SYNC_MASTER with inSyncReplicas > 1, installs its GroupTransfer as
//	the store's replication stage, so sends complete only once a slave has
//	acknowledged them (FLUSH_SLAVE_TIMEOUT after slaveTimeout). A SLAVE runs
//	the HA client towards haMasterAddress or the master the name server
//	names at registration, rejects sends, and copies topics, offsets, delay
//	offsets and subscription groups from its master every slaveSyncPeriod.
//
//	Managers (fields of Broker, reachable by every processor):
//	 Topics       TopicConfigManager        <root>/config/topics.json
//	 Groups       SubscriptionGroupManager  <root>/config/subscriptionGroup.json
//	 Offsets      ConsumerOffsetManager     <root>/config/consumerOffset.json (every 5 s + at close)
//	 DelayOffsets DelayOffsetTable          <root>/config/delayOffset.json (every 10 s + at close)
//	 Clients      ClientManager             in memory; NOTIFY_CONSUMER_IDS_CHANGED on change
//	 Locks        RebalanceLockManager      in memory; orderly queue locks (60 s)
//	 Store        *store.Store              created in Start (STOREHOST = brokerIP1:port)
//
// Metadata files are RocketMQ's JSON shapes; they are written atomically
// (temp file, fsync, rename, the previous version kept as <name>.bak) and
// read back with the fastjson dialect (bare numeric keys) accepted, falling
// back to the .bak file when the main one is missing or unreadable.
//
// Extending: a new request family adds a file with its processors
// (func (b *Broker) processXxx(ctx, conn, req) (*protocol.Command, error))
// and one line in registerProcessors; a new background service adds a run
// method started with b.goFunc in start() that returns on <-b.quit (a
// periodic one is a run.Every over b.baseCtx).
//
// Lifecycle: New validates and builds managers (opens nothing). Start loads
// metadata, creates system topics/groups, listens, creates and starts the
// store, starts the send workers, the hold service, the persist and client
// scan loops, registers with every name server and starts the registration
// loop. Close runs in reverse: requests are refused (SYSTEM_BUSY),
// UNREGISTER_BROKER is sent, background goroutines stop, servers close
// (draining pools), the store closes (flush), offsets are persisted.
//
// Goroutines (all started by goFunc into the run.Group b.routines, which
// refuses once closing and which Close stops and waits for):
// send workers (sendMessageThreadPoolNums), pull-hold, schedule,
// transaction-check, persist, client-scan, register, and short-lived
// conn-closed clean-ups.
//
// Locks: each manager has one RWMutex over its table plus a persist mutex
// that only serialises file writes; no manager lock is held while calling
// another manager, the store, or a connection.
package broker
