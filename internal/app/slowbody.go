package app

import (
	"errors"
	"io"
	"net"
	"net/http"
	"sync/atomic"
	"time"
)

// A connection that has sent a whole request header is serving a request,
// which the connection limit never closes to make room; and Go's server,
// once a handler has answered without reading the request's body, reads
// what is left of it (up to 256 kB) before it answers or frees the
// connection, within the whole-request read timeout (30 s). So clients
// that send a header with a body they never send held every slot of the
// limit for 30 s at a time, and scrapes waited (issue 19's "known gap").
// Two bounds close it: a body the exporter's handler did not read is not
// waited for (the connection's read deadline moves to unreadBodyWait from
// the answer, and it closes then), and a request that has not reached the
// handler within refusedBodyWait of its header — one refused before it
// (a 401 without credentials, a 429 of the web config's rate limit) whose
// body is being waited for — gets the same. Routes that read their body
// (ingest, the Amy proxy's turns) are bounded by their own limits while
// they read.

// refusedBodyWait bounds how long a request that has not reached the
// handler may hold its connection after its header: checking credentials
// takes milliseconds.
var refusedBodyWait = 2 * time.Second

// unreadBodyWait bounds how long the rest of a body the handler did not
// read is waited for (Go's server reads up to 256 kB of it before it frees
// the connection): long enough for a client that is sending it, far below
// the 30 s whole-request timeout.
var unreadBodyWait = time.Second

// connKey is the context key of a request's connection (ConnContext).
type connKey struct{}

// unreadBodyNotAwaited marks a request's connection as having reached the
// handler, and does not wait for a body the handler left unread.
func unreadBodyNotAwaited(h http.Handler) http.Handler {
	if h == nil {
		h = http.DefaultServeMux
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if c, ok := r.Context().Value(connKey{}).(net.Conn); ok {
			if lc := limitedOf(c); lc != nil {
				lc.reached.Store(true)
			}
		}
		if r.Body == nil || r.Body == http.NoBody || r.ContentLength == 0 {
			h.ServeHTTP(w, r)
			return
		}
		b := &readToEnd{ReadCloser: r.Body}
		r.Body = b
		h.ServeHTTP(w, r)
		if !b.done.Load() {
			// Not now: a client still sending the rest of a body it is
			// refused for must get to read the answer (closing with its
			// bytes unread resets the connection under it); one that
			// sends nothing more is cut off within unreadBodyWait.
			_ = http.NewResponseController(w).SetReadDeadline(time.Now().Add(unreadBodyWait))
		}
	})
}

// refusedBodyNotAwaited is called when connection c starts serving the
// request numbered seq: unless the request reaches the handler within
// refusedBodyWait, its body is not waited for.
func (l *connLimiter) refusedBodyNotAwaited(c *limitedConn, seq uint64) {
	c.reached.Store(false)
	time.AfterFunc(refusedBodyWait, func() {
		l.mu.Lock()
		s := l.conns[c]
		same := s != nil && s.seq == seq && s.state == http.StateActive
		l.mu.Unlock()
		if same && !c.reached.Load() {
			_ = c.Conn.SetReadDeadline(time.Now())
		}
	})
}

// readToEnd notes that its body was read to its end.
type readToEnd struct {
	io.ReadCloser
	done atomic.Bool
}

func (b *readToEnd) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if errors.Is(err, io.EOF) {
		b.done.Store(true)
	}
	return n, err
}
