package proxy

import (
	"context"
	"sync"
	"time"

	"github.com/apogeemq/apogee/internal/protocol"
	pb "github.com/apogeemq/apogee/internal/rmqpb"
)

// Auto-renew of messages received with auto_renew (push consumers), done
// on the server: while the receiving client keeps its Telemetry stream
// open, a message about to become visible again gets another
// autoRenewInvisible; when the client goes away its messages are released
// (visible again after a second).
const (
	renewInterval  = 5 * time.Second  // how often the renew loop looks
	renewAhead     = 10 * time.Second // renew handles visible again within this
	renewMaxHold   = 3 * time.Hour    // stop renewing a message held this long
	renewMaxErrors = 3                // consecutive failures before giving up
)

// renewal is one auto-renewed message. The client keeps the handle it was
// given (the map key); current is the latest handle the renewals produced,
// which Ack and ChangeInvisibleDuration swap in.
type renewal struct {
	client, group, topic string
	current              protocol.ReceiptHandle
	since                time.Time
	failures             int
}

// renewer tracks auto-renewed messages by the handle their client holds.
type renewer struct {
	svc *service
	mu  sync.Mutex
	m   map[string]*renewal // guarded by mu
}

func newRenewer(svc *service) *renewer { return &renewer{svc: svc, m: map[string]*renewal{}} }

func (r *renewer) track(client, group, topic, handle string) {
	h, err := protocol.ParseReceiptHandle(handle)
	if err != nil {
		return
	}
	r.mu.Lock()
	r.m[handle] = &renewal{client: client, group: group, topic: topic, current: h, since: time.Now()}
	r.mu.Unlock()
}

func (r *renewer) untrack(handle string) {
	r.mu.Lock()
	delete(r.m, handle)
	r.mu.Unlock()
}

// latest returns the newest handle of a tracked message, handle itself
// otherwise.
func (r *renewer) latest(handle string) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	if e := r.m[handle]; e != nil {
		return e.current.String()
	}
	return handle
}

// count returns the number of tracked messages.
func (r *renewer) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.m)
}

// run is one pass of the renew loop: renew what is due, release what
// belongs to clients that are gone, give up on what was held too long.
func (r *renewer) run(ctx context.Context) {
	type job struct {
		key string
		e   renewal
	}
	now := time.Now()
	var due []job
	r.mu.Lock()
	for k, e := range r.m {
		if now.Add(renewAhead).UnixMilli() >= e.current.NextVisibleTime() || !r.svc.srv.clients.live(e.client) || now.Sub(e.since) > renewMaxHold {
			due = append(due, job{k, *e})
		}
	}
	r.mu.Unlock()
	for _, j := range due {
		cctx, cancel := context.WithTimeout(ctx, brokerCallTimeout)
		switch {
		case !r.svc.srv.clients.live(j.e.client), now.Sub(j.e.since) > renewMaxHold:
			_, _ = r.svc.changeInvisible(cctx, j.e.group, j.e.topic, j.e.current, time.Second)
			r.untrack(j.key)
		default:
			n, st := r.svc.changeInvisible(cctx, j.e.group, j.e.topic, j.e.current, autoRenewInvisible)
			r.mu.Lock()
			if e := r.m[j.key]; e != nil {
				if st.Code == pb.Code_OK {
					e.current, e.failures = n, 0
				} else if st.Code == pb.Code_INVALID_RECEIPT_HANDLE {
					delete(r.m, j.key) // acked meanwhile, or gone
				} else if e.failures++; e.failures >= renewMaxErrors {
					delete(r.m, j.key)
				}
			}
			r.mu.Unlock()
		}
		cancel()
	}
}
