package main

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/alecthomas/kingpin/v2"
	"github.com/prometheus/exporter-toolkit/web"
	"gopkg.in/yaml.v3"
)

// serverFlags bound what HTTP clients can hold on the exporter's servers
// (the main one and every Amy proxy).
type serverFlags struct {
	// maxRequests is node_exporter's --web.max-requests: parallel scrapes
	// of the telemetry path (0: no limit).
	maxRequests int
	// maxConnections bounds open connections per server; at the limit an
	// idle keep-alive connection is closed to make room, and a new one is
	// refused when none is idle (0: no limit).
	maxConnections int
}

// Defaults of the server limits. node_exporter's default for
// --web.max-requests is 40 as well.
const (
	defaultMaxRequests    = 40
	defaultMaxConnections = 512
)

func addServerFlags(app *kingpin.Application, s *serverFlags) {
	app.Flag("web.max-requests", "Maximum number of parallel scrape requests (and, apart, of landing page requests). Use 0 to disable.").
		Default(fmt.Sprint(defaultMaxRequests)).IntVar(&s.maxRequests)
	app.Flag("web.max-connections", "Maximum number of open HTTP connections per listener (idle keep-alive connections are closed first to make room). Use 0 to disable.").
		Default(fmt.Sprint(defaultMaxConnections)).IntVar(&s.maxConnections)
}

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

// connLimiter caps the connections of one server. It learns which are idle
// from the server's ConnState hook, so that a flood of idle keep-alive
// connections cannot lock scrapes out: the oldest idle one is closed to make
// room for a new one.
type connLimiter struct {
	max int

	mu    sync.Mutex
	room  *sync.Cond              // signalled when a connection closes or turns idle
	conns map[string]*trackedConn // by local+remote address
}

type trackedConn struct {
	conn  net.Conn // as the server sees it (a *tls.Conn under TLS)
	state http.ConnState
	since time.Time
}

func newConnLimiter(max int) *connLimiter {
	l := &connLimiter{max: max, conns: map[string]*trackedConn{}}
	l.room = sync.NewCond(&l.mu)
	return l
}

// waitRoom blocks while every connection is busy (none idle to close), so
// that new connections wait in the listen backlog instead of being refused:
// requests are short, and slow clients are cut by the server's timeouts.
func (l *connLimiter) waitRoom() {
	l.mu.Lock()
	defer l.mu.Unlock()
	for len(l.conns) >= l.max && !l.anyIdleLocked() {
		l.room.Wait()
	}
}

func (l *connLimiter) anyIdleLocked() bool {
	for _, t := range l.conns {
		if t.state == http.StateIdle {
			return true
		}
	}
	return false
}

func connKey(c net.Conn) string { return c.LocalAddr().String() + "|" + c.RemoteAddr().String() }

// install hooks the limiter into the server's connection states.
func (l *connLimiter) install(s *http.Server) {
	prev := s.ConnState
	s.ConnState = func(c net.Conn, st http.ConnState) {
		l.track(c, st)
		if prev != nil {
			prev(c, st)
		}
	}
}

func (l *connLimiter) track(c net.Conn, st http.ConnState) {
	k := connKey(c)
	l.mu.Lock()
	defer l.mu.Unlock()
	t := l.conns[k]
	if t == nil {
		return // refused, or already closed
	}
	switch st {
	case http.StateClosed, http.StateHijacked:
		delete(l.conns, k)
		l.room.Broadcast()
	default:
		t.conn, t.state, t.since = c, st, time.Now()
		if st == http.StateIdle {
			l.room.Broadcast()
		}
	}
}

// admit registers a new connection, closing the longest-idle one when the
// limit is reached. It reports false when every connection is busy.
func (l *connLimiter) admit(c net.Conn) bool {
	l.mu.Lock()
	var victim net.Conn
	if len(l.conns) >= l.max {
		var oldest *trackedConn
		var oldestKey string
		for k, t := range l.conns {
			if t.state == http.StateIdle && (oldest == nil || t.since.Before(oldest.since)) {
				oldest, oldestKey = t, k
			}
		}
		if oldest == nil {
			l.mu.Unlock()
			return false
		}
		victim = oldest.conn
		delete(l.conns, oldestKey)
	}
	l.conns[connKey(c)] = &trackedConn{conn: c, state: http.StateNew, since: time.Now()}
	l.mu.Unlock()
	if victim != nil {
		victim.Close()
	}
	return true
}

func (l *connLimiter) forget(c net.Conn) {
	l.mu.Lock()
	delete(l.conns, connKey(c))
	l.room.Broadcast()
	l.mu.Unlock()
}

func (l *connLimiter) listener(inner net.Listener) net.Listener {
	return &limitListener{Listener: inner, l: l}
}

type limitListener struct {
	net.Listener
	l *connLimiter
}

func (ll *limitListener) Accept() (net.Conn, error) {
	for {
		ll.l.waitRoom()
		c, err := ll.Listener.Accept()
		if err != nil {
			return nil, err
		}
		if ll.l.admit(c) {
			return &limitedConn{Conn: c, l: ll.l}, nil
		}
		c.Close() // filled meanwhile by another listener of the server
	}
}

type limitedConn struct {
	net.Conn
	l    *connLimiter
	once sync.Once
}

func (c *limitedConn) Close() error {
	c.once.Do(func() { c.l.forget(c.Conn) })
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
