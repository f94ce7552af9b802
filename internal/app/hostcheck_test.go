package app

import (
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/amp-exporter/amp-exporter/config"
	"github.com/amp-exporter/amp-exporter/source/amy"
	"github.com/amp-exporter/amp-exporter/store"
)

// Which Host headers a server answers: IP literals (v4, v6 bracketed or
// not, zones), localhost and its subdomains, the machine's host name, the
// listen address's name and the external names, each with or without a
// port, in any case, with or without the trailing dot; nothing else.
func TestHostNamesAllow(t *testing.T) {
	names, err := newHostNames("Build-Box", []string{"exporter.corp.example", "AMP.example.:443"})
	if err != nil {
		t.Fatal(err)
	}
	names = names.with([]string{"metrics.lan:9974", "0.0.0.0:9975", ":9976", "[::]:9977", "vsock://1:2"})
	for _, tc := range []struct {
		host string
		want bool
	}{
		{"127.0.0.1:9974", true},
		{"127.0.0.1", true},
		{"127.0.0.1.:9974", true},
		{"10.1.2.3:9974", true}, // a pod IP, a LAN address: no name to rebind
		{"[::1]:9974", true},
		{"[::1]", true},
		{"[::1]:", true},
		{"::1", true},
		{"[fe80::1%25eth0]:9974", true},
		{"[::ffff:127.0.0.1]:9974", true},
		{"localhost:9974", true},
		{"LOCALHOST", true},
		{"localhost.:9974", true},
		{"amp.localhost:9974", true},
		{"build-box:9974", true},
		{"Build-Box.", true},
		{"metrics.lan:9974", true},
		{"metrics.lan:1", true}, // the port is the listener's business
		{"exporter.corp.example", true},
		{"EXPORTER.corp.example.:9974", true},
		{"amp.example:9974", true},
		{"", true}, // HTTP/1.0 without Host: never a browser
		{"evil.example:9974", false},
		{"evil.example.", false},
		{"localhost.evil.example", false},
		{"127.0.0.1.nip.io:9974", false},
		{"localhostx:9974", false},
		{"corp.example", false},
		{"x.exporter.corp.example", false},
		{"build-box.evil.example", false},
		{"[evil.example]:9974", false},
		{"[127.0.0.1]:9974", false}, // brackets hold IPv6 only
		{"[::1", false},
		{"[::1]x", false},
		{"localhost:http", false},
		{"localhost:9974:1", false},
		{"2130706433", false}, // a number, not an address: browsers send 127.0.0.1
		{":9974", false},
		{".", false},
	} {
		if got := names.allows(tc.host); got != tc.want {
			t.Errorf("%q: %v, want %v", tc.host, got, tc.want)
		}
	}
}

// External names must be host names; the machine's name is skipped when
// it is not one (it cannot be configured, so it cannot fail the start).
func TestNewHostNamesChecks(t *testing.T) {
	for _, bad := range []string{"", "http://exporter.example", "exporter.example/x", "exp orter", "a..b", "user@host", "[x]", strings.Repeat("a", 64) + ".example"} {
		if _, err := newHostNames("", []string{bad}); err == nil || !strings.Contains(err.Error(), "--web.external-name") {
			t.Errorf("%q: %v", bad, err)
		}
	}
	n, err := newHostNames("not a name", []string{"ok.example", "[::1]:80", "10.0.0.1"})
	if err != nil || len(n.set) != 3 || n.allows("not a name") {
		t.Errorf("%v %v", n.set, err)
	}
}

// An Amy proxy answers its own listen address's name, the exporter's
// names and loopback, and refuses another name before the upstream sees
// anything.
func TestAmyProxyRefusesOtherHosts(t *testing.T) {
	var seen atomic.Int64
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seen.Add(1)
		io.WriteString(w, "upstream")
	}))
	defer upstream.Close()
	cfg := &config.Config{Amy: []config.AmyUpstream{{Name: "prod", BaseURL: upstream.URL,
		Proxy: config.AmyProxy{ListenAddress: "amy-proxy.lan:8080"}}}}
	log := slog.New(slog.DiscardHandler)
	src := amy.NewSource(store.NewAmyStore(store.NewLabelCap(100, nil), nil), amy.SourceOptions{Logger: log})
	if err := src.Apply(cfg); err != nil {
		t.Fatal(err)
	}
	names, _ := newHostNames("", []string{"exporter.example"})
	proxies, err := amyProxies(cfg, src, names)
	if err != nil || len(proxies) != 1 {
		t.Fatalf("proxies: %v %d", err, len(proxies))
	}
	for _, tc := range []struct {
		host string
		want int
	}{
		{"127.0.0.1:8080", 200}, {"localhost:8080", 200}, {"amy-proxy.lan:8080", 200}, {"exporter.example", 200},
		{"evil.example:8080", 403},
	} {
		before := seen.Load()
		req := httptest.NewRequest("GET", "/v1/threads", nil)
		req.Host = tc.host
		rec := httptest.NewRecorder()
		proxies[0].server.Handler.ServeHTTP(rec, req)
		if rec.Code != tc.want || (tc.want == 403) != (seen.Load() == before) {
			t.Errorf("%s: %d (upstream asked: %v), want %d", tc.host, rec.Code, seen.Load() != before, tc.want)
		}
	}
}

// Fuzzing the Host parser: it never panics, and what it returns is a
// fixed point (already lower case, without port or trailing dot).
func FuzzHostOf(f *testing.F) {
	for _, s := range []string{"127.0.0.1:9974", "[::1]:80", "LocalHost.:1", "[fe80::1%25eth0]", "::1", "a.b.", "[x]", "", ":", "[::1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		h, ok := hostOf(s)
		if !ok {
			return
		}
		if h == "" || h != strings.ToLower(h) {
			t.Fatalf("%q: %q", s, h)
		}
		if strings.HasSuffix(h, ".") {
			return // "a.." loses one dot: no name is written so
		}
		if again, ok := hostOf(h); !ok || again != h {
			t.Fatalf("%q: %q, then %q %v", s, h, again, ok)
		}
	})
}
