package metrics

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

func TestVersionDesc(t *testing.T) {
	for _, tc := range []struct {
		v    int32
		want string
	}{
		{401, "v4_9_4"}, {479, "v5_3_3"}, {413, "v5_0_0"}, {412, "v5_0_0_snapshot"}, {212, "v4_0_0_snapshot"}, {100, "v100"},
	} {
		if got := versionDesc(tc.v); got != tc.want {
			t.Errorf("versionDesc(%d) = %q, want %q", tc.v, got, tc.want)
		}
	}
}

// fixed is a Source with one family that has a series and one that has none.
type fixed struct{ with, without metric }

func (f fixed) families() []family { return []family{f.with.family, f.without.family} }
func (f fixed) Describe(ch chan<- *prometheus.Desc) {
	ch <- f.with.desc
	ch <- f.without.desc
}
func (f fixed) Collect(ch chan<- prometheus.Metric) {
	ch <- prometheus.MustNewConstMetric(f.with.desc, prometheus.CounterValue, 3, "a")
}

// TestEmptyFamiliesExposed: a family without series still has its # HELP
// and # TYPE lines, and the answer is the 0.0.4 text format.
func TestEmptyFamiliesExposed(t *testing.T) {
	src := fixed{
		with:    newMetric("x_total", "X with a \\ and\nnewline", counter, nil, "topic"),
		without: newMetric("y_lag", "Y", gauge, prometheus.Labels{"cluster": "c"}, "topic"),
	}
	s, err := NewServer(Config{Addr: "127.0.0.1:0"}, nil, src)
	if err != nil {
		t.Fatal(err)
	}
	rec := httptest.NewRecorder()
	s.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	body, _ := io.ReadAll(rec.Body)
	want := "# HELP x_total X with a \\\\ and\\nnewline\n# TYPE x_total counter\nx_total{topic=\"a\"} 3\n# HELP y_lag Y\n# TYPE y_lag gauge\n"
	if string(body) != want {
		t.Fatalf("body =\n%s\nwant\n%s", body, want)
	}
	if ct := rec.Header().Get("Content-Type"); ct != ContentType {
		t.Fatalf("Content-Type = %q", ct)
	}
	rec = httptest.NewRecorder()
	s.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/metrics", strings.NewReader("")))
	if rec.Code != http.StatusMethodNotAllowed {
		t.Fatalf("POST /metrics = %d", rec.Code)
	}
}

// TestServerPprof: pprof only when asked for.
func TestServerPprof(t *testing.T) {
	for _, on := range []bool{false, true} {
		s, err := NewServer(Config{Addr: "127.0.0.1:0", Pprof: on}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Start(); err != nil {
			t.Fatal(err)
		}
		resp, err := http.Get("http://" + s.Addr() + "/debug/pprof/")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if got := resp.StatusCode == http.StatusOK; got != on {
			t.Errorf("pprof=%v: /debug/pprof/ status %d", on, resp.StatusCode)
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		if err := s.Close(); err != nil {
			t.Fatal("second Close:", err)
		}
	}
}
