package main

import (
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/amp-exporter/amp-exporter/internal/app"
	"github.com/amp-exporter/amp-exporter/internal/statusline"
	"github.com/amp-exporter/amp-exporter/report"
)

// TestDNSRebindingRefused is issue 39's rebinding case: a page on a name
// the attacker controls, resolved to 127.0.0.1, reads the exporter with
// its own name in Host. Every path answers 403 to such a request, and
// still answers the exporter's own names.
func TestDNSRebindingRefused(t *testing.T) {
	base := startExporter(t, generatedThreads(t, 8))
	u, _ := url.Parse(base)
	port := u.Port()
	paths := []struct{ method, path string }{
		{"GET", "/"}, {"GET", "/metrics"}, {"GET", "/config"}, {"GET", "/api/spend"}, {"GET", app.LedgerPath},
		{"GET", "/-/healthy"}, {"GET", "/-/ready"}, {"POST", "/-/reload"}, {"POST", app.IngestPath}, {"GET", "/no/such/path"},
	}
	send := func(method, path, host string) (*http.Response, string) {
		t.Helper()
		req, _ := http.NewRequest(method, base+path, strings.NewReader(""))
		req.Host = host
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp, string(b)
	}
	for _, host := range []string{"evil.example:" + port, "evil.example", "EVIL.example.:" + port, "localhost.evil.example:" + port,
		"127.0.0.1.nip.io:" + port, "[evil.example]:" + port} {
		for _, p := range paths {
			if resp, body := send(p.method, p.path, host); resp.StatusCode != http.StatusForbidden || strings.Contains(body, "threads") {
				t.Errorf("Host %s, %s %s: %d, want 403", host, p.method, p.path, resp.StatusCode)
			}
		}
	}
	for _, host := range []string{"127.0.0.1:" + port, "localhost:" + port, "LocalHost.:" + port, "[::1]:" + port, "10.0.0.7:" + port} {
		for _, p := range paths[:7] {
			if resp, _ := send(p.method, p.path, host); resp.StatusCode != http.StatusOK {
				t.Errorf("Host %q, %s %s: %d, want 200", host, p.method, p.path, resp.StatusCode)
			}
		}
	}
}

// dialingTo is a client that reaches addr whatever name a URL gives, as
// a client does once DNS resolves that name to the exporter.
func dialingTo(addr string) *http.Client {
	var d net.Dialer
	return &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{DisableKeepAlives: true,
		DialContext: func(ctx context.Context, network, _ string) (net.Conn, error) {
			return d.DialContext(ctx, network, addr)
		}}}
}

// A name given with --web.external-name (in any case, with a trailing
// dot) serves the landing page, `report --exporter` and `statusline`; a
// name not given serves none of them. Every answer carries the browser
// hardening headers, the landing page and /metrics included.
func TestExternalNamesServe(t *testing.T) {
	base := startExporter(t, generatedThreads(t, 8), func(o *app.Options) {
		o.ExternalNames = []string{"Exporter.Example.", "amp.corp.example:9974"}
	})
	u, _ := url.Parse(base)
	client := dialingTo(u.Host)
	ctx := context.Background()
	for _, name := range []string{"exporter.example", "EXPORTER.example.", "amp.corp.example"} {
		named := "http://" + net.JoinHostPort(name, u.Port())
		resp, err := client.Get(named + "/")
		if err != nil {
			t.Fatal(err)
		}
		page, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || !strings.Contains(string(page), `href="/metrics"`) {
			t.Errorf("%s: landing page %d", name, resp.StatusCode)
		}
		if l, _, err := report.FetchLedger(ctx, client, named); err != nil || len(l.Entries()) == 0 {
			t.Errorf("%s: report --exporter: %v", name, err)
		}
		if s, err := statusline.Fetch(ctx, client, named); err != nil || s.Version == 0 {
			t.Errorf("%s: statusline: %v", name, err)
		}
	}
	other := "http://" + net.JoinHostPort("other.example", u.Port())
	if _, _, err := report.FetchLedger(ctx, client, other); err == nil || !strings.Contains(err.Error(), "403") {
		t.Errorf("report --exporter through a name not given: %v, want 403", err)
	}
	if _, err := statusline.Fetch(ctx, client, other); err == nil || !strings.Contains(err.Error(), "403") {
		t.Errorf("statusline through a name not given: %v, want 403", err)
	}
	for _, path := range []string{"/", "/metrics", "/api/spend", "/-/healthy"} {
		for _, b := range []string{base, other} {
			resp, err := client.Get(b + path)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			h := resp.Header
			if h.Get("X-Content-Type-Options") != "nosniff" || h.Get("X-Frame-Options") != "DENY" ||
				!strings.Contains(h.Get("Content-Security-Policy"), "default-src 'none'") || !strings.Contains(h.Get("Content-Security-Policy"), "frame-ancestors 'none'") {
				t.Errorf("%s%s: headers %v", b, path, h)
			}
		}
	}
}

// A --web.external-name that is no host name stops the exporter at start.
func TestExternalNameChecked(t *testing.T) {
	for _, bad := range []string{"http://exporter.example", "exporter.example/metrics", "exp orter", "exporter..example", ""} {
		var out, errOut bytes.Buffer
		code := run([]string{"--web.listen-address=127.0.0.1:0", "--web.external-name=" + bad, "--config.file=" + generatedThreads(t, 1)}, &out, &errOut)
		if code != 1 || !strings.Contains(errOut.String(), "web.external-name") {
			t.Errorf("%q: exit %d, %s", bad, code, errOut.String())
		}
	}
}
