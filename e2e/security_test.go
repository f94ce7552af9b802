//go:build e2e

package e2e

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
)

// hostAddress is an address of this machine that is not loopback, or "".
func hostAddress(t *testing.T) string {
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range addrs {
		if ipn, ok := a.(*net.IPNet); ok && ipn.IP.To4() != nil && ipn.IP.IsGlobalUnicast() && !ipn.IP.IsLoopback() {
			return ipn.IP.String()
		}
	}
	return ""
}

// TestWriteEndpointsSafeByDefault runs the real binary with the defaults:
// from another address of the host (not loopback) ingest and reload are
// refused, a "simple" cross-origin request and a web page's request are
// refused even locally, and the ingest client's own request counts.
func TestWriteEndpointsSafeByDefault(t *testing.T) {
	host := hostAddress(t)
	var args []string
	remotePort := freePort(t)
	if host != "" {
		args = append(args, fmt.Sprintf("--web.listen-address=%s:%d", host, remotePort))
	} else {
		t.Log("this machine has no non-loopback IPv4 address: the from-another-host part is not exercised")
	}
	e := startExporter(t, exporterOpts{args: args})
	post := func(base, path, contentType, origin, body string) (int, string) {
		req, err := http.NewRequest(http.MethodPost, base+path, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		if contentType != "" {
			req.Header.Set("Content-Type", contentType)
		}
		if origin != "" {
			req.Header.Set("Origin", origin)
		}
		resp, err := (&http.Client{Timeout: 10 * time.Second}).Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	run := readCapture(t, "success-run.jsonl")
	if host != "" {
		remote := fmt.Sprintf("http://%s:%d", host, remotePort)
		for _, path := range []string{"/api/v1/ingest/stream-json", "/-/reload"} {
			if code, body := post(remote, path, "application/x-ndjson", "", run); code != http.StatusForbidden || !strings.Contains(body, "web.config.file") {
				t.Errorf("%s from %s: %d %q, want 403 naming --web.config.file", path, host, code, body)
			}
		}
		// Reading stays open.
		resp, err := http.Get(remote + "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Errorf("/metrics from %s: %d", host, resp.StatusCode)
		}
	}
	if code, _ := post(e.base, "/api/v1/ingest/stream-json", "text/plain", "", run); code != http.StatusUnsupportedMediaType {
		t.Errorf("text/plain ingest: %d, want 415", code)
	}
	if code, _ := post(e.base, "/api/v1/ingest/stream-json", "application/x-ndjson", "http://evil.example", run); code != http.StatusForbidden {
		t.Errorf("ingest from a web page: %d, want 403", code)
	}
	if code, _ := post(e.base, "/-/reload", "text/plain", "http://evil.example", ""); code != http.StatusForbidden {
		t.Errorf("reload from a web page: %d, want 403", code)
	}
	mfs := e.metrics(t)
	if v, _ := value(mfs, "amp_tokens_total", map[string]string{"source": "stream"}); v != 0 {
		t.Fatalf("refused requests counted %v tokens", v)
	}
	if code, body := post(e.base, "/api/v1/ingest/stream-json", "application/x-ndjson", "", run); code != http.StatusOK {
		t.Fatalf("local ndjson ingest: %d %s", code, body)
	}
	e.waitFor(t, 10*time.Second, "the local run counted", func(mfs map[string]*dto.MetricFamily) (bool, string) {
		v, _ := value(mfs, "amp_executions_total", map[string]string{"outcome": "success"})
		return v == 1, fmt.Sprint("successes ", v)
	})
}
