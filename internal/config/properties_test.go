package config

import (
	"strings"
	"testing"
	"time"
)

func TestParseSyntax(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want map[string]string
	}{
		{"equals", "a=1\n", map[string]string{"a": "1"}},
		{"colon and blanks", "  a : 1 \n", map[string]string{"a": "1"}},
		{"space separator", "brokerName broker-a\n", map[string]string{"brokerName": "broker-a"}},
		{"comments", "# c\n! c\n\nk=v", map[string]string{"k": "v"}},
		{"continuation", "k=a\\\n   b\n", map[string]string{"k": "ab"}},
		{"escaped separator", "a\\=b=c\n", map[string]string{"a=b": "c"}},
		{"unicode escape", "k=\\u0041x\n", map[string]string{"k": "Ax"}},
		{"empty value", "k=\n", map[string]string{"k": ""}},
		{"later wins", "k=1\nk=2\n", map[string]string{"k": "2"}},
		{"windows eol", "k=v\r\n", map[string]string{"k": "v"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p, err := Parse(strings.NewReader(tc.in))
			if err != nil {
				t.Fatal(err)
			}
			if p.Len() != len(tc.want) {
				t.Fatalf("got %d keys %v, want %v", p.Len(), p.Keys(), tc.want)
			}
			for k, v := range tc.want {
				if got, ok := p.Get(k); !ok || got != v {
					t.Errorf("key %q = %q (present %v), want %q", k, got, ok, v)
				}
			}
		})
	}
}

func TestParseBadEscape(t *testing.T) {
	if _, err := Parse(strings.NewReader("k=\\u00zz\n")); err == nil {
		t.Fatal("want error for malformed unicode escape")
	}
}

type sample struct {
	Name     string        `conf:"brokerName"`
	Port     int           `conf:"listenPort"`
	Enabled  bool          `conf:"autoCreateTopicEnable"`
	Ratio    float64       `conf:"ratio"`
	Interval time.Duration `conf:"flushIntervalCommitLog"`
	Addrs    []string      `conf:"namesrvAddr"`
	skipped  int
}

func TestApply(t *testing.T) {
	p, err := Parse(strings.NewReader("brokerName=b1\nlistenPort=10911\nautoCreateTopicEnable=true\n" +
		"ratio=0.75\nflushIntervalCommitLog=500\nnamesrvAddr=127.0.0.1:9876;127.0.0.1:9877\nbogus=1\n"))
	if err != nil {
		t.Fatal(err)
	}
	var s sample
	unknown, err := Apply(p, &s)
	if err != nil {
		t.Fatal(err)
	}
	if len(unknown) != 1 || unknown[0] != "bogus" {
		t.Errorf("unknown = %v, want [bogus]", unknown)
	}
	if s.Name != "b1" || s.Port != 10911 || !s.Enabled || s.Ratio != 0.75 ||
		s.Interval != 500*time.Millisecond || len(s.Addrs) != 2 || s.Addrs[1] != "127.0.0.1:9877" {
		t.Errorf("applied %+v", s)
	}
	m := ToMap(&s)
	if m["flushIntervalCommitLog"] != "500" || m["namesrvAddr"] != "127.0.0.1:9876;127.0.0.1:9877" {
		t.Errorf("ToMap = %v", m)
	}
}

func TestApplyBadValueNamesKey(t *testing.T) {
	p, _ := Parse(strings.NewReader("listenPort=abc\n"))
	var s sample
	_, err := Apply(p, &s)
	if err == nil || !strings.Contains(err.Error(), "listenPort") || !strings.Contains(err.Error(), "abc") {
		t.Fatalf("err = %v, want one naming key and value", err)
	}
}

func FuzzParse(f *testing.F) {
	f.Add("a=1\nb:2\nc 3\n# x\nd=\\\n  e\n")
	f.Add("k=\\u12")
	f.Fuzz(func(t *testing.T, s string) {
		p, err := Parse(strings.NewReader(s))
		if err != nil {
			return
		}
		for _, k := range p.Keys() {
			if _, ok := p.Get(k); !ok {
				t.Fatalf("key %q listed but absent", k)
			}
		}
	})
}
