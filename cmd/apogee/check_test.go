package main

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestCheckConfigFile(t *testing.T) {
	dir := t.TempDir()
	tests := []struct {
		name, role, content string
		unknown             []string
		bad                 []string // substrings, one per expected error
	}{
		{"broker ok", "broker", "brokerName=broker-a\nbrokerIP1=10.0.0.5\nbindAddress=0.0.0.0\nflushDiskType=SYNC_FLUSH\n", nil, nil},
		{"broker unknown keys are warnings", "broker", "brokerName=broker-a\nbrokerNmae=x\nfoo=1\n", []string{"brokerNmae", "foo"}, nil},
		{"broker every bad value reported", "broker", "listenPort=http\nsendMessageThreadPoolNums=many\nfoo=1\n", []string{"foo"}, []string{"listenPort", "sendMessageThreadPoolNums"}},
		{"broker rule broken", "broker", "brokerIP1=broker-a.example\n", nil, []string{"brokerIP1"}},
		{"broker store key known", "broker", "storePathRootDir=/data\nmaxMessageSize=1024\n", nil, nil},
		{"namesrv ok", "namesrv", "listenPort=9876\nbindAddress=0.0.0.0\n", nil, nil},
		{"namesrv embedded controller keys known", "namesrv", "enableControllerInNamesrv=false\njRaftGroupId=g\n", nil, nil},
		{"namesrv bad", "namesrv", "bindAddress=nowhere\nnope=1\n", []string{"nope"}, []string{"bindAddress"}},
		{"controller ok", "controller", "jRaftServerId=127.0.0.1:9880\njRaftInitConf=127.0.0.1:9880\njRaftControllerRPCAddr=127.0.0.1:9770\n", nil, nil},
		{"controller not in init conf", "controller", "jRaftServerId=127.0.0.1:1\njRaftInitConf=127.0.0.1:9880\njRaftControllerRPCAddr=127.0.0.1:9770\n", nil, []string{"jRaftServerId"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(dir, strings.ReplaceAll(tc.name, " ", "_")+".conf")
			if err := os.WriteFile(path, []byte(tc.content), 0o644); err != nil {
				t.Fatal(err)
			}
			r, err := checkConfigFile(tc.role, path)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(r.unknown, tc.unknown) {
				t.Errorf("unknown = %q, want %q", r.unknown, tc.unknown)
			}
			var all []string
			for _, e := range r.bad {
				all = append(all, e.Error())
			}
			joined := strings.Join(all, "\n")
			if len(tc.bad) == 0 && len(all) > 0 {
				t.Errorf("bad = %s, want none", joined)
			}
			for _, want := range tc.bad {
				if !strings.Contains(joined, want) {
					t.Errorf("bad = %q, want one naming %s", joined, want)
				}
			}
		})
	}
	if _, err := checkConfigFile("proxy", filepath.Join(dir, "x.conf")); err == nil {
		t.Error("a missing file or an unknown role is not an error")
	}
}

func TestRoleFromFileName(t *testing.T) {
	for path, want := range map[string]string{
		"/etc/apogee/broker-a-0.conf": "broker",
		"namesrv.conf":                "namesrv",
		"conf/controller2.conf":       "controller",
		"app.properties":              "",
	} {
		if got := roleFromFileName(path); got != want {
			t.Errorf("roleFromFileName(%q) = %q, want %q", path, got, want)
		}
	}
}
