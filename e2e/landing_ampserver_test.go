//go:build e2e

package e2e

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"

	"github.com/amp-exporter/amp-exporter/internal/testsupport/ampservertest"
	"github.com/amp-exporter/amp-exporter/internal/testsupport/threadgen"
)

// Issue 17, item 9, as a user of today's Amp sees it: no configuration, an
// Amp login, 30 threads on the server and no local thread directory. The
// server's row counts the 30 threads, the thread-files row none, and the
// missing default directory is "no local history", not a problem.
func TestLandingPageWithOnlyServerThreads(t *testing.T) {
	srv := ampservertest.New(standinKey, "dev@example.com")
	defer srv.Close()
	g := threadgen.New(threadgen.Options{Threads: 30, TotalBytes: 1_000_000, Seed: 11})
	if err := srv.PutGenerated(g, 0, 30); err != nil {
		t.Fatal(err)
	}
	data := ampLogin(t, srv.URL)
	e := startExporter(t, exporterOpts{env: []string{"XDG_DATA_HOME=" + data, "AMP_URL=" + srv.URL}})
	e.waitFor(t, 30*time.Second, "first sync", func(mfs map[string]*dto.MetricFamily) (bool, string) {
		up, _ := value(mfs, "amp_server_up", nil)
		n, _ := value(mfs, "amp_threads", nil)
		return up == 1 && n == 30, fmt.Sprintf("up %v, threads %v", up, n)
	})
	dom := string(chromium(t, e.base+"/", "--dump-dom"))
	page := text(dom)
	if strings.Contains(page, "Needs attention") {
		t.Errorf("the page says something needs attention:\n%s", page)
	}
	rows := sourceRows(dom)
	header := rows["Source"]
	col := func(source, name string) string {
		t.Helper()
		for i, h := range header {
			if h == name && i < len(rows[source]) {
				return rows[source][i]
			}
		}
		t.Fatalf("no %s / %s in %q", source, name, rows)
		return ""
	}
	if got := col("Amp server (server)", "Threads"); got != "30" {
		t.Errorf("server row: %q threads, want 30", got)
	}
	if got := col("Thread files (threads)", "Threads"); got != "0" {
		t.Errorf("thread-files row: %q threads, want 0", got)
	}
	if got := col("Thread files (threads)", "State"); !strings.Contains(got, "no local history (Amp since 2026-03 keeps threads on the server)") {
		t.Errorf("thread-files row state %q", got)
	}
}

// asNewMessage returns a copy of a thread's message as a new message of it
// (a new messageId, and a new protocol id where it had one): appended, it
// is one more message. A copy that kept its id would be the same message
// listed twice, which counts once.
func asNewMessage(msg json.RawMessage, n int) json.RawMessage {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(msg, &m); err != nil {
		return msg
	}
	m["messageId"] = json.RawMessage(fmt.Sprint(1_000_000 + n))
	if _, ok := m["protocolMessageID"]; ok {
		m["protocolMessageID"] = json.RawMessage(fmt.Sprintf(`"M-e2e%017d"`, n))
	}
	out, err := json.Marshal(m)
	if err != nil {
		return msg
	}
	return out
}
