package main

import (
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"

	"github.com/apogeemq/apogee/internal/namesrv"
)

func loadNamesrvFlags(t *testing.T, args ...string) (namesrv.Config, error) {
	t.Helper()
	f := &namesrvFlags{}
	cmd := &cobra.Command{}
	f.register(cmd)
	if err := cmd.ParseFlags(args); err != nil {
		t.Fatal(err)
	}
	return f.load(cmd, slog.New(slog.DiscardHandler))
}

func TestNamesrvConfigPrecedence(t *testing.T) {
	conf := filepath.Join(t.TempDir(), "namesrv.conf")
	if err := os.WriteFile(conf, []byte("listenPort=9999\nbindAddress=10.0.0.1\nscanNotActiveBrokerInterval=250\n"+
		"orderMessageEnable=true\nkvConfigPath=/from/file.json\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name     string
		args     []string
		listen   string
		kvPath   string
		scan     time.Duration
		orderMsg bool
		wantErr  string
	}{
		{"defaults", nil, ":9876", "", 5 * time.Second, false, ""},
		{"file", []string{"-c", conf}, "10.0.0.1:9999", "/from/file.json", 250 * time.Millisecond, true, ""},
		{"flags override the file", []string{"-c", conf, "--listen", "127.0.0.1:0", "--kv-config-path", "/flag.json",
			"--set", "scanNotActiveBrokerInterval=1000"}, "127.0.0.1:0", "/flag.json", time.Second, true, ""},
		{"bad --listen", []string{"--listen", "nope"}, "", "", 0, false, "--listen"},
		{"unknown --set key", []string{"--set", "nope=1"}, "", "", 0, false, "unknown namesrv.conf key"},
		{"bad --set value", []string{"--set", "orderMessageEnable=maybe"}, "", "", 0, false, "orderMessageEnable"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := loadNamesrvFlags(t, tc.args...)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want one mentioning %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if cfg.ListenAddr() != tc.listen || cfg.ScanNotActiveBrokerInterval != tc.scan || cfg.OrderMessageEnable != tc.orderMsg {
				t.Errorf("got listen %s scan %v order %v", cfg.ListenAddr(), cfg.ScanNotActiveBrokerInterval, cfg.OrderMessageEnable)
			}
			if tc.kvPath != "" && cfg.KVConfigPath != tc.kvPath {
				t.Errorf("kvConfigPath %s, want %s", cfg.KVConfigPath, tc.kvPath)
			}
		})
	}
}

func TestNamesrvConfigFileBadValue(t *testing.T) {
	conf := filepath.Join(t.TempDir(), "namesrv.conf")
	for _, tc := range []struct{ content, want string }{
		{"scanNotActiveBrokerInterval=soon\n", "soon"},
		{"scanNotActiveBrokerInterval=0\n", "scanNotActiveBrokerInterval"},
		{"listenPort=http\n", "http"},
	} {
		if err := os.WriteFile(conf, []byte(tc.content), 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := loadNamesrvFlags(t, "-c", conf)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: err = %v, want one naming %q", tc.content, err, tc.want)
		}
	}
}
