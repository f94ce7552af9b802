package landing

import (
	"bytes"
	"flag"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/exporter-toolkit/web"

	"github.com/amp-exporter/amp-exporter/internal/spend"
	"github.com/amp-exporter/amp-exporter/ledger"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden.html")

// golden compares got with testdata/name (rewritten with -update).
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs (go test -run %s -update to accept):\n%s", name, t.Name(), got)
	}
}

// spendFixture is a summary of a few days in Kathmandu (+05:45): two
// models, one with a name that is HTML, a repository with an ampersand,
// usage without time, bills and an entitlement.
func spendFixture(t *testing.T, bills bool) spend.Summary {
	t.Helper()
	loc, err := time.LoadLocation("Asia/Kathmandu")
	if err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 12, 2, 15, 0, 0, 0, loc)
	entry := func(daysBack int, model, repo string, cents int64) ledger.Entry {
		at := time.Date(2026, 12, 2-daysBack, 10, 0, 0, 0, loc).UnixMilli()
		return ledger.Entry{Start: ledger.StartOf(at), Session: "T-1", Model: model, Repo: repo, Usage: ledger.Usage{Input: cents * 1000, Cost: cents * 1e8}}
	}
	in := spend.Input{Location: loc, Now: now, Entries: []ledger.Entry{
		entry(0, "claude-sonnet-4-5", "github.com/acme/web", 123),
		entry(0, `<script>alert("m")</script>`, `gitlab.example.com/a&b`, 45),
		entry(1, "claude-sonnet-4-5", "", 1001),
		entry(8, "gpt-5", "github.com/acme/web", 250),
		entry(29, "claude-sonnet-4-5", "github.com/acme/web", 7),
		{Start: ledger.Undated, Session: "T-2", Model: "gpt-5", Usage: ledger.Usage{Cost: 5e8}},
	}}
	if bills {
		day := func(back int) int64 { return time.Date(2026, 12, 2-back, 0, 0, 0, 0, loc).UnixMilli() }
		in.BillsKnown = true
		in.Bills = []ledger.Bill{{Start: day(0), End: day(-1), Session: "T-1", USD: 99e8}, {Start: day(1), End: day(0), Session: "T-1", USD: 800e8}}
		limit, left, used := 100.0, 12.5, 0.875
		in.Entitlement = &spend.Entitlement{Window: "monthly", LimitUSD: &limit, RemainingUSD: &left, UsedRatio: &used,
			ResetsAt: now.Add(49*time.Hour + 30*time.Minute)}
	}
	return spend.Summarize(in)
}

func TestSpendSectionGolden(t *testing.T) {
	for _, tt := range []struct {
		file  string
		bills bool
	}{{"spend.golden.html", true}, {"spend-estimated.golden.html", false}} {
		t.Run(tt.file, func(t *testing.T) {
			var b bytes.Buffer
			if err := renderSpend(&b, spendFixture(t, tt.bills)); err != nil {
				t.Fatal(err)
			}
			golden(t, tt.file, b.Bytes())
			out := b.String()
			if strings.Contains(out, "<script") || strings.Contains(out, "a&b") {
				t.Errorf("data is not escaped")
			}
			if !strings.Contains(out, "&lt;script&gt;") || !strings.Contains(out, "a&amp;b") {
				t.Errorf("the escaped model or repository is missing")
			}
		})
	}
}

// Nothing spent: the chart is still drawn (an empty axis), with no
// legend and no repository table.
func TestSpendSectionEmpty(t *testing.T) {
	var b bytes.Buffer
	s := spend.Summarize(spend.Input{Location: time.UTC, Now: time.Date(2026, 12, 2, 0, 0, 0, 0, time.UTC)})
	if err := renderSpend(&b, s); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	if strings.Count(out, `<g class="day"`) != spend.ChartDays || strings.Contains(out, "<rect") || strings.Contains(out, `class="legend"`) || strings.Contains(out, "spend-repositories") {
		t.Errorf("empty section:\n%s", out)
	}
	if !strings.Contains(out, `id="spend-today" data-usd="0">$0.00<`) {
		t.Errorf("today is not $0.00:\n%s", out)
	}
}

// The page serves the section above the sources, with no script and no
// external reference.
func TestPageShowsSpend(t *testing.T) {
	p, err := New(web.LandingConfig{Name: "amp-exporter", Profiling: "false"}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	p.SetSpend(func() spend.Summary { return spendFixture(t, true) })
	rec := httptest.NewRecorder()
	p.ServeHTTP(rec, httptest.NewRequest("GET", "/", nil))
	out := rec.Body.String()
	if i, j := strings.Index(out, "<h3>Spend</h3>"), strings.Index(out, "<h3>Sources</h3>"); i < 0 || j < i {
		t.Fatalf("spend section at %d, sources at %d", i, j)
	}
	if m := regexp.MustCompile(`(?i)<script|javascript:|href="http|src=`).FindString(out); m != "" {
		t.Errorf("the page holds a script or an external reference: %q", m)
	}
}

func TestNiceCeil(t *testing.T) {
	for _, c := range []struct{ in, want float64 }{{0, 1}, {0.003, 0.005}, {1, 1}, {1.01, 2}, {2.2, 2.5}, {7, 10}, {10.02, 20}, {480, 500}} {
		if got := niceCeil(c.in); got != c.want {
			t.Errorf("niceCeil(%v) = %v, want %v", c.in, got, c.want)
		}
	}
}

// The note says which days long threads' ledgers coarsened: in the zone
// they were coarsened in, that their days are exact; in another, which
// days may be off.
func TestSpendSectionSaysWhatIsCoarsened(t *testing.T) {
	kathmandu, err := time.LoadLocation("Asia/Kathmandu")
	if err != nil {
		t.Fatal(err)
	}
	day := func(loc *time.Location, d int) int64 { return time.Date(2026, 11, d, 0, 0, 0, 0, loc).UnixMilli() }
	cases := []struct {
		name      string
		coarsened []ledger.Span
		want      string
	}{
		{"none", nil, ""},
		{"in the zone's days", []ledger.Span{{Start: day(kathmandu, 3), End: day(kathmandu, 4)}, {Start: day(kathmandu, 9), End: day(kathmandu, 10)}},
			"between 2026-11-03 and 2026-11-09: their days in Asia/Kathmandu stay exact."},
		{"in UTC's days", []ledger.Span{{Start: day(time.UTC, 3), End: day(time.UTC, 4)}},
			"between 2026-11-03 and 2026-11-04: their days in Asia/Kathmandu stay exact, but for 2 days between 2026-11-03 and 2026-11-04, coarsened"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := spend.Summarize(spend.Input{Location: kathmandu, Now: time.Date(2026, 12, 2, 0, 0, 0, 0, kathmandu), Coarsened: tc.coarsened})
			var b bytes.Buffer
			if err := renderSpend(&b, s); err != nil {
				t.Fatal(err)
			}
			out := b.String()
			if tc.want == "" {
				if strings.Contains(out, "spend-coarsened") {
					t.Errorf("a note without anything coarsened:\n%s", out)
				}
				return
			}
			if !strings.Contains(out, tc.want) {
				t.Errorf("no %q in:\n%s", tc.want, out)
			}
		})
	}
}

// The runway line: what is left and when it runs out at the recent pace,
// "lasts until the reset" when that comes first, and nothing while
// nothing is being spent.
func TestSpendSectionRunway(t *testing.T) {
	now := time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
	// 2.5 USD/h for the last 6h (0.625 USD a bucket), or the same ending
	// an hour ago.
	spent := func(until time.Time) []ledger.Entry {
		var out []ledger.Entry
		for i := 1; i <= 24; i++ {
			at := until.Add(-time.Duration(i) * ledger.Bucket).UnixMilli()
			out = append(out, ledger.Entry{Start: ledger.StartOf(at), Session: "T-1", Model: "m", Usage: ledger.Usage{Input: 1, Cost: 625e7}})
		}
		return out
	}
	left := 7.5
	tests := []struct {
		name    string
		entries []ledger.Entry
		resets  time.Duration
		want    string // "" for no runway line
	}{
		{"out before the reset", spent(now), 10 * time.Hour, `<p id="spend-runway">$7.50 left · <strong>out in ~3h at this pace</strong> ($2.50/h`},
		{"the reset first", spent(now), 2 * time.Hour, `<p id="spend-runway">$7.50 left · lasts until the reset ($2.50/h`},
		{"nothing spent lately", spent(now.Add(-time.Hour)), 10 * time.Hour, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := spend.Summarize(spend.Input{Location: time.UTC, Now: now, Entries: tt.entries,
				Entitlement: &spend.Entitlement{Window: "daily", RemainingUSD: &left, ResetsAt: now.Add(tt.resets)}})
			var b bytes.Buffer
			if err := renderSpend(&b, s); err != nil {
				t.Fatal(err)
			}
			out := b.String()
			if tt.want == "" {
				if strings.Contains(out, "spend-runway") {
					t.Errorf("a runway while nothing is spent:\n%s", out)
				}
				return
			}
			if !strings.Contains(out, tt.want) {
				t.Errorf("no %q in\n%s", tt.want, out)
			}
		})
	}
}
