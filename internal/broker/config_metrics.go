package broker

import "fmt"

// MetricsConfig holds RocketMQ 5's metrics keys of broker.conf. The broker
// only counts (meters.go); cmd/apogee serves the counters over HTTP through
// internal/metrics, which the broker never imports. Config embeds it.
type MetricsConfig struct {
	// MetricsExporterType is PROM (Apogee's default: GET /metrics on
	// metricsPromExporterHost:metricsPromExporterPort) or DISABLE (no
	// endpoint and no per-topic counting). RocketMQ's OTLP_GRPC and LOG
	// exporters are not built and are refused at start.
	MetricsExporterType string `conf:"metricsExporterType"`
	// MetricsPromExporterHost is the listen address; empty means brokerIP1,
	// as RocketMQ does.
	MetricsPromExporterHost string `conf:"metricsPromExporterHost"`
	// MetricsPromExporterPort is the listen port (5557); 0 picks a free one.
	MetricsPromExporterPort int `conf:"metricsPromExporterPort"`
	// MetricsPprofEnable also serves net/http/pprof under /debug/pprof/ on
	// the metrics listener. An Apogee key (off).
	MetricsPprofEnable bool `conf:"metricsPprofEnable"`
}

// Exporter types of metricsExporterType.
const (
	MetricsExporterProm    = "PROM"
	MetricsExporterDisable = "DISABLE"
)

// DefaultMetricsConfig returns Apogee's defaults (PROM on port 5557).
func DefaultMetricsConfig() MetricsConfig {
	return MetricsConfig{MetricsExporterType: MetricsExporterProm, MetricsPromExporterPort: 5557}
}

// MetricsEnabled reports whether the exporter type asks for metrics.
func (c MetricsConfig) MetricsEnabled() bool { return c.MetricsExporterType != MetricsExporterDisable }

func (c MetricsConfig) validateMetrics() error {
	switch c.MetricsExporterType {
	case MetricsExporterProm, MetricsExporterDisable:
	default:
		return fmt.Errorf("broker: config metricsExporterType=%s: Apogee supports PROM and DISABLE", c.MetricsExporterType)
	}
	if c.MetricsPromExporterPort < 0 || c.MetricsPromExporterPort > 65535 {
		return fmt.Errorf("broker: config metricsPromExporterPort=%d: must be 0..65535", c.MetricsPromExporterPort)
	}
	return nil
}
