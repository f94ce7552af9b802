package app

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"golang.org/x/crypto/bcrypt"
)

// scrapeGuard bounds a scrape that must get through: generous (a scrape
// takes milliseconds), and below the servers' header timeout, the only
// thing that freed a slot held by a silent connection before.
const scrapeGuard = 5 * time.Second

// TestSilentConnectionsCannotLockScrapesOut is issue 19's 1,100 silent TCP
// connections (no request, no TLS handshake; or half a header), scaled
// down: with the limit filled several times over by connections that never
// complete a request header, an authenticated scrape still gets its answer,
// over plain HTTP and over TLS with basic auth.
func TestSilentConnectionsCannotLockScrapesOut(t *testing.T) {
	if serverReadHeaderTimeout <= scrapeGuard {
		t.Fatalf("the guard (%v) must stay below the header timeout (%v), or this test cannot fail", scrapeGuard, serverReadHeaderTimeout)
	}
	dir := t.TempDir()
	certFile, keyFile, pool := selfSigned(t, dir)
	hash, err := bcrypt.GenerateFromPassword([]byte("s3cret"), bcrypt.MinCost)
	if err != nil {
		t.Fatal(err)
	}
	tlsAuth := filepath.Join(dir, "web.yml")
	if err := os.WriteFile(tlsAuth, []byte(fmt.Sprintf("tls_server_config:\n  cert_file: %s\n  key_file: %s\nbasic_auth_users:\n  prometheus: %s\n", certFile, keyFile, hash)), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name      string
		webConfig string
		scheme    string
	}{
		{"plain http", "", "http"},
		{"tls and basic auth", tlsAuth, "https"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mux := http.NewServeMux()
			mux.HandleFunc("/metrics", func(w http.ResponseWriter, _ *http.Request) { fmt.Fprintln(w, "up 1") })
			const limit = 8
			addr, stop := startServerWith(t, mux, limit, hardenServer, tc.webConfig)
			defer stop()
			var silent []net.Conn
			defer func() {
				for _, c := range silent {
					c.Close()
				}
			}()
			for i := range limit * 3 {
				c, err := net.Dial("tcp", addr)
				if err != nil {
					t.Fatal(err)
				}
				if i%2 == 1 {
					// Half a header (in clear text: under TLS it is
					// as good as a handshake that never finishes).
					fmt.Fprint(c, "GET /metrics HTTP/1.1\r\nHost: x\r\n")
				}
				silent = append(silent, c)
			}
			client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
			defer client.CloseIdleConnections()
			ctx, cancel := context.WithTimeout(context.Background(), scrapeGuard)
			defer cancel()
			req, _ := http.NewRequestWithContext(ctx, http.MethodGet, tc.scheme+"://"+addr+"/metrics", nil)
			req.SetBasicAuth("prometheus", "s3cret")
			resp, err := client.Do(req)
			if err != nil {
				t.Fatalf("scrape with the connection limit (%d) filled by %d silent connections: %v", limit, len(silent), err)
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("status %d", resp.StatusCode)
			}
		})
	}
}

// TestHijackedConnectionsKeepTheirPlace: a connection taken over from the
// server (an upgrade) is still open, so it stays counted, and is never
// closed to make room, until it is closed (issue 19's tunnels were
// uncounted). No handler of the exporter hijacks today; this keeps any
// future one bounded.
func TestHijackedConnectionsKeepTheirPlace(t *testing.T) {
	hijacked := make(chan net.Conn, 2)
	mux := http.NewServeMux()
	mux.HandleFunc("/hijack", func(w http.ResponseWriter, _ *http.Request) {
		c, _, err := http.NewResponseController(w).Hijack()
		if err != nil {
			t.Error(err)
			return
		}
		hijacked <- c
	})
	mux.HandleFunc("/fast", func(w http.ResponseWriter, _ *http.Request) { fmt.Fprintln(w, "ok") })
	const limit = 2
	addr, stop := startServer(t, mux, limit, hardenServer)
	defer stop()
	var held []net.Conn
	for range limit {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		fmt.Fprint(c, "GET /hijack HTTP/1.1\r\nHost: x\r\n\r\n")
		held = append(held, <-hijacked)
	}
	got := make(chan error, 1)
	go func() {
		client := &http.Client{Timeout: 20 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
		resp, err := client.Get("http://" + addr + "/fast")
		if err == nil {
			resp.Body.Close()
		}
		got <- err
	}()
	time.Sleep(100 * time.Millisecond) // it is waiting, not answered
	select {
	case err := <-got:
		t.Fatalf("answered while the limit was full of hijacked connections (err %v)", err)
	default:
	}
	for _, c := range held {
		if _, err := c.Write([]byte("x")); err != nil {
			t.Fatalf("a hijacked connection was closed to make room: %v", err)
		}
	}
	held[0].Close()
	if err := <-got; err != nil {
		t.Fatalf("the waiting request failed once a hijacked connection closed: %v", err)
	}
	held[1].Close()
}
