// Package metrics exports Apogee's counters to Prometheus under RocketMQ 5's
// metric names (rocketmq_messages_in_total, rocketmq_consumer_lag_messages,
// ...) plus Apogee's own apogee_* families.
//
// It owns no counters of its own: the broker, store, HA and timer count with
// atomics and expose snapshots (Broker.Stats, Broker.MeterSnapshot,
// Store.Stats, ...), and the collectors here read them at scrape time, so
// the hot paths never touch Prometheus. Every family is written on every
// scrape with # HELP and # TYPE, also before it has a series (dashboards
// and alert rules look families up by name), in the text exposition format
// 0.0.4.
//
// Server serves GET /metrics (and /debug/pprof/ when asked) on one
// listener; cmd/apogee starts one per process (broker, name server or
// standalone).
package metrics
