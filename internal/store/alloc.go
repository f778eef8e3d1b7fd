package store

import (
	"fmt"
	"os"
	"sync"
)

// allocator creates commit-log files (RocketMQ AllocateMappedFileService):
// when file N is requested it is created (or taken ready-made) and file N+1
// is prepared in the background, so the next roll does not wait for
// ftruncate/mmap (or warm-up).
type allocator struct {
	store *Store
	dir   string
	size  int64

	mu      sync.Mutex
	pending map[int64]*allocResult // guarded by mu
	closed  bool                   // guarded by mu
	wg      sync.WaitGroup
}

type allocResult struct {
	done chan struct{}
	mf   *mappedFile
	err  error
}

func (a *allocator) create(off int64) (*mappedFile, error) {
	if err := os.MkdirAll(a.dir, 0o755); err != nil {
		return nil, fmt.Errorf("store: create %s: %w", a.dir, err)
	}
	mf, err := openMappedFile(a.dir, off, a.size, true)
	if err == nil {
		mf.writeThrough = a.store.stage != nil
		mf.stage = a.store.stage
		if a.store.cfg.syncFlush() {
			mf.adviseAppend(0)
		}
	}
	return mf, err
}

// get returns the file starting at off and queues the next one.
func (a *allocator) get(off int64) (*mappedFile, error) {
	a.mu.Lock()
	if a.pending == nil {
		a.pending = make(map[int64]*allocResult)
	}
	r := a.pending[off]
	delete(a.pending, off)
	a.mu.Unlock()
	var mf *mappedFile
	var err error
	if r != nil {
		<-r.done
		mf, err = r.mf, r.err
	}
	if mf == nil {
		if mf, err = a.create(off); err != nil {
			return nil, err
		}
		if a.store.cfg.WarmMapedFileEnable {
			a.store.spawnOptional(func() { mf.warmFrom(0, a.store.quit) })
		}
	}
	if p := a.store.pool; p != nil {
		buf := p.borrow()
		if buf == nil && a.store.cfg.FastFailIfNoBufferInStorePool {
			mf.shutdown(a.store.cfg.now(), 0)
			return nil, fmt.Errorf("store: no buffer in transient store pool")
		}
		if buf != nil {
			mf.writeBuf, mf.pooled, mf.returnBuf = buf, true, p.giveBack
		}
	}
	a.prepare(off + a.size)
	return mf, nil
}

func (a *allocator) prepare(off int64) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.closed || a.pending[off] != nil {
		return
	}
	r := &allocResult{done: make(chan struct{})}
	a.pending[off] = r
	a.wg.Add(1)
	go func() {
		defer a.wg.Done()
		defer close(r.done)
		r.mf, r.err = a.create(off)
		if r.err == nil && a.store.cfg.WarmMapedFileEnable {
			r.mf.warmFrom(0, a.store.quit)
		}
	}()
}

// close waits for background creation and discards unused files (they are
// deleted: an empty pre-allocated file is not part of the log).
func (a *allocator) close() {
	a.mu.Lock()
	a.closed = true
	pending := a.pending
	a.pending = nil
	a.mu.Unlock()
	a.wg.Wait()
	for _, r := range pending {
		if r.mf != nil {
			r.mf.destroy(a.store.cfg.now(), 0)
		}
	}
}

// transientPool holds the write buffers of transientStorePoolEnable (2.6):
// anonymous mappings, mlocked when the limit allows.
type transientPool struct {
	size int64
	mu   sync.Mutex
	free [][]byte
}

func newTransientPool(n int, size int64) *transientPool {
	p := &transientPool{size: size}
	for i := 0; i < n; i++ {
		b, err := mmapAnon(size)
		if err != nil {
			break
		}
		p.free = append(p.free, b)
	}
	return p
}

func (p *transientPool) borrow() []byte {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.free) == 0 {
		return nil
	}
	b := p.free[len(p.free)-1]
	p.free = p.free[:len(p.free)-1]
	return b
}

func (p *transientPool) giveBack(b []byte) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.size < 0 {
		_ = munmap(b)
		return
	}
	p.free = append(p.free, b)
}

// Available is the number of free buffers (the broker rejects sends at 0).
func (p *transientPool) available() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.free)
}

// close unmaps the free buffers; buffers still lent out are unmapped when
// given back afterwards.
func (p *transientPool) close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, b := range p.free {
		_ = munmap(b)
	}
	p.free = nil
	p.size = -1
}
