package amy

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
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
			if resp.Header.Get("X-End-To-End") != "kept" || resp.Header.Get("Content-Type") != "application/json" {
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
	if l := e.logs.Lines("client's token", `"key_source":"api_key"`); len(l) != 1 {
		t.Errorf("want one line saying the client's token was refused and naming the configured key's source:\n%s", e.logs)
	}
	if l := e.logs.Lines("configured API key"); len(l) != 0 {
		t.Errorf("the configured key was blamed: %q", l)
	}
}

// TestProxyOverTLSDropsHopHeadersAndStreams: the same over an HTTPS
// upstream (the proxy's own TLS dialing), and an event stream through it
// is tapped.
func TestProxyOverTLSDropsHopHeadersAndStreams(t *testing.T) {
	upstream := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/events") {
			w.Header().Set("Content-Type", "text/event-stream")
			fmt.Fprint(w, "id: 1\nevent: turn.started\ndata: {\"turn_id\":\"t_tls\"}\n\nid: 2\nevent: turn.completed\ndata: {\"turn_id\":\"t_tls\",\"result\":{\"cost_usd\":0.5}}\n\n")
			return
		}
		c, buf, err := w.(http.Hijacker).Hijack()
		if err != nil {
			t.Error(err)
			return
		}
		defer c.Close()
		body := `{"ok":true}`
		fmt.Fprintf(buf, "HTTP/1.1 200 OK\r\nConnection: close, X-Secret-Hop\r\nX-Secret-Hop: s3cr3t\r\nX-End-To-End: kept\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", len(body), body)
		buf.Flush()
	}))
	defer upstream.Close()
	e := newEnv(t, envOpts{})
	up := e.up
	up.BaseURL, _ = url.Parse(upstream.URL)
	tr := newHopTransport(upstream.Client().Transport.(*http.Transport).TLSClientConfig)
	px := httptest.NewServer(newProxy(e.ctx, up, e.store, e.client, e.log, nil, tr))
	defer px.Close()
	resp, err := http.Get(px.URL + "/v1/turns/t1")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || resp.Header.Get("X-Secret-Hop") != "" || resp.Header.Get("X-End-To-End") != "kept" {
		t.Fatalf("over TLS: %d %v", resp.StatusCode, resp.Header)
	}
	resp, err = http.Get(px.URL + "/v1/turns/t_tls/events")
	if err != nil {
		t.Fatal(err)
	}
	io.ReadAll(resp.Body)
	resp.Body.Close()
	e.waitMetric(t, `amy_turns_finished_total{outcome="completed"}`, 1)
}
