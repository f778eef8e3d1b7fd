package main

import (
	"math"
	"math/bits"
	"sync/atomic"
	"time"
)

// histogram is a lock-free log-linear latency histogram: 32 sub-buckets
// per power of two of microseconds (about 3% precision), safe for
// concurrent record calls.
type histogram struct {
	buckets [64 * histSub]atomic.Int64
	count   atomic.Int64
	sum     atomic.Int64 // µs
	max     atomic.Int64 // µs
}

const (
	histSubBits = 5
	histSub     = 1 << histSubBits
)

func histIndex(us int64) int {
	if us < histSub {
		return int(max(us, 0))
	}
	exp := bits.Len64(uint64(us)) - 1 - histSubBits
	mant := int(us>>uint(exp)) & (histSub - 1)
	return (exp+1)*histSub + mant
}

// histLow is the smallest value of bucket i (µs).
func histLow(i int) int64 {
	if i < histSub {
		return int64(i)
	}
	exp := i/histSub - 1
	mant := i % histSub
	return int64(histSub+mant) << uint(exp)
}

func (h *histogram) record(d time.Duration) {
	us := d.Microseconds()
	h.buckets[histIndex(us)].Add(1)
	h.count.Add(1)
	h.sum.Add(us)
	for {
		m := h.max.Load()
		if us <= m || h.max.CompareAndSwap(m, us) {
			break
		}
	}
}

// snapshot is a histogram's state at one moment.
type snapshot struct {
	buckets []int64
	count   int64
	sum     int64
	max     int64
}

func (h *histogram) snapshot() snapshot {
	s := snapshot{buckets: make([]int64, len(h.buckets)), count: h.count.Load(), sum: h.sum.Load(), max: h.max.Load()}
	for i := range h.buckets {
		s.buckets[i] = h.buckets[i].Load()
	}
	return s
}

// sub returns s - prev (the samples recorded in between; max is s's).
func (s snapshot) sub(prev snapshot) snapshot {
	d := snapshot{buckets: make([]int64, len(s.buckets)), count: s.count - prev.count, sum: s.sum - prev.sum, max: s.max}
	for i := range s.buckets {
		d.buckets[i] = s.buckets[i] - prev.buckets[i]
	}
	if d.count > 0 {
		// The window's own max: the highest non-empty bucket's upper bound,
		// capped by the running max.
		for i := len(d.buckets) - 1; i >= 0; i-- {
			if d.buckets[i] > 0 {
				d.max = min(s.max, histLow(i+1))
				break
			}
		}
	} else {
		d.max = 0
	}
	return d
}

// quantile returns the q-quantile in milliseconds.
func (s snapshot) quantile(q float64) float64 {
	if s.count == 0 {
		return 0
	}
	rank := int64(math.Ceil(q * float64(s.count)))
	var seen int64
	for i, n := range s.buckets {
		seen += n
		if seen >= rank {
			return float64(histLow(i)) / 1000
		}
	}
	return float64(s.max) / 1000
}

func (s snapshot) avgMs() float64 {
	if s.count == 0 {
		return 0
	}
	return float64(s.sum) / float64(s.count) / 1000
}
