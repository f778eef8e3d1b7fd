package broker

import (
	"context"
	"math"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/apogeemq/apogee/internal/run"
)

// The TPS figures of GET_BROKER_RUNTIME_INFO (putTps, getTransferedTps,
// getFoundTps, getMissTps, getTotalTps), as RocketMQ's StoreStatsService
// computes them: the counters are sampled every second into a ring of
// tpsRingSize samples, and a window of n seconds is the counter's rise
// since the sample n seconds back divided by the time between them. Each
// key holds three windows, 10 s, 1 min and 10 min, space-separated, each
// a Java double ("1523.5", "0.0"). Here the window ends at the live
// counters (not the last sample) and, while the ring holds fewer than n
// seconds, starts at its oldest sample.
//
// The same loop keeps msgPutTotalTodayMorning and friends: at the first
// sample of a new local day the totals are copied to "today morning" and
// the previous ones to "yesterday morning", as RocketMQ's BrokerStats
// does at midnight.

const tpsRingSize = 601

var tpsWindows = [...]int{10, 60, 600}

// tpsSample is one second's counters.
type tpsSample struct {
	at                       int64 // ms since the epoch
	put, found, miss, transf int64 // messages stored; pulls found / missed; messages pulled
}

type tpsSampler struct {
	mu    sync.Mutex
	ring  [tpsRingSize]tpsSample // guarded by mu
	count int                    // samples taken, guarded by mu; ring[(count-1)%size] is the newest

	day                        int // local year*1000+yday of the last sample; guarded by mu
	putMorning, getMorning     int64
	putYesterday, getYesterday int64
}

func (b *Broker) tpsNow() tpsSample {
	return tpsSample{
		at:     b.now().UnixMilli(),
		put:    b.stats.messagesIn.Load(),
		found:  b.stats.pullFound.Load(),
		miss:   b.stats.pullMiss.Load(),
		transf: b.stats.messagesOut.Load(),
	}
}

// sampleTPS records one sample (the loop's body).
func (b *Broker) sampleTPS() {
	s := b.tpsNow()
	t := &b.tps
	t.mu.Lock()
	defer t.mu.Unlock()
	t.ring[t.count%tpsRingSize] = s
	t.count++
	now := time.UnixMilli(s.at)
	day := now.Year()*1000 + now.YearDay()
	if t.day != 0 && day != t.day {
		t.putYesterday, t.getYesterday = t.putMorning, t.getMorning
		t.putMorning, t.getMorning = s.put, s.transf
	}
	t.day = day
}

// startTPSSampler starts the one-second sampling loop (Start calls it).
func (b *Broker) startTPSSampler() {
	b.sampleTPS()
	b.goFunc("tps-sample", func() {
		run.Every(b.baseCtx, time.Second, func(context.Context) { b.sampleTPS() })
	})
}

// tpsFigures returns the three windows of one counter as RocketMQ's
// runtime info formats them.
func (b *Broker) tpsFigures(value func(tpsSample) int64) string {
	live := b.tpsNow()
	t := &b.tps
	t.mu.Lock()
	defer t.mu.Unlock()
	parts := make([]string, 0, len(tpsWindows))
	for _, n := range tpsWindows {
		tps := 0.0
		if t.count > 0 {
			back := min(n, t.count) // samples back; the oldest when the ring is short
			if back > tpsRingSize {
				back = tpsRingSize
			}
			old := t.ring[(t.count-back)%tpsRingSize]
			if ms := live.at - old.at; ms > 0 {
				tps = float64(value(live)-value(old)) * 1000 / float64(ms)
			}
		}
		parts = append(parts, javaDouble(tps))
	}
	return strings.Join(parts, " ")
}

// dailyTotals returns msgPutTotalTodayMorning, msgGetTotalTodayMorning,
// msgPutTotalYesterdayMorning, msgGetTotalYesterdayMorning: the counters
// at the last two local midnights seen; 0 before (the counters start at 0
// when the broker boots, as RocketMQ's do).
func (b *Broker) dailyTotals() (putToday, getToday, putYesterday, getYesterday int64) {
	t := &b.tps
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.putMorning, t.getMorning, t.putYesterday, t.getYesterday
}

// javaDouble formats v as Java's Double.toString does for the values a
// rate takes: at least one decimal ("12.0"), shortest representation,
// scientific from 1e7.
func javaDouble(v float64) string {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return "0.0"
	}
	if a := math.Abs(v); a >= 1e7 || (a > 0 && a < 1e-3) {
		s := strconv.FormatFloat(v, 'E', -1, 64) // 1.2345E7
		mant, exp, _ := strings.Cut(s, "E")
		if !strings.Contains(mant, ".") {
			mant += ".0"
		}
		sign := ""
		if strings.HasPrefix(exp, "-") {
			sign = "-"
		}
		return mant + "E" + sign + strings.TrimLeft(exp, "+-0")
	}
	s := strconv.FormatFloat(v, 'f', -1, 64)
	if !strings.Contains(s, ".") {
		s += ".0"
	}
	return s
}
