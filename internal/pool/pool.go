// Package pool keeps byte buffers for reuse in pools by size class (powers
// of two), as Prometheus's util/pool does: a caller that reads many large
// bodies in a row (a first sync reads a gigabyte in a few thousand
// answers) would otherwise allocate, zero and collect a buffer for each,
// which costs about as much as scanning them. A buffer in a pool is
// dropped by the garbage collector when it has not been used for two
// collections, so a large one does not stay pinned for good.
package pool

import (
	"sync"
	"sync/atomic"
)

// Buckets are pools of buffers of 1<<minShift to 1<<maxShift bytes. The
// zero value is not usable: make one with New. Safe for concurrent use.
type Buckets struct {
	minShift int
	pools    []sync.Pool
	// scribble overwrites a buffer given back (tests: a use after its
	// release then reads garbage, not by chance the right bytes).
	scribble atomic.Bool
}

// New returns pools for buffers from 1<<minShift to 1<<maxShift bytes;
// larger ones are allocated and left to the garbage collector.
func New(minShift, maxShift int) *Buckets {
	return &Buckets{minShift: minShift, pools: make([]sync.Pool, maxShift-minShift+1)}
}

// class is the pool of buffers of at least n bytes, or -1 when n is
// larger than any.
func (b *Buckets) class(n int64) int {
	for c := range b.pools {
		if n <= 1<<(b.minShift+c) {
			return c
		}
	}
	return -1
}

// Get returns an empty buffer of capacity n or more.
func (b *Buckets) Get(n int64) *[]byte {
	c := b.class(n)
	if c < 0 {
		buf := make([]byte, 0, n)
		return &buf
	}
	if buf, ok := b.pools[c].Get().(*[]byte); ok {
		*buf = (*buf)[:0]
		return buf
	}
	buf := make([]byte, 0, 1<<(b.minShift+c))
	return &buf
}

// Put gives a buffer back to its pool; nothing may use its bytes after.
// nil is ignored.
func (b *Buckets) Put(buf *[]byte) {
	if buf == nil {
		return
	}
	if b.scribble.Load() {
		for i := range *buf {
			(*buf)[i] = 'X'
		}
	}
	// The class whose buffers it can stand in for: its capacity or less.
	for c := len(b.pools) - 1; c >= 0; c-- {
		if cap(*buf) >= 1<<(b.minShift+c) {
			b.pools[c].Put(buf)
			return
		}
	}
}

// Scribble makes Put overwrite every buffer given back, for tests that
// prove nothing reads a buffer after its release; it returns a func that
// sets it back.
func (b *Buckets) Scribble() (undo func()) {
	b.scribble.Store(true)
	return func() { b.scribble.Store(false) }
}
