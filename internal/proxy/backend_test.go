package proxy

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/apogeemq/apogee/internal/protocol"
)

// TestForgetBroker: a failed or demoted broker drops every cached route
// naming it (cluster mode), and nothing in local mode; which outcomes of a
// broker call count as "gone".
func TestForgetBroker(t *testing.T) {
	mk := func(local string) *backend {
		b := newBackend(nil, "", local, []string{"ns"})
		now := time.Now()
		b.routes["A"] = &topicRoute{topic: "A", fetched: now, brokers: []brokerQueues{{name: "b1", addr: "10.0.0.1:10911"}}}
		b.routes["B"] = &topicRoute{topic: "B", fetched: now, brokers: []brokerQueues{{name: "b1", addr: "10.0.0.1:10911"}, {name: "b2", addr: "10.0.0.2:10911"}}}
		b.routes["C"] = &topicRoute{topic: "C", fetched: now, brokers: []brokerQueues{{name: "b2", addr: "10.0.0.2:10911"}}}
		return b
	}
	b := mk("")
	b.forgetBroker("10.0.0.1:10911")
	if _, ok := b.routes["A"]; ok {
		t.Error("route A kept")
	}
	if _, ok := b.routes["B"]; ok {
		t.Error("route B kept")
	}
	if _, ok := b.routes["C"]; !ok {
		t.Error("route C dropped")
	}
	if _, ok := b.down["10.0.0.1:10911"]; !ok {
		t.Error("broker not marked down")
	}
	l := mk("127.0.0.1:10911")
	l.forgetBroker("10.0.0.1:10911")
	if len(l.routes) != 3 {
		t.Error("local mode forgot routes")
	}

	for _, tc := range []struct {
		name string
		resp *protocol.Command
		err  error
		gone bool
	}{
		{"dial error", nil, errors.New("connection refused"), true},
		{"client gone", nil, context.Canceled, false},
		{"deadline", nil, context.DeadlineExceeded, false},
		{"slave", &protocol.Command{Code: int32(protocol.SlaveNotAvailable)}, nil, true},
		{"pre-online", &protocol.Command{Code: int32(protocol.ServiceNotAvailable)}, nil, true},
		{"success", &protocol.Command{Code: int32(protocol.Success)}, nil, false},
		{"polling timeout", &protocol.Command{Code: int32(protocol.PollingTimeout)}, nil, false},
	} {
		b := mk("")
		b.brokerGone("10.0.0.2:10911", tc.resp, tc.err)
		if _, kept := b.routes["C"]; kept == tc.gone {
			t.Errorf("%s: route kept %v, want gone %v", tc.name, kept, tc.gone)
		}
	}
}
