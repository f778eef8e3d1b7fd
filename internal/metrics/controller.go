package metrics

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/apogeemq/apogee/internal/controller"
)

// ControllerCollector exports a controller's state (node_type="controller",
// node_id = its remoting address). RocketMQ's controller exports only its
// remoting families; these are Apogee's.
type ControllerCollector struct {
	c        *controller.Controller
	isLeader metric
}

// NewControllerCollector builds the collector of c (after c.Start).
func NewControllerCollector(c *controller.Controller) *ControllerCollector {
	cl := prometheus.Labels{labelNodeType: "controller", labelNodeID: c.Addr()}
	return &ControllerCollector{c: c,
		isLeader: newMetric("apogee_controller_is_leader", "1 while this controller is the raft leader serving requests", gauge, cl)}
}

func (c *ControllerCollector) families() []family { return []family{c.isLeader.family} }

// Describe implements prometheus.Collector.
func (c *ControllerCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.isLeader.desc }

// Collect implements prometheus.Collector.
func (c *ControllerCollector) Collect(ch chan<- prometheus.Metric) {
	ch <- prometheus.MustNewConstMetric(c.isLeader.desc, prometheus.GaugeValue, b2f(c.c.IsLeader()))
}
