package app

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/amp-exporter/amp-exporter/config"
	"github.com/amp-exporter/amp-exporter/store"
)

// TestAmyProxyConnectionsStayBounded is issue 19 on an Amy proxy's
// listener, with its limit of 5: 12 websocket upgrades (which stayed open
// as tunnels, uncounted) and 15 silent or half-header connections, and a
// client's request still goes through.
func TestAmyProxyConnectionsStayBounded(t *testing.T) {
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Upgrade") == "" {
			fmt.Fprint(w, "upstream saw "+r.URL.Path)
			return
		}
		c, rw, err := http.NewResponseController(w).Hijack()
		if err != nil {
			return
		}
		defer c.Close()
		fmt.Fprint(rw, "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n")
		rw.Flush()
		_ = c.SetDeadline(time.Now().Add(30 * time.Second))
		io.Copy(c, rw) // a tunnel until the client goes
	}))
	defer upstream.Close()
	addr := freeAddr(t)
	cfg := &config.Config{Amy: []config.AmyUpstream{{Name: "prod", BaseURL: upstream.URL,
		Proxy: config.AmyProxy{ListenAddress: addr}}}}
	log := slog.New(slog.DiscardHandler)
	st := store.NewAmyStore(store.NewLabelCap(100, nil), nil)
	proxies, err := proxiesFor(cfg, st, log)
	if err != nil || len(proxies) != 1 {
		t.Fatalf("proxies: %v %d", err, len(proxies))
	}
	const limit = 5
	done := make(chan error, 1)
	go func() { done <- proxies[0].serve(limit, log) }()
	defer func() { proxies[0].server.Close(); <-done }()
	var conns []net.Conn
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	dial := func() net.Conn {
		t.Helper()
		for deadline := time.Now().Add(10 * time.Second); ; {
			c, err := net.Dial("tcp", addr)
			if err == nil {
				conns = append(conns, c)
				return c
			}
			if time.Now().After(deadline) {
				t.Fatal(err)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	for i := range 12 {
		c := dial()
		_ = c.SetDeadline(time.Now().Add(20 * time.Second)) // a guard against hangs
		fmt.Fprint(c, "GET /v1/ws HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n")
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			t.Fatalf("upgrade %d: %v", i, err)
		}
		resp.Body.Close()
		if resp.StatusCode == http.StatusSwitchingProtocols {
			t.Fatalf("upgrade %d: the proxy opened a tunnel", i)
		}
	}
	for i := range 15 {
		c := dial()
		if i%2 == 1 {
			fmt.Fprint(c, "GET /v1/turns HTTP/1.1\r\nHost: 127.0.0.1\r\n")
		}
	}
	rctx, rcancel := context.WithTimeout(context.Background(), scrapeGuard)
	defer rcancel()
	req, _ := http.NewRequestWithContext(rctx, http.MethodGet, "http://"+addr+"/v1/turns", nil)
	client := &http.Client{Transport: &http.Transport{}}
	defer client.CloseIdleConnections()
	resp, err := client.Do(req)
	if err != nil {
		t.Fatalf("a request through the proxy with its limit (%d) full: %v", limit, err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(b) != "upstream saw /v1/turns" {
		t.Fatalf("proxied answer %q", b)
	}
}
