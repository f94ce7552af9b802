package amy

import (
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"testing"
)

// TestProxyDropsHopByHopHeadersNamedInConnection is issue 10's leak: an
// upstream answering `Connection: close, X-Secret-Hop` (Go's client drops
// the Connection header on close before the reverse proxy reads it).
func TestProxyDropsHopByHopHeadersNamedInConnection(t *testing.T) {
	for _, conn := range []string{"close, X-Secret-Hop", "X-Secret-Hop, close", "keep-alive, X-Secret-Hop", "X-Secret-Hop"} {
		t.Run(conn, func(t *testing.T) {
			// A raw upstream, so the header goes out exactly as written.
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			defer ln.Close()
			go func() {
				for {
					c, err := ln.Accept()
					if err != nil {
						return
					}
					go func() {
						defer c.Close()
						buf := make([]byte, 4096)
						c.Read(buf)
						body := `{"ok":true}`
						fmt.Fprintf(c, "HTTP/1.1 200 OK\r\nConnection: %s\r\nX-Secret-Hop: s3cr3t\r\nX-End-To-End: kept\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", conn, len(body), body)
					}()
				}
			}()
			e := newEnv(t, envOpts{})
			up := e.up
			up.BaseURL, _ = url.Parse("http://" + ln.Addr().String())
			px := httptest.NewServer(NewProxy(e.ctx, up, e.store, e.client, e.log, nil))
			defer px.Close()
			resp, err := http.Get(px.URL + "/v1/turns/t1")
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if v := resp.Header.Get("X-Secret-Hop"); v != "" {
				t.Errorf("X-Secret-Hop leaked through the proxy: %q", v)
			}
			if resp.Header.Get("Content-Type") != "application/json" {
				t.Errorf("an end-to-end header was dropped: %v", resp.Header)
			}
		})
	}
}

// TestProxyLearnedTurnFallsBackToConfiguredKey: the client's token expires
// between creating the turn and the follower's reads; the follower goes on
// with the upstream's key, and the log line names the right key.
func TestProxyLearnedTurnFallsBackToConfiguredKey(t *testing.T) {
	e, px := newProxyEnv(t)
	r := call(t, e.ctx, "POST", px.URL+"/v1/turns", "Bearer "+expiredKey, `{"messages":[]}`)
	if r.status != http.StatusCreated {
		t.Fatalf("create: %d", r.status)
	}
	e.waitMetric(t, `amy_turns_finished_total{outcome="completed"}`, 1)
	waitStopped(t, e.client)
	reqs := e.amy.requestsFor("turn_new")
	if len(reqs) != 2 || reqs[0].Auth != "Bearer "+expiredKey || reqs[1].Auth != "Bearer "+goodKey {
		var auths []string
		for _, q := range reqs {
			auths = append(auths, q.Auth[:min(len(q.Auth), 20)])
		}
		t.Fatalf("want the client's token once, then the configured key; got %d requests %q", len(reqs), auths)
	}
	if l := e.logs.lines("client's token", `"key_source":"api_key"`); len(l) != 1 {
		t.Errorf("want one line saying the client's token was refused and naming the configured key's source:\n%s", e.logs)
	}
	if l := e.logs.lines("configured API key"); len(l) != 0 {
		t.Errorf("the configured key was blamed: %q", l)
	}
}
