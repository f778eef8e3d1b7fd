package metrics

import (
	"bufio"
	"net/http"
	"slices"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
)

// family names one metric family every scrape must show.
type family struct {
	name, help string
	typ        dto.MetricType
}

// ContentType is what GET /metrics answers: the text exposition format.
const ContentType = "text/plain; version=0.0.4; charset=utf-8"

// handler gathers reg and writes every family of want, in name order, in
// the text format: families with series through expfmt, families without
// as their # HELP and # TYPE lines alone (expfmt refuses an empty family,
// and client_golang's registry drops them).
type handler struct {
	reg  *prometheus.Registry
	want []family
}

func (h handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	mfs, err := h.reg.Gather()
	if err != nil && len(mfs) == 0 {
		http.Error(w, "gather metrics: "+err.Error(), http.StatusInternalServerError)
		return
	}
	have := make(map[string]bool, len(mfs))
	for _, mf := range mfs {
		have[mf.GetName()] = true
	}
	for _, f := range h.want {
		if !have[f.name] {
			mfs = append(mfs, &dto.MetricFamily{Name: &f.name, Help: &f.help, Type: f.typ.Enum()})
		}
	}
	slices.SortFunc(mfs, func(a, b *dto.MetricFamily) int { return strings.Compare(a.GetName(), b.GetName()) })
	w.Header().Set("Content-Type", ContentType)
	if r.Method == http.MethodHead {
		return
	}
	bw := bufio.NewWriterSize(w, 32<<10)
	for _, mf := range mfs {
		if len(mf.Metric) > 0 {
			if _, err := expfmt.MetricFamilyToText(bw, mf); err != nil {
				return // the client sees a truncated body; nothing else to do
			}
			continue
		}
		bw.WriteString("# HELP ")
		bw.WriteString(mf.GetName())
		bw.WriteByte(' ')
		bw.WriteString(escapeHelp(mf.GetHelp()))
		bw.WriteString("\n# TYPE ")
		bw.WriteString(mf.GetName())
		bw.WriteByte(' ')
		bw.WriteString(strings.ToLower(mf.GetType().String()))
		bw.WriteByte('\n')
	}
	bw.Flush()
}

// escapeHelp escapes a HELP text as the text format requires.
func escapeHelp(s string) string {
	return strings.NewReplacer(`\`, `\\`, "\n", `\n`).Replace(s)
}
