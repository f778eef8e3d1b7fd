package main

import (
	"bytes"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/apogeemq/apogee/internal/broker"
)

// loadBrokerFlags parses args as `apogee broker` (or, with standalone, as
// `apogee standalone`) and loads the config, returning what was logged.
func loadBrokerFlags(t *testing.T, standalone bool, args ...string) (broker.Config, string, error) {
	t.Helper()
	f := &brokerFlags{}
	cmd := &cobra.Command{}
	if standalone {
		f.defaultBrokerName = "broker-a"
		f.registerCommon(cmd, f.defaultBrokerName)
	} else {
		f.register(cmd)
	}
	if err := cmd.ParseFlags(args); err != nil {
		t.Fatal(err)
	}
	var logs bytes.Buffer
	cfg, err := f.load(cmd, slog.New(slog.NewTextHandler(&logs, nil)))
	return cfg, logs.String(), err
}

// TestBrokerConfigPrecedence: defaults -> broker.conf -> flags, unknown
// file keys warned by name, bad values and unknown --set keys refused.
func TestBrokerConfigPrecedence(t *testing.T) {
	t.Setenv("NAMESRV_ADDR", "")
	conf := filepath.Join(t.TempDir(), "broker.conf")
	if err := os.WriteFile(conf, []byte("brokerName=from-file\nlistenPort=20911\nflushDiskType=SYNC_FLUSH\nnoSuchKey=1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	bad := filepath.Join(t.TempDir(), "bad.conf")
	if err := os.WriteFile(bad, []byte("listenPort=http\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name       string
		standalone bool
		args       []string
		brokerName string
		port       int
		flush      string
		wantLog    string
		wantErr    string
	}{
		{name: "file", args: []string{"-c", conf}, brokerName: "from-file", port: 20911, flush: "SYNC_FLUSH", wantLog: "noSuchKey"},
		{name: "flags override the file", args: []string{"-c", conf, "--broker-name", "flag", "--listen-port", "0",
			"--set", "flushDiskType=ASYNC_FLUSH"}, brokerName: "flag", port: 0, flush: "ASYNC_FLUSH"},
		{name: "standalone default name", standalone: true, brokerName: "broker-a", port: 10911, flush: "ASYNC_FLUSH"},
		{name: "standalone file beats default name", standalone: true, args: []string{"-c", conf}, brokerName: "from-file",
			port: 20911, flush: "SYNC_FLUSH"},
		{name: "bad file value", args: []string{"-c", bad}, wantErr: "http"},
		{name: "unknown --set key", args: []string{"--set", "nope=1"}, wantErr: "unknown broker.conf key"},
		{name: "--set without =", args: []string{"--set", "nope"}, wantErr: "want key=value"},
		{name: "bad --set value", args: []string{"--set", "flushDiskType=SOMETIMES"}, wantErr: "flushDiskType"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg, logs, err := loadBrokerFlags(t, tc.standalone, tc.args...)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want one mentioning %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if cfg.BrokerName != tc.brokerName || cfg.ListenPort != tc.port || cfg.Store.FlushDiskType != tc.flush {
				t.Errorf("brokerName %q listenPort %d flushDiskType %q, want %q %d %q",
					cfg.BrokerName, cfg.ListenPort, cfg.Store.FlushDiskType, tc.brokerName, tc.port, tc.flush)
			}
			if tc.wantLog != "" && !strings.Contains(logs, tc.wantLog) {
				t.Errorf("log does not name %q:\n%s", tc.wantLog, logs)
			}
		})
	}
}

// TestBrokerIPFile: --broker-ip-file sets brokerIP1 last (over --set), as
// the Helm chart's per-pod external address does; a missing file fails.
func TestBrokerIPFile(t *testing.T) {
	t.Setenv("NAMESRV_ADDR", "")
	ipFile := filepath.Join(t.TempDir(), "apogee-broker-a-0")
	if err := os.WriteFile(ipFile, []byte("203.0.113.7\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, _, err := loadBrokerFlags(t, false, "--set", "brokerIP1=10.0.0.1", "--broker-ip-file", ipFile)
	if err != nil || cfg.BrokerIP1 != "203.0.113.7" {
		t.Fatalf("brokerIP1 %q, err %v; want 203.0.113.7", cfg.BrokerIP1, err)
	}
	if _, _, err := loadBrokerFlags(t, false, "--broker-ip-file", ipFile+".missing"); err == nil {
		t.Fatal("a missing --broker-ip-file was accepted")
	}
}
