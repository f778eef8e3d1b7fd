package testutil

import (
	"errors"
	"os/exec"
	"strings"
	"testing"
	"time"
)

func TestAddrsScan(t *testing.T) {
	tests := []struct {
		line string
		ok   bool
		want Addrs
	}{
		{"name server listening on 127.0.0.1:1", true, Addrs{Namesrv: "127.0.0.1:1"}},
		{"namesrv listening on 127.0.0.1:2", true, Addrs{Namesrv: "127.0.0.1:2"}},
		{"broker broker-a listening on 127.0.0.1:3", true, Addrs{Broker: "127.0.0.1:3"}},
		{"grpc endpoint listening on 127.0.0.1:4", true, Addrs{GRPC: "127.0.0.1:4"}},
		{"metrics listening on http://127.0.0.1:5/metrics", true, Addrs{Metrics: "http://127.0.0.1:5/metrics"}},
		{"console listening on http://127.0.0.1:6", true, Addrs{Console: "http://127.0.0.1:6"}},
		{"controller c listening on 127.0.0.1:7 (raft x)", false, Addrs{}},
		{"broker ready", false, Addrs{}},
	}
	for _, tt := range tests {
		var a Addrs
		if ok := a.Scan(tt.line); ok != tt.ok || a != tt.want {
			t.Errorf("Scan(%q) = %v, %+v; want %v, %+v", tt.line, ok, a, tt.ok, tt.want)
		}
	}
}

func TestStartChildStop(t *testing.T) {
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Skip("no sh")
	}
	var a Addrs
	c := StartChild(t, ChildOptions{Ready: func(line string) bool { return a.Scan(line) }}, sh, "-c",
		`echo starting; echo oops >&2; echo "broker b listening on 127.0.0.1:9"; exec sleep 60`)
	if a.Broker != "127.0.0.1:9" {
		t.Fatalf("broker address %q", a.Broker)
	}
	if got := c.Logs(); !strings.Contains(got, "oops") {
		t.Fatalf("stderr not in the log: %q", got)
	}
	// sleep dies of the SIGTERM: an exit error, not a timeout.
	err = c.Stop(10 * time.Second)
	if err == nil || errors.Is(err, ErrStopTimeout) {
		t.Fatalf("Stop = %v, want the signal's exit error", err)
	}
	select {
	case <-c.Done():
	default:
		t.Fatal("Done not closed after Stop")
	}
	if err2 := c.Stop(time.Second); err2 == nil || err2.Error() != err.Error() {
		t.Fatalf("second Stop = %v, want %v", err2, err)
	}
}

func TestStopTimeoutKills(t *testing.T) {
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Skip("no sh")
	}
	c := StartChild(t, ChildOptions{Ready: func(line string) bool { return line == "ready" }}, sh, "-c",
		`trap "" TERM; echo ready; while :; do sleep 1; done`)
	if err := c.Stop(300 * time.Millisecond); !errors.Is(err, ErrStopTimeout) {
		t.Fatalf("Stop = %v, want ErrStopTimeout", err)
	}
	<-c.Done()
}
