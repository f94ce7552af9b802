package app

import (
	"net/http"
	"time"
)

// progressWriter gives each write of a long response stall to be taken by
// the client: a client that stops reading loses its own response (the
// write fails, the handler returns, the connection is closed) instead of
// holding a place others wait for until the server's write timeout. The
// response as a whole still ends by that timeout, counted from the first
// write.
type progressWriter struct {
	w     http.ResponseWriter
	rc    *http.ResponseController
	stall time.Duration
	end   time.Time
}

func newProgressWriter(w http.ResponseWriter, stall time.Duration) *progressWriter {
	return &progressWriter{w: w, rc: http.NewResponseController(w), stall: stall, end: time.Now().Add(serverWriteTimeout)}
}

// deadline moves the connection's write deadline to stall from now (never
// past the response's end). A writer without deadlines (a test recorder)
// is written to as it is.
func (p *progressWriter) deadline() {
	d := time.Now().Add(p.stall)
	if d.After(p.end) {
		d = p.end
	}
	_ = p.rc.SetWriteDeadline(d)
}

func (p *progressWriter) Write(b []byte) (int, error) {
	p.deadline()
	return p.w.Write(b)
}

// flush sends what the server still buffers under the same bound, so that
// nothing is left to wait on the client after the handler returns. The
// deadline stays set: the server sets its own again before the next
// request on the connection.
func (p *progressWriter) flush() {
	p.deadline()
	_ = p.rc.Flush()
}
