package app

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/exporter-toolkit/web"
	"gopkg.in/yaml.v3"
)

// ServerLimits bound what HTTP clients can hold on the exporter's servers
// (the main one and every Amy proxy).
type ServerLimits struct {
	// MaxRequests is node_exporter's --web.max-requests: parallel scrapes
	// of the telemetry path (0: no limit).
	MaxRequests int
	// MaxConnections bounds open connections per server; at the limit the
	// oldest connection not serving a request (one that has not completed
	// a request header, or an idle keep-alive one) is closed to make room,
	// and a new one waits when every connection is serving a request (0:
	// no limit).
	MaxConnections int
}

// Defaults of the server limits. node_exporter's default for
// --web.max-requests is 40 as well.
const (
	DefaultMaxRequests    = 40
	DefaultMaxConnections = 512
)

// Timeouts of the exporter's HTTP servers. Streaming routes (ingest, the
// Amy proxy's event streams) extend their own deadlines per read or write.
const (
	serverReadHeaderTimeout = 10 * time.Second
	serverReadTimeout       = 30 * time.Second // whole request; ingest extends it per read
	serverWriteTimeout      = 2 * time.Minute  // whole response; ingest extends it
	serverIdleTimeout       = 90 * time.Second // keep-alive between requests
)

// hardenServer sets the timeouts of the main server.
func hardenServer(s *http.Server) {
	s.ReadHeaderTimeout = serverReadHeaderTimeout
	s.ReadTimeout = serverReadTimeout
	s.WriteTimeout = serverWriteTimeout
	s.IdleTimeout = serverIdleTimeout
	s.MaxHeaderBytes = 64 << 10
}

// hardenProxyServer sets the timeouts of an Amy proxy's server: event
// streams are long responses, so no write timeout; request bodies (turn
// creation) are small.
func hardenProxyServer(s *http.Server) {
	s.ReadHeaderTimeout = serverReadHeaderTimeout
	s.ReadTimeout = serverReadTimeout
	s.IdleTimeout = serverIdleTimeout
	s.MaxHeaderBytes = 64 << 10
}

// listenAndServe is web.ListenAndServe with a connection limit on every
// TCP listener (systemd sockets and vsock are served as the toolkit does).
func listenAndServe(server *http.Server, flags *web.FlagConfig, maxConns int, logger *slog.Logger) error {
	if maxConns <= 0 || (flags.WebSystemdSocket != nil && *flags.WebSystemdSocket) {
		return web.ListenAndServe(server, flags, logger)
	}
	if flags.WebListenAddresses == nil || len(*flags.WebListenAddresses) == 0 {
		return web.ErrNoListeners
	}
	for _, a := range *flags.WebListenAddresses {
		if strings.HasPrefix(a, "vsock://") {
			return web.ListenAndServe(server, flags, logger)
		}
	}
	limiter := newConnLimiter(maxConns)
	limiter.install(server)
	listeners := make([]net.Listener, 0, len(*flags.WebListenAddresses))
	for _, address := range *flags.WebListenAddresses {
		l, err := net.Listen("tcp", address)
		if err != nil {
			for _, o := range listeners {
				o.Close()
			}
			return err
		}
		listeners = append(listeners, limiter.listener(l))
	}
	defer func() {
		for _, l := range listeners {
			l.Close()
		}
	}()
	return web.ServeMultiple(listeners, server, flags, logger)
}

// connLimiter caps the connections of one server. It learns what each
// connection is doing from the server's ConnState hook. A connection that
// has not completed a request header (new: nothing or half a header sent,
// TLS handshake included) or sits between requests (idle keep-alive) holds
// nothing the server owes anyone, so when the limit is full the oldest such
// connection is closed to make room: a flood of silent, half-header or idle
// connections cannot lock scrapes out. Only connections serving a request
// (active, and hijacked ones until they close) are never closed; while all
// are, new ones wait in the listen backlog, and the server's timeouts end
// slow requests.
type connLimiter struct {
	max int

	mu    sync.Mutex
	room  *sync.Cond // signalled when a connection closes or becomes evictable
	seq   uint64     // orders state changes: lower is older
	conns map[*limitedConn]*connSlot
}

type connSlot struct {
	state http.ConnState
	seq   uint64 // when the connection entered state
}

// evictable reports whether a connection in state may be closed to make
// room: it is not serving a request.
func evictable(state http.ConnState) bool {
	return state == http.StateNew || state == http.StateIdle
}

func newConnLimiter(max int) *connLimiter {
	l := &connLimiter{max: max, conns: map[*limitedConn]*connSlot{}}
	l.room = sync.NewCond(&l.mu)
	return l
}

func (l *connLimiter) oldestEvictableLocked() *limitedConn {
	var victim *limitedConn
	var oldest uint64
	for c, s := range l.conns {
		if evictable(s.state) && (victim == nil || s.seq < oldest) {
			victim, oldest = c, s.seq
		}
	}
	return victim
}

// install hooks the limiter into the server's connection states, and its
// handler, so that a request body is never waited for when nothing reads
// it (slowbody.go).
func (l *connLimiter) install(s *http.Server) {
	prev := s.ConnState
	s.ConnState = func(c net.Conn, st http.ConnState) {
		l.track(c, st)
		if prev != nil {
			prev(c, st)
		}
	}
	prevCtx := s.ConnContext
	s.ConnContext = func(ctx context.Context, c net.Conn) context.Context {
		if prevCtx != nil {
			ctx = prevCtx(ctx, c)
		}
		return context.WithValue(ctx, connKey{}, c)
	}
	s.Handler = unreadBodyNotAwaited(s.Handler)
}

// limitedOf finds the limiter's connection under the server's view of it (a
// *tls.Conn under TLS).
func limitedOf(c net.Conn) *limitedConn {
	if tc, ok := c.(*tls.Conn); ok {
		c = tc.NetConn()
	}
	lc, _ := c.(*limitedConn)
	return lc
}

func (l *connLimiter) track(c net.Conn, st http.ConnState) {
	lc := limitedOf(c)
	if lc == nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	s := l.conns[lc]
	if s == nil {
		return // closed to make room, or already closed
	}
	if st == http.StateClosed {
		delete(l.conns, lc)
		l.room.Broadcast()
		return
	}
	// A hijacked connection is no longer the server's, but it is still
	// open: it keeps its place (never evicted) until it is closed.
	l.seq++
	s.state, s.seq = st, l.seq
	if evictable(st) {
		l.room.Broadcast()
	}
	if st == http.StateActive {
		l.refusedBodyNotAwaited(lc, s.seq)
	}
}

// admit registers a new connection, closing the oldest connection that is
// not serving a request when the limit is reached. While every connection
// is serving one it waits (the connection waits as it would in the listen
// backlog: requests are short, and slow ones are cut by the server's
// timeouts), until closed reports true; then it reports false.
func (l *connLimiter) admit(c *limitedConn, closed func() bool) bool {
	l.mu.Lock()
	var victim *limitedConn
	for len(l.conns) >= l.max {
		if victim = l.oldestEvictableLocked(); victim != nil {
			delete(l.conns, victim)
			break
		}
		if closed() {
			l.mu.Unlock()
			return false
		}
		l.room.Wait()
	}
	l.seq++
	l.conns[c] = &connSlot{state: http.StateNew, seq: l.seq}
	l.mu.Unlock()
	if victim != nil {
		// The raw connection: closing a *tls.Conn could first try to
		// send an alert to a peer that does not read.
		victim.Close()
	}
	return true
}

func (l *connLimiter) forget(c *limitedConn) {
	l.mu.Lock()
	delete(l.conns, c)
	l.room.Broadcast()
	l.mu.Unlock()
}

func (l *connLimiter) listener(inner net.Listener) net.Listener {
	return &limitListener{Listener: inner, l: l}
}

type limitListener struct {
	net.Listener
	l      *connLimiter
	closed atomic.Bool
}

func (ll *limitListener) Accept() (net.Conn, error) {
	c, err := ll.Listener.Accept()
	if err != nil {
		return nil, err
	}
	lc := &limitedConn{Conn: c, l: ll.l}
	if !ll.l.admit(lc, ll.closed.Load) {
		c.Close()
		return nil, net.ErrClosed
	}
	return lc, nil
}

// Close also ends a wait for room, so that Serve returns.
func (ll *limitListener) Close() error {
	ll.closed.Store(true)
	ll.l.mu.Lock()
	ll.l.room.Broadcast()
	ll.l.mu.Unlock()
	return ll.Listener.Close()
}

type limitedConn struct {
	net.Conn
	l    *connLimiter
	once sync.Once
	// reached: the request the connection serves reached the server's
	// own handler (slowbody.go).
	reached atomic.Bool
}

func (c *limitedConn) Close() error {
	c.once.Do(func() { c.l.forget(c) })
	return c.Conn.Close()
}

// webAuth is what a --web.config.file says about authentication: whether
// every request must present basic auth or a verified client certificate.
type webAuth struct {
	BasicAuthUsers  map[string]string `yaml:"basic_auth_users"`
	TLSServerConfig struct {
		CertFile       string `yaml:"cert_file"`
		Cert           string `yaml:"cert"`
		ClientAuthType string `yaml:"client_auth_type"`
	} `yaml:"tls_server_config"`
}

func readWebAuth(path string) (webAuth, error) {
	var w webAuth
	if path == "" {
		return w, nil
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return w, fmt.Errorf("read web config: %w", err)
	}
	if err := yaml.Unmarshal(b, &w); err != nil {
		return w, fmt.Errorf("web config %q: %w", path, err)
	}
	return w, nil
}

// authenticated reports whether the web config makes every request prove
// who it is.
func (w webAuth) authenticated() bool {
	return len(w.BasicAuthUsers) > 0 || w.TLSServerConfig.ClientAuthType == "RequireAndVerifyClientCert"
}

// tls reports whether the web config serves TLS.
func (w webAuth) tls() bool {
	return w.TLSServerConfig.CertFile != "" || w.TLSServerConfig.Cert != ""
}

// errProxyBasicAuth: the Amy proxy forwards the client's Authorization
// header (its Amy bearer token), so it cannot also ask for basic auth.
var errProxyBasicAuth = errors.New("basic_auth_users cannot be used on an Amy proxy (clients send their Amy bearer token in Authorization); use client certificates (client_auth_type: RequireAndVerifyClientCert)")

// isLoopback reports whether a request's peer is on this machine.
func isLoopback(r *http.Request) bool {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = r.RemoteAddr
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// remoteWritesAllowed reads the web config at every call (it is small, and
// only the rare state-changing requests ask), so that adding auth to it
// opens ingest to other hosts without a restart, as the toolkit re-reads it.
func remoteWritesAllowed(path string) func() bool {
	return func() bool {
		w, err := readWebAuth(path)
		return err == nil && w.authenticated()
	}
}
