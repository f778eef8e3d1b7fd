package metrics

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/apogeemq/apogee/internal/namesrv"
)

// NamesrvCollector reads a name server's route tables at scrape time.
// RocketMQ's name server exports only its remoting families; these are
// Apogee's (node_type="nameserver", node_id = the listen address).
type NamesrvCollector struct {
	ns                                      *namesrv.Server
	topics, brokerGroups, clusters, brokers metric
}

// NewNamesrvCollector builds the collector of ns (after ns.Start).
func NewNamesrvCollector(ns *namesrv.Server) *NamesrvCollector {
	cl := prometheus.Labels{labelNodeType: "nameserver", labelNodeID: ns.Addr().String()}
	return &NamesrvCollector{
		ns:           ns,
		topics:       newMetric("apogee_namesrv_topics", "Topics in the name server's route table", gauge, cl),
		brokerGroups: newMetric("apogee_namesrv_broker_groups", "Broker names (master/slave groups) registered", gauge, cl),
		clusters:     newMetric("apogee_namesrv_clusters", "Clusters registered", gauge, cl),
		brokers:      newMetric("apogee_namesrv_live_brokers", "Brokers with a live registration", gauge, cl),
	}
}

func (c *NamesrvCollector) metrics() []*metric {
	return []*metric{&c.topics, &c.brokerGroups, &c.clusters, &c.brokers}
}

func (c *NamesrvCollector) families() []family {
	var out []family
	for _, m := range c.metrics() {
		out = append(out, m.family)
	}
	return out
}

// Describe implements prometheus.Collector.
func (c *NamesrvCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, m := range c.metrics() {
		ch <- m.desc
	}
}

// Collect implements prometheus.Collector.
func (c *NamesrvCollector) Collect(ch chan<- prometheus.Metric) {
	st := c.ns.Stats()
	for _, x := range []struct {
		m metric
		v int
	}{{c.topics, st.Topics}, {c.brokerGroups, st.BrokerGroups}, {c.clusters, st.Clusters}, {c.brokers, st.LiveBrokers}} {
		ch <- prometheus.MustNewConstMetric(x.m.desc, prometheus.GaugeValue, float64(x.v))
	}
}
