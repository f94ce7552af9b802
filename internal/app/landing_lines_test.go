package app

import (
	"strings"
	"testing"

	"github.com/amp-exporter/amp-exporter/config"
	"github.com/amp-exporter/amp-exporter/store"
)

// Issue 29, item 3: the lines the agents' edits changed stand beside the
// spend, in the summary and per source; sources that read no edits show a
// dash, the ones that do show zeros before the first edit.
func TestLandingShowsLinesChanged(t *testing.T) {
	dir := t.TempDir()
	cfg := config.Default()
	cfg.Threads.Dirs = []string{dir}
	cfg.Streams.Dirs = []string{dir}
	cfg.Streams.Ingest.Enabled = false
	series := map[string]float64{
		"amp_server_up":                          1,
		"amp_server_last_sync_timestamp_seconds": 1.7e9,
		"amp_tokens_total{source=threads}":       1000,
		"amp_cost_usd_total{source=threads}":     2.5,
		"amp_tokens_total{source=server}":        500,
		"amp_cost_usd_total{source=server}":      1,
		"amp_tokens_total{source=stream}":        10,
		// Two tools in the thread files; the server's threads only added.
		"amp_lines_changed_total{source=threads,kind=added,tool=edit_file}":   1200,
		"amp_lines_changed_total{source=threads,kind=removed,tool=edit_file}": 30,
		"amp_lines_changed_total{source=threads,kind=added,tool=create_file}": 34,
		"amp_lines_changed_total{source=server,kind=added,tool=edit_file}":    7,
	}
	html := renderLanding(t, series, cfg, nil, map[string]float64{store.SourceThreads: 2, sourceServer: 3})
	const linesCell = 8
	for source, want := range map[string]string{
		"Thread files": "1,234 / 30",
		"Amp server":   "7 / 0",
		"Amp --stream": "—",
	} {
		if got := row(t, html, source)[linesCell]; got != want {
			t.Errorf("%s: lines %q, want %q", source, got, want)
		}
	}
	if want := "Counted so far: <strong>1,510 tokens</strong>, $3.50 estimated; the agents' edits added <strong>1,241 lines</strong> and removed 30."; !strings.Contains(html, want) {
		t.Errorf("the summary lacks %q:\n%s", want, html)
	}

	// Before any edit: zeros, not dashes, for the sources that read edits.
	delete(series, "amp_lines_changed_total{source=threads,kind=added,tool=edit_file}")
	delete(series, "amp_lines_changed_total{source=threads,kind=removed,tool=edit_file}")
	delete(series, "amp_lines_changed_total{source=threads,kind=added,tool=create_file}")
	delete(series, "amp_lines_changed_total{source=server,kind=added,tool=edit_file}")
	html = renderLanding(t, series, cfg, nil, map[string]float64{store.SourceThreads: 2, sourceServer: 3})
	if got := row(t, html, "Thread files")[linesCell]; got != "0 / 0" {
		t.Errorf("thread files without edits: lines %q, want 0 / 0", got)
	}
	if want := "$3.50 estimated; the agents' edits added <strong>0 lines</strong> and removed 0."; !strings.Contains(html, want) {
		t.Errorf("the summary lacks %q:\n%s", want, html)
	}
}
