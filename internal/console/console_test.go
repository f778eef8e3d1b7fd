package console

import (
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/apogeemq/apogee/client"
	"github.com/apogeemq/apogee/client/admin"
)

func TestParseTime(t *testing.T) {
	local := time.Date(2026, 12, 1, 10, 30, 5, 0, time.Local)
	for _, tc := range []struct {
		in   string
		want time.Time
		ok   bool
	}{
		{"2026-12-01T10:30:05", local, true},
		{"2026-12-01T10:30", local.Add(-5 * time.Second), true},
		{"2026-12-01 10:30:05", local, true},
		{fmt.Sprint(local.UnixMilli()), local, true},
		{local.UTC().Format(time.RFC3339), local, true},
		{"yesterday", time.Time{}, false},
		{"", time.Time{}, false},
		{"-5", time.Time{}, false},
	} {
		got, err := parseTime(tc.in)
		if (err == nil) != tc.ok || (tc.ok && !got.Equal(tc.want)) {
			t.Errorf("parseTime(%q) = %v, %v; want %v ok=%v", tc.in, got, err, tc.want, tc.ok)
		}
	}
}

func TestPreview(t *testing.T) {
	for _, tc := range []struct {
		name, body, mode, wantMode, wantText string
	}{
		{"json auto", `{"a":1}`, "", "json", "{\n  \"a\": 1\n}"},
		{"text auto", "hello", "", "text", "hello"},
		{"binary auto", "\xff\xfe\x00", "", "hex", "00000000  ff fe 00"},
		{"text forced on json", `{"a":1}`, "text", "text", `{"a":1}`},
		{"json forced on text", "hello", "json", "json", "(not JSON)"},
		{"unknown mode is text", "hi", "bogus", "text", "hi"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := preview([]byte(tc.body), tc.mode)
			if v.Mode != tc.wantMode || !strings.HasPrefix(v.Text, tc.wantText) || v.Size != len(tc.body) {
				t.Fatalf("preview = %+v, want mode %s text %q", v, tc.wantMode, tc.wantText)
			}
		})
	}
}

func TestTopicKind(t *testing.T) {
	ci := &admin.ClusterInfo{Clusters: map[string][]string{"DefaultCluster": {"broker-a"}},
		Brokers: map[string]admin.Broker{"broker-a": {}}}
	for topic, want := range map[string]string{
		"Orders": "normal", "%RETRY%g": "retry", "%DLQ%g": "dlq", "RMQ_SYS_TRACE_TOPIC": "system",
		"rmq_sys_wheel_timer": "system", "TBW102": "system", "DefaultCluster": "system", "broker-a": "system",
	} {
		if got := kindIn(topic, ci); got != want {
			t.Errorf("kindIn(%q) = %s, want %s", topic, got, want)
		}
	}
}

func TestStatusOf(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want int
	}{
		{badRequest("x"), 400},
		{notFound("x"), 404},
		{fmt.Errorf("wrapped: %w", admin.ErrNotFound), 404},
		{&client.BrokerError{Code: noPermission, Remark: "no"}, 403},
		{&client.BrokerError{Code: 1, Remark: "system error"}, 502},
		{errors.New("dial failed"), 502},
	} {
		if got := statusOf(tc.err); got != tc.want {
			t.Errorf("statusOf(%v) = %d, want %d", tc.err, got, tc.want)
		}
	}
}

// TestCheckCSRF: the form token must equal the cookie; a foreign Origin is
// refused even with both.
func TestCheckCSRF(t *testing.T) {
	s := &Server{}
	tok := strings.Repeat("a", 32)
	req := func(form, cookie, origin string) *http.Request {
		r := httptest.NewRequest(http.MethodPost, "http://console.test/topics/create", strings.NewReader(url.Values{"csrf": {form}}.Encode()))
		r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		if cookie != "" {
			r.AddCookie(&http.Cookie{Name: csrfCookie, Value: cookie})
		}
		if origin != "" {
			r.Header.Set("Origin", origin)
		}
		return r
	}
	for _, tc := range []struct {
		name                 string
		form, cookie, origin string
		ok                   bool
	}{
		{"matching", tok, tok, "", true},
		{"matching, same origin", tok, tok, "http://console.test", true},
		{"no cookie", tok, "", "", false},
		{"mismatch", strings.Repeat("b", 32), tok, "", false},
		{"empty form value", "", tok, "", false},
		{"foreign origin", tok, tok, "http://evil.test", false},
	} {
		if err := s.checkCSRF(req(tc.form, tc.cookie, tc.origin)); (err == nil) != tc.ok {
			t.Errorf("%s: checkCSRF = %v, want ok=%v", tc.name, err, tc.ok)
		}
	}
}

// FuzzParseTime: no input panics, and an accepted time formats back.
func FuzzParseTime(f *testing.F) {
	for _, s := range []string{"2026-12-01T10:30:05", "1796120134945", "2026-12-01T10:30:05Z", "x", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if ts, err := parseTime(s); err == nil && ts.IsZero() && s != "0" {
			t.Fatalf("parseTime(%q) accepted a zero time", s)
		}
	})
}

func TestTemplatesParse(t *testing.T) {
	if _, err := parseTemplates(); err != nil {
		t.Fatal(err)
	}
}
