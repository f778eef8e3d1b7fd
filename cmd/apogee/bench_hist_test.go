package main

import (
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

// TestHistogramQuantiles: quantiles are within the bucket precision (~3%)
// of the exact ones, and max/avg are exact.
func TestHistogramQuantiles(t *testing.T) {
	var h histogram
	var exact []float64
	var sum float64
	for range 20000 {
		us := rand.Int64N(50_000) + 1
		h.record(time.Duration(us) * time.Microsecond)
		exact = append(exact, float64(us)/1000)
		sum += float64(us) / 1000
	}
	slices.Sort(exact)
	s := h.snapshot()
	for _, q := range []float64{0.5, 0.9, 0.99} {
		want := exact[int(q*float64(len(exact)))-1]
		got := s.quantile(q)
		if got > want*1.001 || got < want*0.95 {
			t.Errorf("q%.2f = %.3f, want about %.3f", q, got, want)
		}
	}
	if float64(s.max)/1000 != exact[len(exact)-1] {
		t.Errorf("max %d", s.max)
	}
	if avg := s.avgMs(); avg < sum/float64(len(exact))*0.999 || avg > sum/float64(len(exact))*1.001 {
		t.Errorf("avg %.3f", avg)
	}
	// A window holds only what was recorded after the previous snapshot.
	h.record(100 * time.Millisecond)
	w := h.snapshot().sub(s)
	if w.count != 1 || w.quantile(0.5) < 95 || w.quantile(0.5) > 100 {
		t.Errorf("window count %d p50 %.3f", w.count, w.quantile(0.5))
	}
	for _, us := range []int64{0, 1, 31, 32, 33, 1000, 1 << 40} {
		if lo := histLow(histIndex(us)); lo > us || (us >= 32 && float64(us-lo) > float64(us)*0.04) {
			t.Errorf("bucket of %d starts at %d", us, lo)
		}
	}
}
