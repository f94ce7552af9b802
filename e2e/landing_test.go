//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"fmt"
	"html"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
)

// chromium runs Debian's headless Chromium with args and the page URL and
// returns its stdout. A missing chromium fails the test (make test
// installs it: scripts/test-deps.sh).
func chromium(t *testing.T, url string, args ...string) []byte {
	t.Helper()
	bin := requireTool(t, "chromium")
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	all := append([]string{
		"--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--disable-dev-shm-usage", "--hide-scrollbars",
		"--user-data-dir=" + t.TempDir(),
	}, args...)
	cmd := exec.CommandContext(ctx, bin, append(all, url)...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("chromium %v: %v\n%s", args, err, stderr.String())
	}
	return stdout.Bytes()
}

var (
	tags       = regexp.MustCompile(`<[^>]*>`)
	styles     = regexp.MustCompile(`(?is)<style.*?</style>`)
	spaces     = regexp.MustCompile(`\s+`)
	tableRow   = regexp.MustCompile(`(?s)<tr>(.*?)</tr>`)
	tableCell  = regexp.MustCompile(`(?s)<t[dh][^>]*>(.*?)</t[dh]>`)
	scriptTags = regexp.MustCompile(`(?i)<script`)
)

// text is what a person reads in an HTML fragment (tags become spaces,
// so punctuation after inline markup is re-attached).
func text(fragment string) string {
	fragment = styles.ReplaceAllString(fragment, " ")
	t := strings.TrimSpace(spaces.ReplaceAllString(html.UnescapeString(tags.ReplaceAllString(fragment, " ")), " "))
	return strings.NewReplacer(" ,", ",", " .", ".").Replace(t)
}

// sourceRows maps each row's first cell (the source) to its cells' text.
func sourceRows(dom string) map[string][]string {
	rows := map[string][]string{}
	for _, r := range tableRow.FindAllStringSubmatch(dom, -1) {
		var cells []string
		for _, c := range tableCell.FindAllStringSubmatch(r[1], -1) {
			cells = append(cells, text(c[1]))
		}
		if len(cells) > 0 {
			rows[cells[0]] = cells
		}
	}
	return rows
}

func grouped(v float64) string {
	s := fmt.Sprintf("%.0f", v)
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	return b.String()
}

// The landing page answers "is it working?" in a real browser: per source
// what is configured (an existing and a missing thread directory, a stream
// directory, an Amy upstream with its proxy), its state, and the figures
// /metrics has. A screenshot is kept in the test's artifact directory
// (make test: under .cache/e2e-artifacts).
func TestLandingPageInChromium(t *testing.T) {
	dir := t.TempDir()
	threads := filepath.Join(dir, "threads")
	missing := filepath.Join(dir, "not-yet-created")
	streams := filepath.Join(dir, "streams")
	for _, d := range []string{threads, streams} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	copyFixtures(t, threads)
	proxyPort := freePort(t)
	cfg := filepath.Join(dir, "amp-exporter.yml")
	if err := os.WriteFile(cfg, []byte(fmt.Sprintf(`threads:
  dirs: [%q, %q]
streams:
  dirs: [%q]
amy:
  - name: main
    base_url: http://127.0.0.1:1/amy?token=never-shown
    proxy:
      listen_address: 127.0.0.1:%d
`, threads, missing, streams, proxyPort)), 0o644); err != nil {
		t.Fatal(err)
	}
	e := startExporter(t, exporterOpts{args: []string{"--config.file=" + cfg}})
	var tokens, cost, threadCount, added, removed float64
	e.waitFor(t, 15*time.Second, "thread tokens counted", func(mfs map[string]*dto.MetricFamily) (bool, string) {
		tokens, _ = value(mfs, "amp_tokens_total", map[string]string{"source": "threads"})
		cost, _ = value(mfs, "amp_cost_usd_total", map[string]string{"source": "threads"})
		threadCount, _ = value(mfs, "amp_threads", nil)
		added, _ = value(mfs, "amp_lines_changed_total", map[string]string{"source": "threads", "kind": "added"})
		removed, _ = value(mfs, "amp_lines_changed_total", map[string]string{"source": "threads", "kind": "removed"})
		return tokens > 0 && threadCount > 0, fmt.Sprintf("tokens %v, threads %v", tokens, threadCount)
	})

	dom := string(chromium(t, e.base+"/", "--dump-dom"))
	page := text(dom)
	if scriptTags.MatchString(dom) {
		t.Error("the landing page carries JavaScript")
	}
	// The toolkit's page is kept: name, version and links.
	for _, want := range []string{"amp-exporter", "Version: (version=e2e", "Metrics", "Configuration", "Health", "Readiness"} {
		if !strings.Contains(page, want) {
			t.Errorf("page text lacks %q:\n%s", want, page)
		}
	}
	for _, want := range []string{
		fmt.Sprintf("Counted so far: %s tokens, $%.2f estimated; the agents' edits added %s lines and removed %s.", grouped(tokens), cost, grouped(added), grouped(removed)),
		"Needs attention: Thread files (threads): watching, 1 of 2 missing.",
	} {
		if !strings.Contains(page, want) {
			t.Errorf("page text lacks %q:\n%s", want, page)
		}
	}
	if strings.Contains(page, "never-shown") {
		t.Error("the page shows the upstream URL's query string")
	}

	rows := sourceRows(dom)
	header := rows["Source"]
	wantHeader := []string{"Source", "Configured", "State", "Last change", "Threads", "Tokens", "Estimated USD", "Billed USD", "Lines added / removed"}
	if strings.Join(header, "|") != strings.Join(wantHeader, "|") {
		t.Fatalf("table header %q, want %q", header, wantHeader)
	}
	check := func(source string, want map[string]string) {
		t.Helper()
		row, ok := rows[source]
		if !ok {
			t.Errorf("no row %q; rows: %q", source, rows)
			return
		}
		for i, col := range header {
			if w, ok := want[col]; ok && !strings.Contains(row[i], w) {
				t.Errorf("%s / %s: %q does not contain %q", source, col, row[i], w)
			}
		}
	}
	check("Thread files (threads)", map[string]string{
		"Configured":            threads + " " + missing + " (missing)",
		"State":                 "watching, 1 of 2 missing",
		"Threads":               grouped(threadCount),
		"Tokens":                grouped(tokens),
		"Estimated USD":         fmt.Sprintf("$%.2f", cost),
		"Billed USD":            "—",
		"Last change":           "UTC",
		"Lines added / removed": fmt.Sprintf("%s / %s", grouped(added), grouped(removed)),
	})
	if strings.Contains(rows["Thread files (threads)"][3], "never") {
		t.Errorf("thread files: last change %q after counting", rows["Thread files (threads)"][3])
	}
	check("Amp --stream-json (stream)", map[string]string{
		"Configured":  streams,
		"State":       "tailing",
		"Tokens":      "0",
		"Last change": "never",
		// stream-json carries no edits.
		"Lines added / removed": "—",
	})
	check("Amy upstream main", map[string]string{
		"Configured": fmt.Sprintf("http://127.0.0.1:1/amy proxy on 127.0.0.1:%d", proxyPort),
		"State":      "no turn followed yet",
		"Billed USD": "$0.00",
	})
	check("Amp server (server)", map[string]string{"State": "not configured"})

	shot := filepath.Join(t.ArtifactDir(), "landing.png")
	chromium(t, e.base+"/", "--window-size=1400,1000", "--screenshot="+shot)
	fi, err := os.Stat(shot)
	if err != nil || fi.Size() < 10_000 {
		t.Fatalf("screenshot %s: %v (size %d)", shot, err, sizeOf(fi))
	}
	t.Logf("landing page screenshot: %s", shot)
}

func sizeOf(fi os.FileInfo) int64 {
	if fi == nil {
		return 0
	}
	return fi.Size()
}

// Zero configuration on a machine without Amp history: the page says
// plainly why nothing is counted.
func TestLandingPageExplainsNothingCounted(t *testing.T) {
	e := startExporter(t, exporterOpts{}) // AMP_THREADS_DIR points at a directory that does not exist
	page := text(string(chromium(t, e.base+"/", "--dump-dom")))
	for _, want := range []string{
		"Nothing counted yet",
		"Needs attention: Thread files (threads): missing.",
		"no-threads-here (missing)",
		"Amp versions since 2026-03 write no thread files",
		"Amp server (server) — not configured",
	} {
		if !strings.Contains(page, want) {
			t.Errorf("page text lacks %q:\n%s", want, page)
		}
	}
}
