package app

import (
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/exporter-toolkit/web"

	"github.com/amp-exporter/amp-exporter/config"
	"github.com/amp-exporter/amp-exporter/internal/app/landing"
	"github.com/amp-exporter/amp-exporter/parser/thread"
	"github.com/amp-exporter/amp-exporter/store"
)

// renderLanding renders the landing page with the exporter's providers over
// a registry holding the given gauges, and returns its HTML.
func renderLanding(t *testing.T, series map[string]float64, cfg *config.Config, defaultDirs []string, threads map[string]float64) string {
	t.Helper()
	return renderLandingShown(t, series, cfg, defaultDirs, threads, nil)
}

// renderLandingShown is renderLanding with the sources whose families are
// on /metrics: the others are in their first pass (nil: all).
func renderLandingShown(t *testing.T, series map[string]float64, cfg *config.Config, defaultDirs []string, threads map[string]float64, shown map[string]bool) string {
	t.Helper()
	reg := prometheus.NewRegistry()
	vecs := map[string]*prometheus.GaugeVec{}
	for s, v := range series {
		name, rest, _ := strings.Cut(strings.TrimSuffix(s, "}"), "{")
		var names, values []string
		if rest != "" {
			for _, kv := range strings.Split(rest, ",") {
				k, val, _ := strings.Cut(kv, "=")
				names, values = append(names, k), append(values, val)
			}
		}
		vec, ok := vecs[name]
		if !ok {
			vec = prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: name, Help: name}, names)
			reg.MustRegister(vec)
			vecs[name] = vec
		}
		vec.WithLabelValues(values...).Set(v)
	}
	count := func(source string) *float64 {
		if v, ok := threads[source]; ok {
			return &v
		}
		return nil
	}
	providers := sourceProviders(landingInputs{
		cfg:         func() *config.Config { return cfg },
		ready:       func() bool { return shown == nil || shown[store.SourceThreads] },
		account:     func() string { return "someone@example.com" },
		defaultDirs: defaultDirs,
		threads:     count,
	})
	if shown != nil {
		providers = sourceProviders(landingInputs{
			cfg:         func() *config.Config { return cfg },
			ready:       func() bool { return shown[store.SourceThreads] },
			account:     func() string { return "someone@example.com" },
			defaultDirs: defaultDirs,
			threads:     count,
			shown:       func(source string) bool { return shown[source] },
		})
	}
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	page, err := landing.New(web.LandingConfig{Name: "amp-exporter"}, reg, func() time.Time { return now }, providers...)
	if err != nil {
		t.Fatal(err)
	}
	rec := httptest.NewRecorder()
	page.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/", nil))
	if rec.Code != http.StatusOK {
		t.Fatalf("status %d", rec.Code)
	}
	return rec.Body.String()
}

// row returns the cells of the table row whose first cell starts with
// source, tags stripped.
func row(t *testing.T, html, source string) []string {
	t.Helper()
	tags := regexp.MustCompile(`<[^>]*>`)
	for _, tr := range strings.Split(html, "<tr>")[1:] {
		tr, _, _ = strings.Cut(tr, "</tr>")
		var cells []string
		for _, td := range strings.Split(tr, "<td")[1:] {
			_, td, _ = strings.Cut(td, ">")
			td, _, _ = strings.Cut(td, "</td>")
			cells = append(cells, strings.TrimSpace(tags.ReplaceAllString(td, " ")))
		}
		if len(cells) > 0 && strings.HasPrefix(cells[0], source) {
			return cells
		}
	}
	t.Fatalf("no row %q in the page", source)
	return nil
}

// Issue 17, item 9: each row counts its own threads. The server's 30
// threads are in amp_threads (which has no source label) but belong to the
// server's row; the thread-files row shows only local files.
func TestLandingRowsCountTheirOwnThreads(t *testing.T) {
	dir := t.TempDir()
	cfg := config.Default()
	cfg.Threads.Dirs = []string{dir}
	cfg.Streams.Ingest.Enabled = false
	html := renderLanding(t, map[string]float64{
		"amp_server_up":                          1,
		"amp_server_last_sync_timestamp_seconds": 1.7e9,
		"amp_threads{agent_mode=smart}":          32,
	}, cfg, nil, map[string]float64{store.SourceThreads: 2, sourceServer: 30})
	const threadsCell = 4
	if got := row(t, html, "Amp server")[threadsCell]; got != "30" {
		t.Errorf("server row threads %q, want 30", got)
	}
	if got := row(t, html, "Thread files")[threadsCell]; got != "2" {
		t.Errorf("thread-files row threads %q, want 2", got)
	}
}

// A missing default thread directory, while the server source is synced,
// is how today's Amp is: no local history, not a problem.
func TestLandingMissingDefaultDirWithServerIsNoProblem(t *testing.T) {
	gone := filepath.Join(t.TempDir(), "amp", "threads")
	cfg := config.Default()
	cfg.Threads.Dirs = []string{gone}
	cfg.Streams.Ingest.Enabled = false
	up := map[string]float64{"amp_server_up": 1, "amp_server_last_sync_timestamp_seconds": 1.7e9}
	html := renderLanding(t, up, cfg, []string{gone}, map[string]float64{store.SourceThreads: 0, sourceServer: 30})
	if strings.Contains(html, "Needs attention") {
		t.Errorf("the page says something needs attention:\n%s", html)
	}
	if !strings.Contains(html, "no local history (Amp since 2026-03 keeps threads on the server)") {
		t.Errorf("the thread-files row does not say there is no local history: %q", row(t, html, "Thread files"))
	}

	// A directory the user configured that is missing still needs them.
	html = renderLanding(t, up, cfg, []string{"/elsewhere"}, map[string]float64{store.SourceThreads: 0, sourceServer: 30})
	if !strings.Contains(html, "Needs attention: Thread files") {
		t.Errorf("a configured directory that is missing does not need attention: %q", row(t, html, "Thread files"))
	}
	// So does the default one while the server source is not working.
	html = renderLanding(t, map[string]float64{"amp_server_up": 0, "amp_server_last_sync_timestamp_seconds": 1.7e9},
		cfg, []string{gone}, map[string]float64{store.SourceThreads: 0, sourceServer: 0})
	if !strings.Contains(html, "Needs attention: Amp server (server): sync failing; Thread files (threads): missing") {
		t.Errorf("with the server failing, the missing default directory is not flagged: %q", row(t, html, "Thread files"))
	}
}

// The rows' counts come from each source's own store.
func TestStoreThreadsCountsEachStore(t *testing.T) {
	files := store.NewThreadStore(store.StoreOptions{})
	server := store.NewThreadStore(store.StoreOptions{})
	apply := func(s *store.ThreadStore, path, id string) {
		th, err := thread.NewParser().ParseBytes([]byte(`{"v":1,"id":"` + id + `","messages":[]}`))
		if err != nil {
			t.Fatal(err)
		}
		s.Apply(path, store.FileVersion{}, thread.Summarize(th))
	}
	apply(files, "/d/T-1.json", "T-1")
	apply(files, "/e/T-1.json", "T-1") // one thread in two directories
	apply(files, "/d/T-2.json", "T-2")
	for _, id := range []string{"T-3", "T-4", "T-5"} {
		apply(server, store.ServerPath(id), id)
	}
	got := storeThreads(files, server)
	if n := got(store.SourceThreads); n == nil || *n != 2 {
		t.Errorf("thread files: %v, want 2", n)
	}
	if n := got(sourceServer); n == nil || *n != 3 {
		t.Errorf("server: %v, want 3", n)
	}
	if n := storeThreads(files, nil)(sourceServer); n != nil {
		t.Errorf("server source off: %v, want none", *n)
	}
}

// During a source's first pass its families are not on /metrics: the
// landing page says the pass is running and shows dashes, never zeros or
// a part of the totals (the thread store's count grows during the scan).
func TestLandingDuringFirstPass(t *testing.T) {
	dir := t.TempDir()
	cfg := config.Default()
	cfg.Threads.Dirs = []string{dir}
	cfg.Streams.Ingest.Enabled = false
	series := map[string]float64{"amp_server_up": 0}
	partial := map[string]float64{store.SourceThreads: 7, sourceServer: 3}
	const threadsCell, tokensCell, usdCell = 4, 5, 6
	for _, c := range []struct {
		name         string
		shown        map[string]bool
		filesPending bool
		serverShown  bool
	}{
		{"both in their first pass", map[string]bool{}, true, false},
		{"files scanned, server first sync", map[string]bool{store.SourceThreads: true}, false, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			html := renderLandingShown(t, series, cfg, nil, partial, c.shown)
			files := row(t, html, "Thread files")
			server := row(t, html, "Amp server")
			for _, cell := range []int{threadsCell, tokensCell, usdCell} {
				if c.filesPending && files[cell] != "—" {
					t.Errorf("thread-files cell %d during the first scan: %q, want —", cell, files[cell])
				}
				if server[cell] != "—" {
					t.Errorf("server cell %d before the first sync: %q, want —", cell, server[cell])
				}
			}
			if c.filesPending && !strings.Contains(files[2], "first scan running") {
				t.Errorf("thread-files state %q", files[2])
			}
			if !c.filesPending && files[threadsCell] != "7" {
				t.Errorf("thread-files threads after the scan %q, want 7", files[threadsCell])
			}
			if strings.Contains(html, "Nothing counted yet") {
				t.Errorf("the page says nothing was counted while a first pass runs")
			}
			if !strings.Contains(html, "First pass running: Amp server (server)") {
				t.Errorf("the page does not say which first pass runs")
			}
		})
	}
}
