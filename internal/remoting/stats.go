package remoting

import "sync/atomic"

// Stats is a snapshot of an endpoint's counters (totals since New, except
// Conns). internal/metrics exports them; the hot path only does atomic adds.
type Stats struct {
	Conns          int   // open connections now
	ConnsOpened    int64 // connections accepted or dialled
	Requests       int64 // requests received and handed to a processor
	Overloaded     int64 // requests answered SYSTEM_BUSY because a pool queue was full
	QueueTimeouts  int64 // requests answered SYSTEM_BUSY after waiting past their pool's MaxWait
	NotSupported   int64 // requests with no processor
	CodecErrors    int64 // connections closed for an undecodable or oversize frame
	IdleClosed     int64 // connections closed by the idle scanner
	ProcessorPanic int64 // processors that panicked
	Timeouts       int64 // calls we made that timed out (async and sync)
}

// counters are the live values behind Stats.
type counters struct {
	connsOpened    atomic.Int64
	requests       atomic.Int64
	overloaded     atomic.Int64
	queueTimeouts  atomic.Int64
	notSupported   atomic.Int64
	codecErrors    atomic.Int64
	idleClosed     atomic.Int64
	processorPanic atomic.Int64
	timeouts       atomic.Int64
}

func (ep *endpoint) stats() Stats {
	ep.mu.Lock()
	n := len(ep.conns)
	ep.mu.Unlock()
	c := &ep.counters
	return Stats{
		Conns:          n,
		ConnsOpened:    c.connsOpened.Load(),
		Requests:       c.requests.Load(),
		Overloaded:     c.overloaded.Load(),
		QueueTimeouts:  c.queueTimeouts.Load(),
		NotSupported:   c.notSupported.Load(),
		CodecErrors:    c.codecErrors.Load(),
		IdleClosed:     c.idleClosed.Load(),
		ProcessorPanic: c.processorPanic.Load(),
		Timeouts:       c.timeouts.Load(),
	}
}

// Stats returns the server's counters.
func (s *Server) Stats() Stats { return s.ep.stats() }

// Stats returns the client's counters.
func (c *Client) Stats() Stats { return c.ep.stats() }
