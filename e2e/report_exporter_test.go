//go:build e2e

package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"

	"github.com/amp-exporter/amp-exporter/internal/testsupport/ampservertest"
)

// With the Amp server stand-in in the configuration as well as thread
// files, `report --exporter` against the running exporter prints byte for
// byte the JSON of the report that reads the files and the server itself:
// daily, monthly and per thread, in UTC and in Kathmandu.
func TestReportFromExporterWithTheAmpServer(t *testing.T) {
	srv := ampservertest.New(standinKey, "dev@example.com")
	defer srv.Close()
	threadsDir := t.TempDir()
	days := backfillCorpus(t, threadsDir, srv, time.Now())
	work := t.TempDir()
	keyFile := filepath.Join(work, "amp-key")
	if err := os.WriteFile(keyFile, []byte(standinKey+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(work, "amp-exporter.yml")
	if err := os.WriteFile(cfg, []byte(fmt.Sprintf(`threads:
  dirs: [%q]
amp_server:
  enabled: true
  url: %q
  api_key_file: %q
pricing:
  models:
    test-model: {input: 3, output: 15, cache_read: 0.3, cache_creation: 3.75}
`, threadsDir, srv.URL+"/", keyFile)), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, id := range srv.IDs() {
		srv.SetCost(id, map[string]any{"totalCostUSD": 1.25})
	}
	var want int64
	for _, d := range days {
		want += d.tokens
	}
	e := startExporter(t, exporterOpts{args: []string{"--config.file=" + cfg}})
	e.waitFor(t, 30*time.Second, "every generated token counted", func(mfs map[string]*dto.MetricFamily) (bool, string) {
		server, _ := value(mfs, "amp_tokens_total", map[string]string{"source": "server"})
		files, _ := value(mfs, "amp_tokens_total", map[string]string{"source": "threads"})
		return int64(server+files) == want && server > 0 && files > 0, fmt.Sprintf("server %v + files %v of %d", server, files, want)
	})
	// The server's bills per day reach the spend: billed dollars over the
	// last 7 days (the corpus's last days are in them).
	deadline := time.Now().Add(30 * time.Second)
	for {
		_, body, err := e.get("/api/spend")
		var s struct {
			Last7 struct {
				BilledUSD *float64 `json:"billed_usd"`
			} `json:"last_7_days"`
		}
		if err == nil && json.Unmarshal([]byte(body), &s) == nil && s.Last7.BilledUSD != nil && *s.Last7.BilledUSD > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no billed dollars in /api/spend after 30 s: %s (%v)", body, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
	env := []string{"HOME=" + t.TempDir(), "PATH=/usr/bin:/bin", "TZ=UTC", "XDG_DATA_HOME=" + filepath.Join(work, "no-amp-login-here")}
	run := func(args ...string) []byte {
		t.Helper()
		cmd := exec.Command(exporterBin, append([]string{"report", "--json"}, args...)...)
		cmd.Env = env
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("report %v: %v\n%s", args, err, stderr.String())
		}
		return out
	}
	for _, args := range [][]string{
		{"daily"}, {"monthly"}, {"session"}, {"daily", "--timezone", "Asia/Kathmandu"}, {"session", "--timezone", "Asia/Kathmandu", "--last", "5"},
	} {
		direct := run(append(args, "--config.file="+cfg, "--cache-dir=")...)
		remote := run(append(args, "--exporter", e.base)...)
		if bytes.Count(direct, []byte(`"totalTokens"`)) < 3 {
			t.Fatalf("%v: the report is nearly empty, proving nothing:\n%s", args, direct)
		}
		if !bytes.Equal(direct, remote) {
			t.Errorf("%v: --exporter differs from the report read directly:\n--- direct\n%s\n--- exporter\n%s", args, direct, remote)
		}
	}
}
