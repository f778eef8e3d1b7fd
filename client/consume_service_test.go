package client

import (
	"testing"

	"github.com/apogeemq/apogee/internal/protocol"
	"github.com/apogeemq/apogee/internal/testutil"
)

// TestConsumeServiceChosenOnce: the consume service follows the options
// (concurrent by default, orderly with WithConsumeOrderly, the Poll buffer
// for LitePullConsumer) and carries each mode's differences: heartbeat
// consume type, retry-topic subscription, reconsume limit and pull flags.
func TestConsumeServiceChosenOnce(t *testing.T) {
	base := []ConsumerOpt{WithNameServers("127.0.0.1:1"), WithLogger(testutil.Logger(t))}
	push := func(opts ...ConsumerOpt) *PushConsumer {
		c, err := NewPushConsumer("g", append(base, opts...)...)
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	lite := func() *PushConsumer {
		l, err := NewLitePullConsumer("g", base...)
		if err != nil {
			t.Fatal(err)
		}
		return l.c
	}
	tests := []struct {
		name         string
		c            *PushConsumer
		consumeType  string
		orderly      bool
		retryTopic   bool
		maxReconsume int32
		pullFlags    int32 // flags preparePull sets on a broadcasting pull
		liteRequest  bool
	}{
		{"concurrent", push(), protocol.ConsumePassively, false, true, 16, 0, false},
		{"orderly", push(WithConsumeOrderly(true)), protocol.ConsumePassively, true, true, unboundedReconsume, 0, false},
		{"lite", lite(), protocol.ConsumeActively, false, false, 16,
			protocol.PullFlagLitePull | protocol.PullFlagSubscription, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := tc.c
			c.cfg.model = Broadcasting // no offset store needed for preparePull
			c.svc = c.newService(c)
			if got := c.consumeType(); got != tc.consumeType {
				t.Errorf("consumeType = %q, want %q", got, tc.consumeType)
			}
			if got := c.svc.orderly(); got != tc.orderly {
				t.Errorf("orderly = %v, want %v", got, tc.orderly)
			}
			if got := c.svc.consumesRetryTopic(); got != tc.retryTopic {
				t.Errorf("consumesRetryTopic = %v, want %v", got, tc.retryTopic)
			}
			if got := c.maxReconsume(); got != tc.maxReconsume {
				t.Errorf("maxReconsume = %d, want %d", got, tc.maxReconsume)
			}
			req := &pullRequest{}
			c.svc.preparePull(req)
			if req.sysFlag != tc.pullFlags || req.lite != tc.liteRequest {
				t.Errorf("preparePull: sysFlag %b lite %v, want %b %v", req.sysFlag, req.lite, tc.pullFlags, tc.liteRequest)
			}
		})
	}
}
