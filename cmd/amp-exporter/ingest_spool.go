package main

import (
	"io"
	"sync"
	"time"
)

// spool holds what stdin brought for the upload: the request body reads
// it, and, until the exporter has taken the request, it keeps it all, so
// that a request refused with 429 can be sent again from the first byte.
// Writes never block (stdin keeps flowing to stdout whatever the upload
// does).
type spool struct {
	mu   sync.Mutex
	cond *sync.Cond
	buf  []byte
	base int64 // stream offset of buf[0]
	max  int

	keep    bool // keep every byte from the first (not taken yet)
	lost    bool // bytes were let go before the exporter took the request
	dropped bool // nothing more is uploaded: writes are discarded
	eof     bool
	err     error

	midLine bool // the last byte written was not a newline
	wrote   bool // something was written since the last keepalive tick
}

func newSpool(max int) *spool {
	s := &spool{max: max, keep: true}
	s.cond = sync.NewCond(&s.mu)
	return s
}

func (s *spool) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(p) > 0 {
		s.wrote = true
		s.midLine = p[len(p)-1] != '\n'
	}
	s.append(p)
	return len(p), nil
}

func (s *spool) append(p []byte) {
	if s.dropped {
		return
	}
	s.buf = append(s.buf, p...)
	if s.keep && len(s.buf) > s.max {
		// Too much to keep for a retry: from here on the body streams, as
		// a run already taken does.
		s.keep, s.lost = false, true
	}
	s.cond.Broadcast()
}

// keepalive sends an empty line every period in which nothing was written,
// when the stream is between lines.
func (s *spool) keepalive(stop <-chan struct{}, period time.Duration) {
	t := time.NewTicker(period)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
			s.mu.Lock()
			if !s.wrote && !s.midLine {
				s.append([]byte("\n"))
			}
			s.wrote = false
			s.mu.Unlock()
		}
	}
}

// close ends the stream (err: stdin's error, nil at EOF).
func (s *spool) close(err error) {
	s.mu.Lock()
	s.eof, s.err = true, err
	s.cond.Broadcast()
	s.mu.Unlock()
}

// taken says the exporter reads the body: what was sent need not be kept.
func (s *spool) taken() {
	s.mu.Lock()
	s.keep = false
	s.mu.Unlock()
}

// whole reports whether a new request can send the stream from its first
// byte.
func (s *spool) whole() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.keep && !s.lost && s.base == 0
}

// drop ends the upload: what is held is let go and later writes are
// discarded.
func (s *spool) drop() {
	s.mu.Lock()
	s.dropped, s.buf = true, nil
	s.cond.Broadcast()
	s.mu.Unlock()
}

// reader is a request body reading the stream from its first byte.
func (s *spool) reader() *spoolReader { return &spoolReader{s: s} }

type spoolReader struct {
	s      *spool
	off    int64
	closed bool
}

func (r *spoolReader) Read(p []byte) (int, error) {
	s := r.s
	s.mu.Lock()
	defer s.mu.Unlock()
	for !r.closed && !s.dropped && r.off >= s.base+int64(len(s.buf)) && !s.eof {
		s.cond.Wait()
	}
	switch {
	case r.closed || s.dropped:
		return 0, errDropped
	case r.off < s.base:
		return 0, errDropped // let go before this body read it: cannot happen for the one body
	case r.off >= s.base+int64(len(s.buf)):
		if s.err != nil {
			return 0, s.err
		}
		return 0, io.EOF
	}
	n := copy(p, s.buf[r.off-s.base:])
	r.off += int64(n)
	if !s.keep {
		// Sent and not needed again: let it go.
		drop := r.off - s.base
		s.buf = s.buf[drop:]
		s.base += drop
		if len(s.buf) == 0 {
			s.buf = nil
		}
	}
	return n, nil
}

// Close ends this body (the transport closes it when the request ends).
func (r *spoolReader) Close() error {
	r.s.mu.Lock()
	r.closed = true
	r.s.cond.Broadcast()
	r.s.mu.Unlock()
	return nil
}
