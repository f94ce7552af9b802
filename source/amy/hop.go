package amy

import (
	"bytes"
	"context"
	"crypto/tls"
	"net"
	"net/http"
	"net/http/httptrace"
	"net/textproto"
	"strings"
	"sync"
	"time"
)

// Go's HTTP client deletes a response's whole Connection header when it
// says "close" (the connection is done), before the reverse proxy can
// remove the hop-by-hop headers that header names: `Connection: close,
// X-Secret-Hop` would forward X-Secret-Hop. The proxy's transport therefore
// reads the names from the connection itself (hopConn), and the proxy
// removes them; where it cannot see them (HTTP/2, where Connection is not
// allowed anyway, or a tunnel through an HTTP proxy) only standard
// end-to-end headers are forwarded.

// newHopTransport is the proxy's transport to the upstream: HTTP/1.1, each
// connection a hopConn. tlsConfig may be nil (system roots).
func newHopTransport(tlsConfig *tls.Config) *http.Transport {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	d := &net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}
	tr.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := d.DialContext(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		return &hopConn{Conn: c}, nil
	}
	tr.DialTLSContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
		raw, err := d.DialContext(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		cfg := &tls.Config{}
		if tlsConfig != nil {
			cfg = tlsConfig.Clone()
		}
		if cfg.ServerName == "" {
			host, _, err := net.SplitHostPort(addr)
			if err != nil {
				host = addr
			}
			cfg.ServerName = host
		}
		cfg.NextProtos = []string{"http/1.1"}
		tc := tls.Client(raw, cfg)
		if err := tc.HandshakeContext(ctx); err != nil {
			raw.Close()
			return nil, err
		}
		return &hopConn{Conn: tc}, nil
	}
	tr.ForceAttemptHTTP2 = false
	tr.MaxIdleConnsPerHost = 64 // HTTP/1.1: many clients at once
	tr.TLSClientConfig = tlsConfig
	tr.ResponseHeaderTimeout = 0 // an event stream's headers may wait for the turn
	return tr
}

// maxHopLine bounds the part of a line kept to find Connection headers:
// longer lines are body data.
const maxHopLine = 8 << 10

// hopConn notes the names listed in every "Connection:" line read from it.
// Body lines that look like one only add names to drop: never a leak.
type hopConn struct {
	net.Conn

	mu     sync.Mutex
	line   []byte // the current line so far (up to maxHopLine)
	long   bool   // the current line is past maxHopLine
	saw    bool   // a Connection line was read
	tokens map[string]bool
}

func (h *hopConn) Read(p []byte) (int, error) {
	n, err := h.Conn.Read(p)
	if n > 0 {
		h.scan(p[:n])
	}
	return n, err
}

func (h *hopConn) scan(b []byte) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for len(b) > 0 {
		i := bytes.IndexByte(b, '\n')
		chunk := b
		if i >= 0 {
			chunk = b[:i]
		}
		if !h.long {
			if len(h.line)+len(chunk) > maxHopLine {
				h.long, h.line = true, h.line[:0]
			} else {
				h.line = append(h.line, chunk...)
			}
		}
		if i < 0 {
			return
		}
		if !h.long {
			h.header(bytes.TrimRight(h.line, "\r"))
		}
		h.line, h.long = h.line[:0], false
		b = b[i+1:]
	}
}

func (h *hopConn) header(line []byte) {
	const name = "connection:"
	if len(line) < len(name) || !strings.EqualFold(string(line[:len(name)]), name) {
		return
	}
	h.saw = true
	for _, tok := range strings.Split(string(line[len(name):]), ",") {
		tok = textproto.TrimString(tok)
		if tok == "" || strings.EqualFold(tok, "close") || strings.EqualFold(tok, "keep-alive") {
			continue
		}
		if h.tokens == nil {
			h.tokens = map[string]bool{}
		}
		h.tokens[http.CanonicalHeaderKey(tok)] = true
	}
}

// named returns the header names Connection lines on the connection
// listed, and whether any such line was read.
func (h *hopConn) named() ([]string, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := make([]string, 0, len(h.tokens))
	for k := range h.tokens {
		out = append(out, k)
	}
	return out, h.saw
}

// connOf remembers which connection carried a proxied request.
type connOf struct {
	mu   sync.Mutex
	conn net.Conn
}

type connOfKey struct{}

// traceConn adds to an outgoing request's context the record of the
// connection it is sent on.
func traceConn(r *http.Request) *http.Request {
	rec := &connOf{}
	ctx := context.WithValue(r.Context(), connOfKey{}, rec)
	ctx = httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{GotConn: func(info httptrace.GotConnInfo) {
		rec.mu.Lock()
		rec.conn = info.Conn
		rec.mu.Unlock()
	}})
	return r.WithContext(ctx)
}

// dropHopHeaders removes from a response whose Connection header the client
// consumed (resp.Close) the headers it named, read from the connection; when
// they cannot be known, every header that is not a standard end-to-end one.
func dropHopHeaders(resp *http.Response) {
	if !resp.Close {
		return // the reverse proxy removes what Connection names
	}
	if resp.ProtoMajor == 1 && resp.Request != nil {
		if rec, ok := resp.Request.Context().Value(connOfKey{}).(*connOf); ok {
			rec.mu.Lock()
			hc, ok := rec.conn.(*hopConn)
			rec.mu.Unlock()
			if ok {
				if names, saw := hc.named(); saw {
					for _, k := range names {
						resp.Header.Del(k)
					}
					return
				}
			}
		}
	}
	dropUnknownHopHeaders(resp)
}
