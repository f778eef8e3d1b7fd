package main

import (
	"fmt"
	"io"
	"log/slog"

	"github.com/apogeemq/apogee/internal/broker"
	"github.com/apogeemq/apogee/internal/metrics"
)

// startBrokerMetrics starts GET /metrics for a started broker (plus extra
// sources) and prints its address to out. A port that cannot be bound is
// logged, not fatal: the broker keeps serving messages without its metrics
// endpoint. The returned closer is never nil.
func startBrokerMetrics(b *broker.Broker, logger *slog.Logger, out io.Writer, extra ...metrics.Source) func() error {
	s, err := metrics.StartForBroker(b, logger, extra...)
	if err != nil {
		logger.Error("metrics endpoint not started", "err", err)
		return func() error { return nil }
	}
	if s == nil {
		return func() error { return nil }
	}
	fmt.Fprintf(out, "metrics listening on http://%s/metrics\n", s.Addr())
	return s.Close
}

// startMetrics starts a metrics endpoint on addr for srcs ("" = none).
func startMetrics(addr string, pprof bool, logger *slog.Logger, srcs ...metrics.Source) func() error {
	if addr == "" {
		return func() error { return nil }
	}
	s, err := metrics.NewServer(metrics.Config{Addr: addr, Pprof: pprof, GoCollector: true}, logger, srcs...)
	if err == nil {
		err = s.Start()
	}
	if err != nil {
		logger.Error("metrics endpoint not started", "err", err)
		return func() error { return nil }
	}
	return s.Close
}
