package broker

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apogeemq/apogee/internal/config"
	"github.com/apogeemq/apogee/internal/protocol"
)

// TestRewriteProperties: updated keys are replaced where they stand (also
// continued and oddly separated entries), everything else is kept, absent
// keys are appended sorted.
func TestRewriteProperties(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		updates map[string]string
		want    string
	}{
		{name: "replace in place", in: "# broker\nbrokerName=a\nbrokerPermission=6\n\nlistenPort=10911\n",
			updates: map[string]string{"brokerPermission": "4"},
			want:    "# broker\nbrokerName=a\nbrokerPermission=4\n\nlistenPort=10911\n"},
		{name: "separators and blanks", in: "  brokerPermission : 6\n! note\nautoCreateTopicEnable true\n",
			updates: map[string]string{"brokerPermission": "2", "autoCreateTopicEnable": "false"},
			want:    "brokerPermission=2\n! note\nautoCreateTopicEnable=false\n"},
		{name: "continued entry", in: "namesrvAddr=a:1;\\\n  b:2\nbrokerPermission=\\\n 6\nx=1",
			updates: map[string]string{"brokerPermission": "4"},
			want:    "namesrvAddr=a:1;\\\n  b:2\nbrokerPermission=4\nx=1\n"},
		{name: "append missing sorted", in: "brokerName=a\n",
			updates: map[string]string{"rejectTransactionMessage": "true", "autoCreateTopicEnable": "false"},
			want:    "brokerName=a\nautoCreateTopicEnable=false\nrejectTransactionMessage=true\n"},
		{name: "duplicates all updated", in: "brokerPermission=6\nbrokerPermission=7\n",
			updates: map[string]string{"brokerPermission": "4"},
			want:    "brokerPermission=4\nbrokerPermission=4\n"},
		{name: "escaped value", in: "", updates: map[string]string{"k": `C:\dir`}, want: "k=C:\\\\dir\n"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := string(rewriteProperties([]byte(tc.in), tc.updates))
			if got != tc.want {
				t.Fatalf("got\n%q\nwant\n%q", got, tc.want)
			}
			p, err := config.Parse(strings.NewReader(got))
			if err != nil {
				t.Fatal(err)
			}
			for k, v := range tc.updates {
				if got, _ := p.Get(k); got != v {
					t.Fatalf("reparsed %s = %q, want %q", k, got, v)
				}
			}
		})
	}
}

// TestUpdateBrokerConfigPersists: with a config file, UPDATE_BROKER_CONFIG
// writes the keys back (comments kept) so a restart loads them; without
// one nothing is written; when the file cannot be rewritten the update is
// refused and not applied.
func TestUpdateBrokerConfigPersists(t *testing.T) {
	dir := t.TempDir()
	conf := filepath.Join(dir, "broker.conf")
	orig := "# production broker\nbrokerClusterName=DefaultCluster\nbrokerPermission=6\n"
	if err := os.WriteFile(conf, []byte(orig), 0o640); err != nil {
		t.Fatal(err)
	}
	b, err := New(testConfig(t, filepath.Join(dir, "store")), nil)
	if err != nil {
		t.Fatal(err)
	}
	b.SetConfigFile(conf)
	if err := b.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	c := newClient(t)
	mustCode(t, invoke(t, c, b.Addr(), protocol.NewRequest(protocol.UpdateBrokerConfig, nil,
		[]byte("brokerPermission=4\nautoCreateTopicEnable=false\n"))), protocol.Success)
	data, err := os.ReadFile(conf)
	if err != nil {
		t.Fatal(err)
	}
	want := "# production broker\nbrokerClusterName=DefaultCluster\nbrokerPermission=4\nautoCreateTopicEnable=false\n"
	if string(data) != want {
		t.Fatalf("file =\n%s\nwant\n%s", data, want)
	}
	if fi, err := os.Stat(conf); err != nil || fi.Mode().Perm() != 0o640 {
		t.Fatalf("mode not kept: %v %v", fi.Mode(), err)
	}
	if left, _ := filepath.Glob(filepath.Join(dir, ".broker.conf.tmp*")); len(left) != 0 {
		t.Fatalf("temp files left: %v", left)
	}
	// What a restart loads.
	props, err := config.LoadFile(conf)
	if err != nil {
		t.Fatal(err)
	}
	restarted := DefaultConfig()
	if _, err := restarted.ApplyProperties(props); err != nil {
		t.Fatal(err)
	}
	if restarted.BrokerPermission != 4 || restarted.AutoCreateTopicEnable {
		t.Fatalf("restart would load perm %d autoCreate %v", restarted.BrokerPermission, restarted.AutoCreateTopicEnable)
	}
	// A refused key leaves the file alone.
	mustCode(t, invoke(t, c, b.Addr(), protocol.NewRequest(protocol.UpdateBrokerConfig, nil, []byte("listenPort=1\n"))), protocol.NoPermission)
	if again, _ := os.ReadFile(conf); string(again) != want {
		t.Fatalf("refused update touched the file: %s", again)
	}
	// The file vanished: the update fails and is not applied.
	if err := os.Remove(conf); err != nil {
		t.Fatal(err)
	}
	mustCode(t, invoke(t, c, b.Addr(), protocol.NewRequest(protocol.UpdateBrokerConfig, nil, []byte("brokerPermission=6\n"))), protocol.SystemError)
	if p := b.dyn.brokerPermission.Load(); p != 4 {
		t.Fatalf("permission = %d after a failed update, want 4 kept", p)
	}

	// Without a file the update applies in memory only.
	b2 := startBroker(t, testConfig(t, t.TempDir()))
	mustCode(t, invoke(t, c, b2.Addr(), protocol.NewRequest(protocol.UpdateBrokerConfig, nil, []byte("brokerPermission=4\n"))), protocol.Success)
	if p := b2.dyn.brokerPermission.Load(); p != 4 {
		t.Fatalf("permission = %d", p)
	}
}

// FuzzRewriteProperties: whatever the file holds, the rewritten text
// parses, carries the updated value, and keeps every other key's value.
func FuzzRewriteProperties(f *testing.F) {
	f.Add("brokerPermission=6\n", "brokerPermission", "4")
	f.Add("# c\na=1\\\n  2\nb : 3\n", "b", "x y")
	f.Add("k\\=ey=1\n", "k=ey", "2")
	f.Add("a=\\u00e9\n!x\n\n", "new", "v\\")
	f.Fuzz(func(t *testing.T, in, key, value string) {
		before, err := config.Parse(strings.NewReader(in))
		if err != nil || key == "" || strings.TrimSpace(value) != value || strings.ContainsAny(key+value, "\r\n\x00") {
			return
		}
		out := rewriteProperties([]byte(in), map[string]string{key: value})
		after, err := config.Parse(strings.NewReader(string(out)))
		if err != nil {
			t.Fatalf("rewritten text does not parse: %v\n%q", err, out)
		}
		if got, _ := after.Get(key); got != value {
			t.Fatalf("%q = %q, want %q in\n%q", key, got, value, out)
		}
		for _, k := range before.Keys() {
			if k == key {
				continue
			}
			v1, _ := before.Get(k)
			if v2, _ := after.Get(k); v1 != v2 {
				t.Fatalf("%q changed from %q to %q in\n%q", k, v1, v2, out)
			}
		}
	})
}
