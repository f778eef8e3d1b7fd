package metrics

import (
	"log/slog"
	"net"
	"strconv"

	"github.com/apogeemq/apogee/internal/broker"
)

// BrokerConfig turns a broker's metrics keys into a server Config: the
// listen address is metricsPromExporterHost (brokerIP1 when empty) and
// metricsPromExporterPort. ok is false with metricsExporterType=DISABLE.
func BrokerConfig(cfg broker.Config) (c Config, ok bool) {
	if !cfg.MetricsEnabled() {
		return Config{}, false
	}
	host := cfg.MetricsPromExporterHost
	if host == "" {
		host = cfg.BrokerIP1
	}
	return Config{
		Addr:        net.JoinHostPort(host, strconv.Itoa(cfg.MetricsPromExporterPort)),
		Pprof:       cfg.MetricsPprofEnable,
		GoCollector: true,
	}, true
}

// StartForBroker starts the metrics server of a started broker (and of
// the extra sources, e.g. the name server of `apogee standalone`); nil,
// nil when the broker's metrics are disabled.
func StartForBroker(b *broker.Broker, logger *slog.Logger, extra ...Source) (*Server, error) {
	c, ok := BrokerConfig(b.Config())
	if !ok {
		return nil, nil
	}
	srcs := append([]Source{NewBrokerCollector(b)}, extra...)
	s, err := NewServer(c, logger, srcs...)
	if err != nil {
		return nil, err
	}
	if err := s.Start(); err != nil {
		return nil, err
	}
	return s, nil
}
