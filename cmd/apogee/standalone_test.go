package main

import (
	"testing"

	"github.com/apogeemq/apogee/internal/broker"
)

// TestConsoleListenHost: standalone's console follows the broker's
// bindAddress, so the image (bindAddress=0.0.0.0) publishes it; the flag
// wins; brokerIP1 is the fallback.
func TestConsoleListenHost(t *testing.T) {
	tests := []struct {
		name, flag, bind, ip1, want string
	}{
		{"image: bind all", "", "0.0.0.0", "127.0.0.1", "0.0.0.0"},
		{"default loopback", "", "127.0.0.1", "127.0.0.1", "127.0.0.1"},
		{"flag wins", "127.0.0.5", "0.0.0.0", "127.0.0.1", "127.0.0.5"},
		{"no bind address", "", "", "127.0.0.9", "127.0.0.9"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg := broker.DefaultConfig()
			cfg.BindAddress, cfg.BrokerIP1 = tc.bind, tc.ip1
			if got := consoleListenHost(tc.flag, &cfg); got != tc.want {
				t.Fatalf("consoleListenHost = %q, want %q", got, tc.want)
			}
		})
	}
}
