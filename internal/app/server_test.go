package app

import (
	"bufio"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/exporter-toolkit/web"
)

// TestManyConcurrentScrapes: 100 scrapers at once, as in issue 10 (where 902
// of 1,000 answers were 503 with a hard-coded limit of 10), all answered
// with --web.max-requests at its default.
func TestManyConcurrentScrapes(t *testing.T) {
	reg := prometheus.NewRegistry()
	gate := make(chan struct{})
	var waiting atomic.Int64
	reg.MustRegister(blockingCollector{func() {
		waiting.Add(1)
		<-gate // every scrape is in flight at once
	}})
	mux := http.NewServeMux()
	var ready atomic.Bool
	if err := routes(mux, routeDeps{telemetryPath: "/metrics", registry: reg, ready: &ready,
		config: func() string { return "" }, logger: slog.New(slog.DiscardHandler), maxRequests: DefaultMaxRequests}); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(mux)
	defer srv.Close()
	const scrapers = DefaultMaxRequests
	codes := make(chan int, scrapers)
	var wg sync.WaitGroup
	for range scrapers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			resp, err := http.Get(srv.URL + "/metrics")
			if err != nil {
				codes <- 0
				return
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			codes <- resp.StatusCode
		}()
	}
	for deadline := time.Now().Add(20 * time.Second); waiting.Load() < scrapers; {
		if time.Now().After(deadline) {
			break // some were refused: the counts below say how many
		}
		time.Sleep(5 * time.Millisecond)
	}
	close(gate)
	wg.Wait()
	close(codes)
	for c := range codes {
		if c != http.StatusOK {
			t.Errorf("a scrape got %d", c)
		}
	}
}

// TestWriteRoutesAreLocalUnlessAuthenticated: ingest and reload change
// state; from another host they need the web config's auth.
func TestWriteRoutesAreLocalUnlessAuthenticated(t *testing.T) {
	reloads := make(chan reloadRequest, 1)
	ingested := 0
	authOn := false
	mux := http.NewServeMux()
	var ready atomic.Bool
	if err := routes(mux, routeDeps{telemetryPath: "/metrics", registry: prometheus.NewRegistry(), ready: &ready,
		reloads: reloads, config: func() string { return "" }, logger: slog.New(slog.DiscardHandler),
		ingest:        http.HandlerFunc(func(http.ResponseWriter, *http.Request) { ingested++ }),
		ingestEnabled: func() bool { return true },
		remoteWrites:  func() bool { return authOn },
	}); err != nil {
		t.Fatal(err)
	}
	do := func(remote, path string) int {
		req := httptest.NewRequest(http.MethodPost, path, strings.NewReader("{}\n"))
		req.RemoteAddr = remote
		req.Header.Set("Content-Type", "application/x-ndjson")
		rec := httptest.NewRecorder()
		select {
		case req2 := <-reloads:
			req2.reply <- nil
		default:
		}
		go func() {
			if r, ok := <-reloads; ok {
				r.reply <- nil
			}
		}()
		mux.ServeHTTP(rec, req)
		return rec.Code
	}
	for _, path := range []string{IngestPath, "/-/reload"} {
		if c := do("192.0.2.7:40000", path); c != http.StatusForbidden {
			t.Errorf("%s from another host without auth: %d, want 403", path, c)
		}
		if c := do("[2001:db8::1]:40000", path); c != http.StatusForbidden {
			t.Errorf("%s from another host (v6) without auth: %d, want 403", path, c)
		}
		if c := do("127.0.0.1:40000", path); c != http.StatusOK {
			t.Errorf("%s from loopback: %d", path, c)
		}
		if c := do("[::1]:40000", path); c != http.StatusOK {
			t.Errorf("%s from ::1: %d", path, c)
		}
	}
	authOn = true
	if c := do("192.0.2.7:40000", IngestPath); c != http.StatusOK {
		t.Errorf("ingest from another host with auth: %d", c)
	}
	if ingested != 3 {
		t.Errorf("ingest handler reached %d times, want 3", ingested)
	}
}

func TestWebAuthFromConfig(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	for _, tc := range []struct {
		body string
		auth bool
	}{
		{"", false},
		{"tls_server_config:\n  cert_file: a\n  key_file: b\n", false},
		{"basic_auth_users:\n  alice: $2y$10$x\n", true},
		{"tls_server_config:\n  cert_file: a\n  key_file: b\n  client_auth_type: RequireAndVerifyClientCert\n  client_ca_file: c\n", true},
		{"tls_server_config:\n  cert_file: a\n  key_file: b\n  client_auth_type: VerifyClientCertIfGiven\n", false},
	} {
		got := remoteWritesAllowed(write("w.yml", tc.body))()
		if got != tc.auth {
			t.Errorf("%q: authenticated=%v, want %v", tc.body, got, tc.auth)
		}
	}
	if remoteWritesAllowed("")() || remoteWritesAllowed(filepath.Join(dir, "missing.yml"))() {
		t.Error("no (readable) web config must not open writes to other hosts")
	}
}

func startServer(t *testing.T, h http.Handler, maxConns int, harden func(*http.Server)) (string, func()) {
	t.Helper()
	return startServerWith(t, h, maxConns, harden, "")
}

// startServerWith serves h on a loopback port through listenAndServe, with
// the exporter-toolkit web config cfgFile ("" for none).
func startServerWith(t *testing.T, h http.Handler, maxConns int, harden func(*http.Server), cfgFile string) (string, func()) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	srv := &http.Server{Handler: h}
	harden(srv)
	addrs := []string{addr}
	flags := &web.FlagConfig{WebListenAddresses: &addrs, WebConfigFile: &cfgFile}
	done := make(chan error, 1)
	go func() { done <- listenAndServe(srv, flags, maxConns, slog.New(slog.DiscardHandler)) }()
	for deadline := time.Now().Add(10 * time.Second); ; {
		c, err := net.Dial("tcp", addr)
		if err == nil {
			c.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Fatal(err)
		}
		time.Sleep(10 * time.Millisecond)
	}
	return addr, func() { srv.Close(); <-done }
}

// idleConn makes one keep-alive request and leaves the connection idle.
func idleConn(t *testing.T, addr string) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(c, "GET /-/healthy HTTP/1.1\r\nHost: x\r\n\r\n")
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return c
}

// TestIdleConnectionsCannotLockScrapesOut is issue 10's 19,990 idle
// keep-alive connections, scaled down: with the connection limit reached by
// idle connections, a scrape still gets its answer.
func TestIdleConnectionsCannotLockScrapesOut(t *testing.T) {
	mux := http.NewServeMux()
	mux.HandleFunc("/-/healthy", func(w http.ResponseWriter, _ *http.Request) { fmt.Fprintln(w, "Healthy.") })
	const limit = 8
	addr, stop := startServer(t, mux, limit, hardenServer)
	defer stop()
	var idle []net.Conn
	for range limit * 2 {
		idle = append(idle, idleConn(t, addr))
	}
	defer func() {
		for _, c := range idle {
			c.Close()
		}
	}()
	client := &http.Client{Timeout: 20 * time.Second}
	resp, err := client.Get("http://" + addr + "/-/healthy")
	if err != nil {
		t.Fatalf("scrape with the connection limit filled by idle connections: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("status %d", resp.StatusCode)
	}
}

// TestServersTimeOutSlowAndIdleClients: the main server and the proxy's
// server set idle and read timeouts (a body at 1 byte per 4 s was never
// timed out).
func TestServersTimeOutSlowAndIdleClients(t *testing.T) {
	t.Parallel() // waits out a read timeout: alongside the other waiters
	for name, harden := range map[string]func(*http.Server){"main": hardenServer, "proxy": hardenProxyServer} {
		s := &http.Server{}
		harden(s)
		if s.IdleTimeout <= 0 || s.ReadTimeout <= 0 || s.ReadHeaderTimeout <= 0 || s.MaxHeaderBytes <= 0 {
			t.Errorf("%s server: idle %v read %v header %v max header %d", name, s.IdleTimeout, s.ReadTimeout, s.ReadHeaderTimeout, s.MaxHeaderBytes)
		}
	}
	// The read timeout really ends a trickled body.
	mux := http.NewServeMux()
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		if _, err := io.ReadAll(r.Body); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
		}
	})
	addr, stop := startServer(t, mux, 0, func(s *http.Server) { hardenServer(s); s.ReadTimeout = 300 * time.Millisecond })
	defer stop()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	fmt.Fprintf(c, "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\nab")
	_ = c.SetReadDeadline(time.Now().Add(20 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err == nil {
		resp.Body.Close()
		if resp.StatusCode == http.StatusOK {
			t.Fatal("a body that never arrived was accepted")
		}
	} else if ne, ok := err.(net.Error); ok && ne.Timeout() {
		t.Fatal("the server never ended the trickled request")
	}
}

// blockingCollector is an unchecked collector whose Collect runs fn.
type blockingCollector struct{ fn func() }

func (blockingCollector) Describe(chan<- *prometheus.Desc)   {}
func (b blockingCollector) Collect(chan<- prometheus.Metric) { b.fn() }

// TestBusyConnectionsMakeNewOnesWait: with every connection busy, a new one
// waits for a free place instead of being refused.
func TestBusyConnectionsMakeNewOnesWait(t *testing.T) {
	t.Parallel() // mostly waiting: alongside the other waiters
	release := make(chan struct{})
	var busy atomic.Int64
	mux := http.NewServeMux()
	mux.HandleFunc("/slow", func(w http.ResponseWriter, _ *http.Request) {
		busy.Add(1)
		<-release
	})
	mux.HandleFunc("/fast", func(w http.ResponseWriter, _ *http.Request) { fmt.Fprintln(w, "ok") })
	const limit = 2
	addr, stop := startServer(t, mux, limit, hardenServer)
	defer stop()
	client := &http.Client{Timeout: 20 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	var wg sync.WaitGroup
	for range limit {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if resp, err := client.Get("http://" + addr + "/slow"); err == nil {
				resp.Body.Close()
			}
		}()
	}
	for deadline := time.Now().Add(10 * time.Second); busy.Load() < limit; {
		if time.Now().After(deadline) {
			t.Fatal("slow requests did not start")
		}
		time.Sleep(5 * time.Millisecond)
	}
	got := make(chan error, 1)
	go func() {
		resp, err := client.Get("http://" + addr + "/fast")
		if err == nil {
			resp.Body.Close()
		}
		got <- err
	}()
	time.Sleep(100 * time.Millisecond) // it is waiting, not refused
	select {
	case err := <-got:
		t.Fatalf("answered while every connection was busy: %v", err)
	default:
	}
	close(release)
	if err := <-got; err != nil {
		t.Fatalf("the waiting request failed: %v", err)
	}
	wg.Wait()
}
