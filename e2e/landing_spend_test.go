//go:build e2e

package e2e

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"

	"github.com/amp-exporter/amp-exporter/internal/testsupport/threadgen"
)

// flatPrices are the USD per million tokens the test's configuration sets
// for the generator's models (input, output, cache read, cache creation):
// flat prices, so that a day's dollars are its tokens times them.
var flatPrices = map[string][4]float64{
	"claude-opus-4-6":            {5, 25, 0.5, 6.25},
	"claude-opus-4-5-20251101":   {4, 20, 0.4, 5},
	"claude-sonnet-4-5-20250929": {3, 15, 0.3, 3.75},
	"claude-haiku-4-5-20251001":  {1, 5, 0.1, 1.25},
	"gpt-5.2-codex":              {1.75, 14, 0.175, 1.75},
}

func truthUSD(model string, tok threadgen.Tokens) float64 {
	p, ok := flatPrices[model]
	if !ok {
		panic("no test price for " + model)
	}
	return (float64(tok.Input)*p[0] + float64(tok.Output)*p[1] + float64(tok.CacheRead)*p[2] + float64(tok.CacheCreation)*p[3]) / 1e6
}

var (
	chartDayRe = regexp.MustCompile(`<g class="day" data-date="(\d{4}-\d\d-\d\d)" data-usd="([^"]+)" data-tokens="(\d+)">`)
	periodRe   = regexp.MustCompile(`id="(spend-today|spend-7d|spend-month)" data-usd="([^"]+)">([^<]+)<`)
)

// The landing page shows a month of generated history in a real browser:
// the chart of the last 30 days is there, and the figures on the page
// (today, the last 7 days, this month; every day's dollars and tokens in
// the chart) equal what the generator says it wrote, summed per day of the
// exporter's zone (Kathmandu, +05:45) by the test itself. A screenshot is
// kept in the test's artifact directory.
func TestLandingPageSpendInChromium(t *testing.T) {
	const zone = "Asia/Kathmandu"
	loc, err := time.LoadLocation(zone)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	threads := filepath.Join(dir, "threads")
	// A month of history that ends a little over an hour ago (a thread
	// runs for up to about 12 hours), and one short thread started two
	// minutes ago (today's, in the zone, at any time of day).
	now := time.Now()
	month := threadgen.New(threadgen.Options{Threads: 150, TotalBytes: 150 * 15_000, Seed: 26, Repositories: 4, ClockSkew: true,
		Start: now.Add(-threadgen.Spread - 14*time.Hour)})
	y, m, d := now.In(loc).Date()
	recent := threadgen.New(threadgen.Options{Threads: 1, TotalBytes: 30_000, Seed: 27, Repositories: 4,
		Start: maxTime(now.Add(-2*time.Minute), time.Date(y, m, d, 0, 0, 1, 0, loc))})
	for _, g := range []*threadgen.Generator{month, recent} {
		if _, err := g.WriteDir(threads); err != nil {
			t.Fatal(err)
		}
	}
	var prices strings.Builder
	for model, p := range flatPrices {
		fmt.Fprintf(&prices, "    %s: {input: %v, output: %v, cache_read: %v, cache_creation: %v}\n", model, p[0], p[1], p[2], p[3])
	}
	cfg := filepath.Join(dir, "amp-exporter.yml")
	if err := os.WriteFile(cfg, []byte(fmt.Sprintf("threads:\n  dirs: [%q]\namp_server:\n  enabled: false\nledger:\n  timezone: %s\npricing:\n  models:\n%s",
		threads, zone, prices.String())), 0o644); err != nil {
		t.Fatal(err)
	}
	e := startExporter(t, exporterOpts{args: []string{"--config.file=" + cfg}})
	e.waitFor(t, 30*time.Second, "thread tokens counted", func(mfs map[string]*dto.MetricFamily) (bool, string) {
		tokens, _ := value(mfs, "amp_tokens_total", map[string]string{"source": "threads"})
		return tokens > 0, fmt.Sprintf("tokens %v", tokens)
	})

	// The truth, per day of the zone.
	now = now.In(loc)
	today := now.Format(time.DateOnly)
	truth := map[string]struct {
		usd    float64
		tokens int64
	}{}
	for _, g := range []*threadgen.Generator{month, recent} {
		for day, models := range g.DailySpend(loc) {
			d := truth[day]
			for model, tok := range models {
				d.usd += truthUSD(model, tok)
				d.tokens += tok.Input + tok.Output + tok.CacheRead + tok.CacheCreation
			}
			truth[day] = d
		}
	}
	var want7, wantMonth float64
	monthFrom := time.Date(now.Year(), now.Month(), 1, 0, 0, 0, 0, loc).Format(time.DateOnly)
	weekFrom := time.Date(now.Year(), now.Month(), now.Day()-6, 0, 0, 0, 0, loc).Format(time.DateOnly)
	for day, d := range truth {
		if day > today {
			t.Fatalf("the generator wrote usage on %s, after today (%s): the corpus is misplaced", day, today)
		}
		if day >= weekFrom {
			want7 += d.usd
		}
		if day >= monthFrom {
			wantMonth += d.usd
		}
	}

	if truth[today].tokens == 0 || wantMonth == 0 {
		t.Fatalf("the generator wrote nothing today (%s) or this month: the page's figures would prove little", today)
	}

	dom := string(chromium(t, e.base+"/", "--dump-dom"))
	if scriptTags.MatchString(dom) {
		t.Error("the landing page carries JavaScript")
	}
	if !strings.Contains(dom, `<svg class="spend"`) || !strings.Contains(dom, `<ul class="legend">`) || strings.Count(dom, "<rect ") < 10 {
		t.Fatalf("no spend chart on the page:\n%s", dom)
	}
	same := func(a, b float64) bool { return math.Abs(a-b) < 1e-6 }
	days := chartDayRe.FindAllStringSubmatch(dom, -1)
	if len(days) != 30 || days[29][1] != today {
		t.Fatalf("%d days in the chart, the last %v; want 30 ending today %s", len(days), days[len(days)-1][1:], today)
	}
	withUsage := 0
	for _, m := range days {
		usd, _ := strconv.ParseFloat(m[2], 64)
		tokens, _ := strconv.ParseInt(m[3], 10, 64)
		w := truth[m[1]]
		if tokens != w.tokens || !same(usd, w.usd) {
			t.Errorf("%s: the chart shows $%v and %d tokens, the generator wrote $%v and %d", m[1], usd, tokens, w.usd, w.tokens)
		}
		if tokens > 0 {
			withUsage++
		}
	}
	if withUsage < 20 {
		t.Errorf("only %d of the chart's days have usage: the month of history is not there", withUsage)
	}
	periods := map[string]float64{}
	for _, m := range periodRe.FindAllStringSubmatch(dom, -1) {
		v, _ := strconv.ParseFloat(m[2], 64)
		periods[m[1]] = v
		if shown := fmt.Sprintf("$%.2f", v); strings.ReplaceAll(m[3], ",", "") != shown {
			t.Errorf("%s: the page reads %q, its value is %s", m[1], m[3], shown)
		}
	}
	for id, want := range map[string]float64{"spend-today": truth[today].usd, "spend-7d": want7, "spend-month": wantMonth} {
		if got, ok := periods[id]; !ok || !same(got, want) {
			t.Errorf("%s: the page shows %v (found %v), the generator says %v", id, got, ok, want)
		}
	}

	// /api/spend and the statusline say the same.
	code, body, err := e.get("/api/spend")
	if err != nil || code != 200 {
		t.Fatalf("/api/spend: %d %v", code, err)
	}
	var s struct {
		Timezone string
		Today    struct {
			EstimatedUSD float64 `json:"estimated_usd"`
		}
		Month struct {
			EstimatedUSD float64 `json:"estimated_usd"`
		}
	}
	if err := json.Unmarshal([]byte(body), &s); err != nil || s.Timezone != zone || !same(s.Today.EstimatedUSD, truth[today].usd) || !same(s.Month.EstimatedUSD, wantMonth) {
		t.Errorf("/api/spend %s (%v)", body, err)
	}
	out, err := exec.Command(exporterBin, "statusline", "--exporter", e.base).Output()
	if want := fmt.Sprintf("$%.2f today", truth[today].usd); err != nil || !strings.HasPrefix(string(out), want) {
		t.Errorf("statusline %q (%v), want it to start with %q", out, err, want)
	}

	shot := filepath.Join(t.ArtifactDir(), "landing-spend.png")
	chromium(t, e.base+"/", "--window-size=1400,1400", "--screenshot="+shot)
	fi, err := os.Stat(shot)
	if err != nil || fi.Size() < 10_000 {
		t.Fatalf("screenshot %s: %v (size %d)", shot, err, sizeOf(fi))
	}
	t.Logf("landing page screenshot: %s; today $%.4f, 7 days $%.4f, month $%.4f", shot, truth[today].usd, want7, wantMonth)
}

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}
