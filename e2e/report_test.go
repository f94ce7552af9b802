//go:build e2e

package e2e

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/amp-exporter/amp-exporter/internal/testsupport/ampservertest"
	"github.com/amp-exporter/amp-exporter/internal/testsupport/threadgen"
)

// reportJSON is the JSON of `ccusage amp daily|monthly|session --json`,
// which `amp-exporter report … --json` writes too.
type reportJSON struct {
	Daily    []reportPeriod `json:"daily"`
	Monthly  []reportPeriod `json:"monthly"`
	Sessions []reportPeriod `json:"sessions"`
	Totals   reportUsage    `json:"totals"`
}

type reportUsage struct {
	InputTokens         int64   `json:"inputTokens"`
	OutputTokens        int64   `json:"outputTokens"`
	CacheCreationTokens int64   `json:"cacheCreationTokens"`
	CacheReadTokens     int64   `json:"cacheReadTokens"`
	TotalTokens         int64   `json:"totalTokens"`
	Credits             float64 `json:"credits"`
	TotalCost           float64 `json:"totalCost"`
}

type reportPeriod struct {
	reportUsage
	Date            string   `json:"date"`
	Month           string   `json:"month"`
	SessionID       string   `json:"sessionId"`
	ModelsUsed      []string `json:"modelsUsed"`
	ModelBreakdowns []struct {
		ModelName           string  `json:"modelName"`
		InputTokens         int64   `json:"inputTokens"`
		OutputTokens        int64   `json:"outputTokens"`
		CacheCreationTokens int64   `json:"cacheCreationTokens"`
		CacheReadTokens     int64   `json:"cacheReadTokens"`
		Cost                float64 `json:"cost"`
	} `json:"modelBreakdowns"`
}

func (r *reportJSON) periods() []reportPeriod {
	return slices.Concat(r.Daily, r.Monthly, r.Sessions)
}

func (p *reportPeriod) key() string { return p.Date + p.Month + p.SessionID }

// threeEraCorpus writes threads of the three CLI builds that kept local
// thread files (January, February and March 2026; usage on messages and,
// for some, a usageLedger) and the parser fixtures both tools count alike.
func threeEraCorpus(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	for i, start := range []time.Time{
		time.Date(2026, 1, 5, 7, 0, 0, 0, time.UTC),
		time.Date(2026, 2, 2, 9, 0, 0, 0, time.UTC),
		time.Date(2026, 3, 2, 18, 30, 0, 0, time.UTC),
	} {
		g := threadgen.New(threadgen.Options{Threads: 40, TotalBytes: 6 << 20, Seed: int64(100 + i), Start: start, ClockSkew: true})
		if _, err := g.WriteDir(dir); err != nil {
			t.Fatal(err)
		}
	}
	copyFixtures(t, dir, "usage-era.json", "ledger-era.json", "both-eras.json", "cancelled-and-errors.json")
	return dir
}

func ccusageReportJSON(t *testing.T, dir string, args ...string) reportJSON {
	t.Helper()
	return ccusageReportJSONIn(t, "UTC", dir, args...)
}

// ccusageReportJSONIn runs ccusage on a machine whose zone is tz.
func ccusageReportJSONIn(t *testing.T, tz, dir string, args ...string) reportJSON {
	t.Helper()
	data := t.TempDir()
	if err := os.Symlink(dir, filepath.Join(data, "threads")); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(ccusageBin(t), append(append([]string{"amp"}, args...), "--json", "--offline")...)
	cmd.Env = []string{"HOME=" + t.TempDir(), "PATH=/usr/bin:/bin", "AMP_DATA_DIR=" + data, "TZ=" + tz}
	return runReportJSON(t, cmd)
}

func exporterReportJSON(t *testing.T, dir string, args ...string) reportJSON {
	t.Helper()
	return exporterReportJSONIn(t, "UTC", dir, args...)
}

// exporterReportJSONIn runs the report on a machine whose zone is tz.
func exporterReportJSONIn(t *testing.T, tz, dir string, args ...string) reportJSON {
	t.Helper()
	cmd := exec.Command(exporterBin, append(append([]string{"report"}, args...), "--json")...)
	cmd.Env = []string{"HOME=" + t.TempDir(), "PATH=/usr/bin:/bin", "AMP_THREADS_DIR=" + dir, "TZ=" + tz}
	return runReportJSON(t, cmd)
}

func runReportJSON(t *testing.T, cmd *exec.Cmd) reportJSON {
	t.Helper()
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s: %v\n%s", strings.Join(cmd.Args, " "), err, stderr.String())
	}
	var r reportJSON
	if err := json.Unmarshal(out, &r); err != nil {
		t.Fatalf("%s: %v\n%s", strings.Join(cmd.Args, " "), err, out)
	}
	return r
}

// credits are compared to the nano-credit (the exporter's fixed point);
// ccusage sums floats.
func sameCredits(a, b float64) bool { return math.Abs(a-b) < 1e-9*(1+math.Abs(b)) }

// compareReports requires the same periods, in the same order; per period
// and model the same tokens; per period the same credits; and for Claude
// models the same dollars (to 1e-6: both price them by Anthropic's list
// prices). It returns how many (period, model) pairs it compared.
func compareReports(t *testing.T, what string, ours, theirs reportJSON) int {
	t.Helper()
	op, tp := ours.periods(), theirs.periods()
	keys := func(ps []reportPeriod) []string {
		var ks []string
		for _, p := range ps {
			ks = append(ks, p.key())
		}
		return ks
	}
	if ok, tk := keys(op), keys(tp); !slices.Equal(ok, tk) {
		i := 0
		for i < min(len(ok), len(tk)) && ok[i] == tk[i] {
			i++
		}
		t.Errorf("%s: periods differ from the %dth on: amp-exporter %v…, ccusage %v…", what, i+1, ok[i:min(i+3, len(ok))], tk[i:min(i+3, len(tk))])
		return 0
	}
	pairs := 0
	for i := range tp {
		o, c := &op[i], &tp[i]
		if !sameCredits(o.Credits, c.Credits) {
			t.Errorf("%s %s: credits: amp-exporter %v, ccusage %v", what, c.key(), o.Credits, c.Credits)
		}
		if o.TotalTokens != c.TotalTokens {
			t.Errorf("%s %s: totalTokens: amp-exporter %d, ccusage %d", what, c.key(), o.TotalTokens, c.TotalTokens)
		}
		// modelsUsed: the same models; ccusage lists them in the order it
		// read them, the exporter in the order they were used.
		om, cm := slices.Clone(o.ModelsUsed), slices.Clone(c.ModelsUsed)
		sort.Strings(om)
		sort.Strings(cm)
		if !slices.Equal(om, cm) {
			t.Errorf("%s %s: modelsUsed: amp-exporter %v, ccusage %v", what, c.key(), o.ModelsUsed, c.ModelsUsed)
		}
		if len(o.ModelBreakdowns) != len(c.ModelBreakdowns) {
			t.Errorf("%s %s: %d model breakdowns, ccusage %d", what, c.key(), len(o.ModelBreakdowns), len(c.ModelBreakdowns))
			continue
		}
		for j, cb := range c.ModelBreakdowns {
			ob := o.ModelBreakdowns[j] // both ordered by cost, highest first
			pairs++
			if ob.ModelName != cb.ModelName || ob.InputTokens != cb.InputTokens || ob.OutputTokens != cb.OutputTokens ||
				ob.CacheCreationTokens != cb.CacheCreationTokens || ob.CacheReadTokens != cb.CacheReadTokens {
				t.Errorf("%s %s: breakdown %d: amp-exporter %+v, ccusage %+v", what, c.key(), j, ob, cb)
			}
			if strings.HasPrefix(cb.ModelName, "claude-") && !closeEnough(ob.Cost, cb.Cost) {
				t.Errorf("%s %s: cost of %s: amp-exporter $%.8f, ccusage $%.8f", what, c.key(), cb.ModelName, ob.Cost, cb.Cost)
			}
		}
	}
	ot, ct := ours.Totals, theirs.Totals
	if ot.InputTokens != ct.InputTokens || ot.OutputTokens != ct.OutputTokens || ot.CacheCreationTokens != ct.CacheCreationTokens ||
		ot.CacheReadTokens != ct.CacheReadTokens || ot.TotalTokens != ct.TotalTokens || !sameCredits(ot.Credits, ct.Credits) {
		t.Errorf("%s: totals: amp-exporter %+v, ccusage %+v", what, ot, ct)
	}
	return pairs
}

// TestReportAgreesWithCcusage runs `report daily|monthly|session --json`
// and `ccusage amp daily|monthly|session --json` on the same thread files
// of the three local-file eras, in three time zones (UTC, India's +05:30,
// New York's -05:00/-04:00 across the March change), with date bounds, and
// without --timezone on machines in India and New York: the same periods,
// per period and model the same tokens, per period the same credits,
// Claude models' dollars to 1e-6.
func TestReportAgreesWithCcusage(t *testing.T) {
	dir := threeEraCorpus(t)
	// Ledger events the server stamped hours before their thread was
	// created (the client's clock ahead): both tools count them at their
	// own stamp, on another day than the thread's created.
	if n := eventsBeforeCreated(t, dir); n == 0 {
		t.Error("no ledger event is stamped over an hour before its thread's created: the corpus does not exercise it")
	}
	for _, kind := range []string{"daily", "monthly", "session"} {
		for _, zone := range []string{"UTC", "Asia/Kolkata", "America/New_York"} {
			for _, bounds := range [][]string{nil, {"--since", "20260201", "--until", "2026-03-08"}} {
				args := append([]string{kind, "--timezone", zone}, bounds...)
				what := strings.Join(args, " ")
				theirs := ccusageReportJSON(t, dir, args...)
				ours := exporterReportJSON(t, dir, args...)
				pairs := compareReports(t, what, ours, theirs)
				if len(theirs.periods()) < 2 || theirs.Totals.Credits == 0 {
					t.Errorf("%s: ccusage reports %d periods, %v credits: the corpus does not exercise it", what, len(theirs.periods()), theirs.Totals.Credits)
				}
				t.Logf("%-60s %3d periods, %4d period-model pairs, $%.4f (ccusage $%.4f)", what, len(theirs.periods()), pairs,
					ours.Totals.TotalCost, theirs.Totals.TotalCost)
			}
		}
	}
	// Without --timezone, both take the machine's zone (TZ).
	for _, tz := range []string{"Asia/Kolkata", "America/New_York"} {
		theirs := ccusageReportJSONIn(t, tz, dir, "daily")
		ours := exporterReportJSONIn(t, tz, dir, "daily")
		compareReports(t, "daily with TZ="+tz, ours, theirs)
		if utc := ccusageReportJSON(t, dir, "daily"); slices.Equal(dailyKeys(utc), dailyKeys(theirs)) &&
			fmt.Sprint(utc.Daily) == fmt.Sprint(theirs.Daily) {
			t.Errorf("TZ=%s: ccusage's days are UTC's: the zone is not exercised", tz)
		}
	}
}

// eventsBeforeCreated counts the ledger events of dir's thread files
// stamped over an hour before their thread's created.
func eventsBeforeCreated(t *testing.T, dir string) int {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.json"))
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var th struct {
			Created     int64 `json:"created"`
			UsageLedger struct {
				Events []struct {
					Timestamp time.Time `json:"timestamp"`
				} `json:"events"`
			} `json:"usageLedger"`
		}
		if err := json.Unmarshal(data, &th); err != nil {
			t.Fatalf("%s: %v", filepath.Base(f), err)
		}
		for _, e := range th.UsageLedger.Events {
			if !e.Timestamp.IsZero() && e.Timestamp.UnixMilli() < th.Created-time.Hour.Milliseconds() {
				n++
			}
		}
	}
	return n
}

func dailyKeys(r reportJSON) []string {
	var ks []string
	for _, p := range r.Daily {
		ks = append(ks, p.Date)
	}
	return ks
}

// TestReportLastAgreesWithCcusage checks --last against ccusage's on
// threads of the last month: both count calendar periods back from today.
func TestReportLastAgreesWithCcusage(t *testing.T) {
	dir := t.TempDir()
	g := threadgen.New(threadgen.Options{Threads: 30, TotalBytes: 3 << 20, Seed: 7, Start: time.Now().Add(-31 * 24 * time.Hour), ClockSkew: true})
	if _, err := g.WriteDir(dir); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"daily", "--last", "7"}, {"daily", "--last", "10", "--timezone", "Asia/Kathmandu"}, {"monthly", "--last", "2"},
	} {
		what := strings.Join(args, " ")
		var ours, theirs reportJSON
		// Both count back from today: run both again when the day
		// changed between them, in UTC or in Kathmandu.
		today := func() string {
			now := time.Now().UTC()
			return now.Format(time.DateOnly) + now.Add(345*time.Minute).Format(time.DateOnly)
		}
		for range 2 {
			before := today()
			theirs = ccusageReportJSON(t, dir, args...)
			ours = exporterReportJSON(t, dir, args...)
			if today() == before {
				break
			}
		}
		compareReports(t, what, ours, theirs)
		if len(theirs.periods()) == 0 {
			t.Errorf("%s: ccusage reports nothing: the corpus does not exercise it", what)
		}
		t.Logf("%s: %s", what, fmt.Sprint(len(theirs.periods()), " periods"))
	}
}

// TestReportReadsTheAmpServer: with the Amp server stand-in in the
// configuration, `report daily --json` counts the threads it serves with
// the thread files, per day exactly as generated (tokens, and dollars at
// the configured prices to the micro-dollar); the same threads without
// the server give only the files' part.
func TestReportReadsTheAmpServer(t *testing.T) {
	srv := ampservertest.New(standinKey, "dev@example.com")
	defer srv.Close()
	threadsDir := t.TempDir()
	days := backfillCorpus(t, threadsDir, srv, time.Now())
	work := t.TempDir()
	keyFile := filepath.Join(work, "amp-key")
	if err := os.WriteFile(keyFile, []byte(standinKey+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cacheDir := filepath.Join(work, "cache")
	report := func(server string) map[string]reportPeriod {
		cfg := filepath.Join(work, "amp-exporter-"+server+".yml")
		if err := os.WriteFile(cfg, []byte(fmt.Sprintf(`threads:
  dirs: [%q]
amp_server:
  enabled: %q
  url: %q
  api_key_file: %q
pricing:
  models:
    test-model: {input: 3, output: 15, cache_read: 0.3, cache_creation: 3.75}
`, threadsDir, server, srv.URL+"/", keyFile)), 0o644); err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(exporterBin, "report", "daily", "--json", "--timezone", "UTC", "--config.file="+cfg, "--cache-dir="+cacheDir)
		cmd.Env = []string{"HOME=" + t.TempDir(), "PATH=/usr/bin:/bin", "TZ=UTC", "XDG_DATA_HOME=" + filepath.Join(work, "no-amp-login-here")}
		r := runReportJSON(t, cmd)
		out := map[string]reportPeriod{}
		for _, p := range r.Daily {
			out[p.Date] = p
		}
		return out
	}
	both, files := report("true"), report("false")
	var tokens, fileTokens int64
	for _, d := range days {
		day := d.start.Format("2006-01-02")
		got := both[day]
		tokens += got.TotalTokens
		fileTokens += files[day].TotalTokens
		if got.TotalTokens != d.tokens {
			t.Errorf("%s: %d tokens, generated %d", day, got.TotalTokens, d.tokens)
		}
		if want := float64(d.micro) / 1e6; math.Abs(got.TotalCost-want) > 1e-9*(1+want) {
			t.Errorf("%s: $%.6f, generated $%.6f", day, got.TotalCost, want)
		}
	}
	if len(both) > len(days) {
		t.Errorf("%d days reported, %d generated", len(both), len(days))
	}
	if fileTokens == 0 || fileTokens >= tokens {
		t.Errorf("files alone: %d tokens of %d: the server's threads are not what makes the difference", fileTokens, tokens)
	}
	t.Logf("%d days, %d tokens (%d from the files, %d from the server)", len(both), tokens, fileTokens, tokens-fileTokens)

	// A second report, nothing changed: one listing, no thread read, the
	// same report.
	firstBytes := srv.BytesServed()
	srv.Reset()
	again := report("true")
	if fmt.Sprint(again) != fmt.Sprint(both) {
		t.Errorf("the second report differs from the first")
	}
	if f := srv.Fetched(); len(f) != 0 {
		t.Errorf("the second report read %d threads again, none changed", len(f))
	}
	t.Logf("first report: %d bytes from the server; second: %d bytes, requests %v", firstBytes, srv.BytesServed(), srv.Requests())

	// One thread grows: the third report reads it alone, and counts its
	// new message in its day.
	ids := srv.IDs()
	id := ids[len(ids)-1]
	at := time.Now().Add(-time.Hour).UTC()
	srv.AppendMessage(id, []byte(fmt.Sprintf(`{"role": "assistant", "messageId": 999, "content": [{"type": "text", "text": "late"}],
 "state": {"type": "complete", "stopReason": "end_turn"},
 "usage": {"model": "test-model", "inputTokens": 1000, "outputTokens": 10, "timestamp": %q}}`, at.Format("2006-01-02T15:04:05.000Z"))), at.UnixMilli())
	srv.Reset()
	third := report("true")
	if f := srv.Fetched(); len(f) != 1 || f[id] == 0 {
		t.Errorf("the third report read %v, want %s alone", f, id)
	}
	var thirdTokens int64
	for _, p := range third {
		thirdTokens += p.TotalTokens
	}
	if thirdTokens != tokens+1010 {
		t.Errorf("after one message of 1,010 tokens: %d tokens, want %d", thirdTokens, tokens+1010)
	}
}
