package proxy

import (
	"maps"
	"slices"
	"sync"
	"time"

	"google.golang.org/protobuf/proto"

	pb "github.com/apogeemq/apogee/internal/rmqpb"
)

// clientExpiry is how long a client without an open Telemetry stream stays
// registered after its last RPC: RocketMQ drops channels silent for about
// two minutes. The Go client never sends NotifyClientTermination, so this
// and the stream close are what end a client.
const clientExpiry = 120 * time.Second

// client is what the proxy knows about one x-mq-client-id.
type client struct {
	id       string
	settings *pb.Settings // merged settings last sent back; nil before the first
	lastSeen time.Time
	streams  map[*telemetryStream]struct{} // open Telemetry streams
}

// clientType returns the type from the client's settings.
func (c *client) clientType() pb.ClientType {
	if c.settings == nil {
		return pb.ClientType_CLIENT_TYPE_UNSPECIFIED
	}
	return c.settings.GetClientType()
}

// publishes reports whether the client's publishing settings list topic.
func (c *client) publishes(topic string) bool {
	for _, t := range c.settings.GetPublishing().GetTopics() {
		if t.GetName() == topic {
			return true
		}
	}
	return false
}

// registry holds the clients by id. Every method is safe for concurrent use.
type registry struct {
	mu      sync.Mutex
	clients map[string]*client // guarded by mu
	now     func() time.Time
}

func newRegistry(now func() time.Time) *registry {
	return &registry{clients: map[string]*client{}, now: now}
}

// getLocked returns the client, creating it. REQUIRES: r.mu held.
func (r *registry) getLocked(id string) *client {
	c := r.clients[id]
	if c == nil {
		c = &client{id: id, streams: map[*telemetryStream]struct{}{}}
		r.clients[id] = c
	}
	c.lastSeen = r.now()
	return c
}

// touch records activity of id (any RPC).
func (r *registry) touch(id string) {
	r.mu.Lock()
	r.getLocked(id)
	r.mu.Unlock()
}

// settings returns a copy of the client's merged settings, nil if unknown.
func (r *registry) settings(id string) *pb.Settings {
	r.mu.Lock()
	defer r.mu.Unlock()
	c := r.getLocked(id)
	if c.settings == nil {
		return nil
	}
	return proto.Clone(c.settings).(*pb.Settings)
}

// setSettings stores the merged settings of id.
func (r *registry) setSettings(id string, s *pb.Settings) {
	r.mu.Lock()
	r.getLocked(id).settings = s
	r.mu.Unlock()
}

// attach registers an open Telemetry stream of id.
func (r *registry) attach(id string, ts *telemetryStream) {
	r.mu.Lock()
	r.getLocked(id).streams[ts] = struct{}{}
	r.mu.Unlock()
}

// detach unregisters a stream. A client whose last stream closed expires
// unless it shows activity again; its settings stay until then.
func (r *registry) detach(id string, ts *telemetryStream) {
	r.mu.Lock()
	if c := r.clients[id]; c != nil {
		delete(c.streams, ts)
		c.lastSeen = r.now()
	}
	r.mu.Unlock()
}

// remove forgets a client (NotifyClientTermination) and reports whether it
// was known with settings.
func (r *registry) remove(id string) (*pb.Settings, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	c := r.clients[id]
	delete(r.clients, id)
	if c == nil || c.settings == nil {
		return nil, false
	}
	return c.settings, true
}

// expire removes clients without an open stream that were silent for
// clientExpiry and returns their ids.
func (r *registry) expire() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	now := r.now()
	var gone []string
	for id, c := range r.clients {
		if len(c.streams) == 0 && now.Sub(c.lastSeen) >= clientExpiry {
			delete(r.clients, id)
			gone = append(gone, id)
		}
	}
	return gone
}

// producerStreams returns one open Telemetry stream of each live client
// whose publishing settings list topic.
func (r *registry) producerStreams(topic string) []*telemetryStream {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []*telemetryStream
	for _, c := range r.clients {
		if c.clientType() != pb.ClientType_PRODUCER || !c.publishes(topic) {
			continue
		}
		for ts := range c.streams {
			out = append(out, ts)
			break
		}
	}
	return out
}

// live reports whether id has an open Telemetry stream.
func (r *registry) live(id string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	c := r.clients[id]
	return c != nil && len(c.streams) > 0
}

// count returns the number of known clients.
func (r *registry) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.clients)
}

// publishedTopics returns the topics live producers publish to, sorted.
func (r *registry) publishedTopics() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	set := map[string]bool{}
	for _, c := range r.clients {
		if c.clientType() != pb.ClientType_PRODUCER || len(c.streams) == 0 {
			continue
		}
		for _, t := range c.settings.GetPublishing().GetTopics() {
			set[t.GetName()] = true
		}
	}
	return slices.Sorted(maps.Keys(set))
}
