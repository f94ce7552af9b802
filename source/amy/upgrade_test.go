package amy

import (
	"bufio"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestProxyRefusesUpgrades is issue 19's tunnels: through the proxy an
// upstream's 101 handed the connection over (12 websocket or h2c tunnels
// stayed open under a connection limit of 5, untapped and without
// timeouts). The proxy strips Upgrade on the way in, and a 101 from the
// upstream, asked for or not, becomes a 502.
func TestProxyRefusesUpgrades(t *testing.T) {
	var mu sync.Mutex
	var upgradesAsked []string
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		asked := r.Header.Get("Upgrade")
		mu.Lock()
		if asked != "" || strings.Contains(strings.ToLower(r.Header.Get("Connection")), "upgrade") || r.Header.Get("Http2-Settings") != "" {
			upgradesAsked = append(upgradesAsked, r.URL.Path+": "+asked)
		}
		mu.Unlock()
		if asked == "" && r.URL.Path != "/rogue" {
			w.WriteHeader(http.StatusUpgradeRequired)
			return
		}
		if asked == "" {
			asked = "websocket"
		}
		c, rw, err := http.NewResponseController(w).Hijack()
		if err != nil {
			t.Error(err)
			return
		}
		defer c.Close()
		fmt.Fprintf(rw, "HTTP/1.1 101 Switching Protocols\r\nUpgrade: %s\r\nConnection: Upgrade\r\n\r\n", asked)
		rw.Flush()
		// A tunnel: echo whatever comes until the client goes.
		_ = c.SetDeadline(time.Now().Add(30 * time.Second))
		buf := make([]byte, 512)
		for {
			n, err := rw.Read(buf)
			if err != nil {
				return
			}
			c.Write(buf[:n])
		}
	}))
	defer upstream.Close()
	e := newEnv(t, envOpts{})
	base, _ := url.Parse(upstream.URL)
	e.up.BaseURL = base
	px := httptest.NewServer(NewProxy(e.ctx, e.up, e.store, e.client, e.log, nil))
	defer px.Close()

	for _, tc := range []struct{ name, path, headers string }{
		{"websocket", "/v1/ws", "Connection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n"},
		{"h2c", "/v1/turns", "Connection: Upgrade, HTTP2-Settings\r\nUpgrade: h2c\r\nHTTP2-Settings: AAMAAABkAARAAAAAAAIAAAAA\r\n"},
		{"unasked 101", "/rogue", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := net.Dial("tcp", px.Listener.Addr().String())
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			_ = c.SetDeadline(time.Now().Add(20 * time.Second)) // a guard against hangs
			fmt.Fprintf(c, "GET %s HTTP/1.1\r\nHost: amy\r\n%s\r\n", tc.path, tc.headers)
			resp, err := http.ReadResponse(bufio.NewReader(c), nil)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode == http.StatusSwitchingProtocols {
				t.Fatalf("the proxy handed the connection over to the upstream (101 %s)", resp.Header.Get("Upgrade"))
			}
			if tc.path == "/rogue" && resp.StatusCode != http.StatusBadGateway {
				t.Errorf("a 101 nobody asked for: %d, want 502", resp.StatusCode)
			}
		})
	}
	mu.Lock()
	defer mu.Unlock()
	if len(upgradesAsked) != 0 {
		t.Errorf("upgrades reached the upstream: %q", upgradesAsked)
	}
}
