package app

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/amp-exporter/amp-exporter/internal/spend"
	"github.com/amp-exporter/amp-exporter/internal/testsupport/testutil"
	"github.com/amp-exporter/amp-exporter/ledger"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden.json")

// fakeLedger is a LedgerReader over fixed rows; block, when set, holds
// Ledger until it is closed.
type fakeLedger struct {
	entries    []ledger.Entry
	bills      []ledger.Bill
	coarsened  []ledger.Span
	block      chan struct{}
	reading    chan struct{}
	generation atomic.Uint64
	reads      atomic.Int64 // Ledger calls
}

func (f *fakeLedger) Generation() uint64 { return f.generation.Load() }

func (f *fakeLedger) Ledger() []ledger.Entry {
	f.reads.Add(1)
	if f.block != nil {
		f.reading <- struct{}{}
		<-f.block
	}
	return append([]ledger.Entry(nil), f.entries...)
}

func (f *fakeLedger) Bills() []ledger.Bill { return f.bills }

func (f *fakeLedger) LedgerCoarsened() []ledger.Span { return f.coarsened }

func (f *fakeLedger) LedgerBetween(from, to int64) []ledger.Entry {
	var out []ledger.Entry
	for _, e := range f.Ledger() {
		if e.Start >= from && e.Start < to {
			out = append(out, e)
		}
	}
	return out
}

// apiFixture is two days of usage in Kolkata (+05:30), an entitlement and,
// with bills, one bill.
func apiFixture(bills bool) (*fakeLedger, spendInputs) {
	loc, _ := time.LoadLocation("Asia/Kolkata")
	now := time.Date(2026, 12, 2, 9, 0, 0, 0, loc)
	at := func(day, hour int) int64 {
		return ledger.StartOf(time.Date(2026, 12, day, hour, 7, 0, 0, loc).UnixMilli())
	}
	f := &fakeLedger{entries: []ledger.Entry{
		{Start: at(2, 0), Session: "T-a", Model: "claude-sonnet-4-5", Repo: "github.com/acme/web", Usage: ledger.Usage{Input: 10, Output: 5, Cost: 12_345_000_000}},
		{Start: at(1, 23), Session: "T-a", Model: "gpt-5", Usage: ledger.Usage{CacheRead: 100, Credits: 3_000_000_000, Cost: 5_000_000_000}},
		{Start: at(30-29, 1) - 40*86_400_000, Session: "T-b", Model: "gpt-5", Usage: ledger.Usage{Input: 1, Cost: 1e10}},
		{Start: ledger.Undated, Session: "T-c", Model: "gpt-5", Usage: ledger.Usage{Input: 7}},
	}}
	if bills {
		day := time.Date(2026, 12, 2, 0, 0, 0, 0, loc).UnixMilli()
		f.bills = []ledger.Bill{{Start: day, End: day + 86_400_000, Session: "T-a", Repo: "github.com/acme/web", USD: 9_000_000_000}}
	}
	limit, left := 20.0, 7.5
	in := spendInputs{ledger: f, zone: func() *time.Location { return loc }, now: func() time.Time { return now },
		entitlement: func() *spend.Entitlement {
			return &spend.Entitlement{Window: "monthly", LimitUSD: &limit, RemainingUSD: &left, ResetsAt: now.Add(36 * time.Hour)}
		}}
	return f, in
}

func apiServer(t *testing.T, in *spendInputs, maxRequests int) *httptest.Server {
	t.Helper()
	return apiServerWith(t, in, maxRequests, ledgerLimits{})
}

func apiServerWith(t *testing.T, in *spendInputs, maxRequests int, ledger ledgerLimits) *httptest.Server {
	t.Helper()
	var ready atomic.Bool
	mux := http.NewServeMux()
	if err := routes(mux, routeDeps{telemetryPath: "/metrics", registry: prometheus.NewRegistry(), ready: &ready,
		reloads: make(chan reloadRequest), config: func() string { return "" }, logger: slog.New(slog.DiscardHandler),
		maxRequests: maxRequests, spend: in, ledger: ledger}); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv
}

func do(t *testing.T, method, url string) (*http.Response, []byte) {
	t.Helper()
	req, _ := http.NewRequest(method, url, nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, b
}

// /api/ledger serves every row and bill as the ledger package writes them,
// in a versioned object; lists are [] when empty, never null.
func TestLedgerEndpoint(t *testing.T) {
	for _, bills := range []bool{true, false} {
		f, in := apiFixture(bills)
		day := time.Date(2026, 12, 1, 0, 0, 0, 0, time.FixedZone("IST", 19800)).UnixMilli()
		f.coarsened = []ledger.Span{{Start: day, End: day + 86_400_000}}
		srv := apiServer(t, &in, 4)
		resp, body := do(t, "GET", srv.URL+LedgerPath)
		if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "application/json" || resp.Header.Get("Cache-Control") != "no-store" {
			t.Fatalf("%d %v", resp.StatusCode, resp.Header)
		}
		var got struct {
			Version   int
			Entries   []ledger.Entry
			Bills     []ledger.Bill
			Coarsened []ledger.Span
		}
		dec := json.NewDecoder(bytes.NewReader(body))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&got); err != nil {
			t.Fatalf("%v: %s", err, body)
		}
		if got.Version != LedgerJSONVersion || !reflect.DeepEqual(got.Entries, f.entries) {
			t.Errorf("version %d, entries %+v, want %+v", got.Version, got.Entries, f.entries)
		}
		if want := f.bills; len(want) != len(got.Bills) || (len(want) > 0 && !reflect.DeepEqual(got.Bills, want)) {
			t.Errorf("bills %+v, want %+v", got.Bills, want)
		}
		if !reflect.DeepEqual(got.Coarsened, f.coarsened) {
			t.Errorf("coarsened %+v, want %+v", got.Coarsened, f.coarsened)
		}
		if !bills && !bytes.Contains(body, []byte(`"bills":[],`)) {
			t.Errorf("no bills is not []: %s", body[max(0, len(body)-40):])
		}
	}
	f, in := apiFixture(false)
	f.entries = nil
	srv := apiServer(t, &in, 4)
	if _, body := do(t, "GET", srv.URL+LedgerPath); string(body) != `{"version":1,"entries":[],"bills":[],"coarsened":[]}`+"\n" {
		t.Errorf("empty ledger: %s", body)
	}
}

// The JSON endpoints only read: GET and HEAD, anything else 405.
func TestAPIReadOnly(t *testing.T) {
	_, in := apiFixture(false)
	srv := apiServer(t, &in, 4)
	for _, path := range []string{LedgerPath, SpendPath} {
		for _, m := range []string{"POST", "PUT", "DELETE"} {
			if resp, _ := do(t, m, srv.URL+path); resp.StatusCode != http.StatusMethodNotAllowed || resp.Header.Get("Allow") != "GET, HEAD" {
				t.Errorf("%s %s: %d, Allow %q", m, path, resp.StatusCode, resp.Header.Get("Allow"))
			}
		}
		if resp, body := do(t, "HEAD", srv.URL+path); resp.StatusCode != 200 || len(body) != 0 {
			t.Errorf("HEAD %s: %d, %d bytes", path, resp.StatusCode, len(body))
		}
	}
}

// At most maxLedgerRequests ledger responses are written at once, however
// high --web.max-requests is (and with it off); one more waits for a
// place, and gets 503 with a Retry-After when none frees in time, saying
// what is full (not --web.max-requests, which is not the ledger's).
func TestLedgerEndpointBounded(t *testing.T) {
	for _, maxRequests := range []int{0, 40} {
		f, in := apiFixture(false)
		f.block, f.reading = make(chan struct{}), make(chan struct{})
		srv := apiServerWith(t, &in, maxRequests, ledgerLimits{slotWait: 50 * time.Millisecond})
		done := make(chan int, maxLedgerRequests)
		for range maxLedgerRequests {
			go func() {
				resp, err := http.Get(srv.URL + LedgerPath)
				if err != nil {
					done <- 0
					return
				}
				resp.Body.Close()
				done <- resp.StatusCode
			}()
			<-f.reading
		}
		if resp, body := do(t, "GET", srv.URL+LedgerPath); resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") != "1" ||
			strings.Contains(string(body), "max-requests") || !strings.Contains(string(body), "2 responses are being written") {
			t.Errorf("max-requests %d: a third ledger request under way: %d, Retry-After %q, %q; want 503", maxRequests, resp.StatusCode, resp.Header.Get("Retry-After"), body)
		}
		close(f.block)
		for range maxLedgerRequests {
			if c := <-done; c != 200 {
				t.Errorf("a held request ended %d", c)
			}
		}
	}
}

// /api/spend: the periods in the exporter's zone, billed only when bills
// are known, the entitlement window (golden files).
func TestSpendEndpoint(t *testing.T) {
	for _, c := range []struct {
		bills bool
		file  string
	}{{true, "spend.golden.json"}, {false, "spend-estimated.golden.json"}} {
		_, in := apiFixture(c.bills)
		srv := apiServer(t, &in, 4)
		resp, body := do(t, "GET", srv.URL+SpendPath)
		if resp.StatusCode != 200 {
			t.Fatalf("%d %s", resp.StatusCode, body)
		}
		path := filepath.Join("testdata", c.file)
		if *update {
			if err := os.WriteFile(path, body, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		want, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(body, want) {
			t.Errorf("%s differs (-update to accept):\n%s", c.file, body)
		}
	}
}

// Without a ledger (spend nil) the endpoints do not exist.
func TestAPIWithoutLedger(t *testing.T) {
	srv := apiServer(t, nil, 4)
	for _, path := range []string{LedgerPath, SpendPath} {
		if resp, _ := do(t, "GET", srv.URL+path); resp.StatusCode != http.StatusNotFound {
			t.Errorf("%s: %d", path, resp.StatusCode)
		}
	}
}

// ledger.timezone applies on reload: /api/spend takes days in the new
// zone from the next request on; a zone the database does not know is
// refused and the previous one kept.
func TestReloadChangesTheSpendZone(t *testing.T) {
	base := fmt.Sprintf("threads:\n  dirs: [%q]\namp_server:\n  enabled: false\n", t.TempDir())
	e := startTestApp(t, base+"ledger:\n  timezone: Asia/Kathmandu\n", nil)
	zone := func() string {
		_, body := do(t, "GET", "http://"+e.addr+SpendPath)
		var s spend.JSON
		if err := json.Unmarshal(body, &s); err != nil {
			t.Fatalf("%v: %s", err, body)
		}
		return s.Timezone
	}
	if z := zone(); z != "Asia/Kathmandu" {
		t.Fatalf("zone %q", z)
	}
	if err := e.reloadWith(t, base+"ledger:\n  timezone: America/New_York\n"); err != nil {
		t.Fatal(err)
	}
	if z := zone(); z != "America/New_York" {
		t.Errorf("after the reload: zone %q", z)
	}
	if err := e.reloadWith(t, base+"ledger:\n  timezone: Mars/Olympus\n"); err == nil {
		t.Error("an unknown zone was accepted")
	}
	if z := zone(); z != "America/New_York" {
		t.Errorf("after a refused reload: zone %q", z)
	}
}

// A summary is made once per generation of the ledger, zone and day; the
// entitlement is read at every request.
func TestSpendSummaryCached(t *testing.T) {
	f, in := apiFixture(false)
	in.cache = &spendCache{}
	kolkata := in.zone()
	zone := kolkata
	in.zone = func() *time.Location { return zone }
	now := in.now()
	in.now = func() time.Time { return now }
	left := 7.5
	in.entitlement = func() *spend.Entitlement { return &spend.Entitlement{RemainingUSD: &left} }
	steps := []struct {
		name  string
		do    func()
		reads int64
	}{
		{"first", func() {}, 1},
		{"same generation", func() {}, 1},
		{"the ledger changed", func() { f.generation.Add(1) }, 2},
		{"another zone", func() { zone = time.UTC }, 3},
		{"an hour later, the same day", func() { now = now.Add(time.Hour) }, 3},
		{"the next day", func() { now = now.Add(24 * time.Hour) }, 4},
		{"the entitlement moved", func() { left = 1 }, 4},
	}
	for _, st := range steps {
		st.do()
		s := in.summary(false)
		if got := f.reads.Load(); got != st.reads {
			t.Errorf("%s: the ledger was read %d times, want %d", st.name, got, st.reads)
		}
		if !s.Now.Equal(now) || s.Location != zone || s.Entitlement == nil || *s.Entitlement.RemainingUSD != left {
			t.Errorf("%s: summary at %v in %v, entitlement %+v", st.name, s.Now, s.Location, s.Entitlement)
		}
	}
}

// /api/spend does not wait for a new summary of the same zone and day: it
// answers with the last one and makes the new one in the background.
func TestSpendSummaryStaleWhileMade(t *testing.T) {
	f, in := apiFixture(false)
	in.cache = &spendCache{}
	before := in.summary(true) // none yet: made now
	if f.reads.Load() != 1 {
		t.Fatalf("%d reads", f.reads.Load())
	}
	f.entries = append(f.entries, ledger.Entry{Start: f.entries[0].Start, Session: "T-new", Model: "gpt-5", Usage: ledger.Usage{Cost: 1e10}})
	f.generation.Add(1)
	if s := in.summary(true); s.Today.Estimated != before.Today.Estimated {
		t.Errorf("stale: today %d, want the last summary's %d", s.Today.Estimated, before.Today.Estimated)
	}
	testutil.WaitUntil(t, "the new summary", func() bool { return f.reads.Load() == 2 && !in.cache.refreshingNow() })
	if s := in.summary(true); s.Today.Estimated != before.Today.Estimated+1e10 {
		t.Errorf("after the background summary: today %d, want %d", s.Today.Estimated, before.Today.Estimated+1e10)
	}
	// The landing page (not stale) never shows an old summary.
	f.entries = append(f.entries, ledger.Entry{Start: f.entries[0].Start, Session: "T-newer", Model: "gpt-5", Usage: ledger.Usage{Cost: 1e10}})
	f.generation.Add(1)
	if s := in.summary(false); s.Today.Estimated != before.Today.Estimated+2e10 {
		t.Errorf("fresh: today %d, want %d", s.Today.Estimated, before.Today.Estimated+2e10)
	}
}

// refreshingNow reports whether a summary is being made in the background
// (tests).
func (c *spendCache) refreshingNow() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.refreshing
}

// The first spend summary is made when the exporter becomes ready, before
// anything asks: the first statusline does not wait for the ledger to be
// summed.
func TestFirstSpendSummaryMadeWhenReady(t *testing.T) {
	e := startTestApp(t, fmt.Sprintf("threads:\n  dirs: [%q]\namp_server:\n  enabled: false\n", t.TempDir()), nil)
	testutil.WaitUntil(t, "the first summary", func() bool {
		c := e.spend.cache
		c.mu.Lock()
		defer c.mu.Unlock()
		return c.ok
	})
}
