package client

import "testing"

// TestZeroOptIsNoOp: the zero Opt (for example an unset field of a
// caller's options struct) is accepted and changes nothing, for producers
// and every consumer constructor alike.
func TestZeroOptIsNoOp(t *testing.T) {
	ns := WithNameServers("127.0.0.1:9876")
	if _, err := NewProducer("pg", ns, Opt{}); err != nil {
		t.Errorf("NewProducer with the zero Opt: %v", err)
	}
	if _, err := NewPushConsumer("cg", ns, Opt{}); err != nil {
		t.Errorf("NewPushConsumer with the zero Opt: %v", err)
	}
	if _, err := NewPullConsumer("cg", ns, Opt{}); err != nil {
		t.Errorf("NewPullConsumer with the zero Opt: %v", err)
	}
	if _, err := NewLitePullConsumer("cg", ns, Opt{}); err != nil {
		t.Errorf("NewLitePullConsumer with the zero Opt: %v", err)
	}
	var cfg consumerConfig
	Opt{}.applyConsumer(&cfg)
	ns.applyConsumer(&cfg)
	if len(cfg.nameServers) != 1 {
		t.Errorf("name servers after a zero Opt and WithNameServers: %v", cfg.nameServers)
	}
}
