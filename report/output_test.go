package report

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/amp-exporter/amp-exporter/backfill"
	"github.com/amp-exporter/amp-exporter/store"
)

func sample(t *testing.T, kind Kind) *Report {
	t.Helper()
	credits := int64(0.25 * 1e9)
	entries := []Entry{
		{Start: ms("2026-02-01T10:00:00Z"), Session: "T-a", Model: "claude-opus-4-6",
			Usage: Usage{Input: 1200, Output: 34, CacheCreation: 5, CacheRead: 1_000_000, Cost: 12_345_600_000}},
		{Start: ms("2026-02-02T10:00:00Z"), Session: "T-b", Model: "gpt-5.2-codex",
			Usage: Usage{Input: 7, Output: 8, Credits: credits, Cost: 1_000_000}},
		// The thread's shell calls: commits and a pull request, under no
		// model.
		{Start: ms("2026-02-02T10:15:00Z"), Session: "T-b", Usage: Usage{Commits: 3, PullRequests: 1}},
	}
	r, err := Build(entries, Options{Kind: kind, Location: time.UTC})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// TestJSONIsCcusages: the names and shapes of ccusage's JSON; credits
// only where there are some.
func TestJSONIsCcusages(t *testing.T) {
	for kind, list := range map[Kind]string{Daily: "daily", Monthly: "monthly", Session: "sessions"} {
		var b bytes.Buffer
		if err := WriteJSON(&b, sample(t, kind)); err != nil {
			t.Fatal(err)
		}
		var got map[string]any
		if err := json.Unmarshal(b.Bytes(), &got); err != nil {
			t.Fatal(err)
		}
		periods := got[list].([]any)
		first := periods[0].(map[string]any)
		for _, k := range []string{"inputTokens", "outputTokens", "cacheCreationTokens", "cacheReadTokens", "totalTokens", "totalCost", "modelsUsed", "modelBreakdowns"} {
			if _, ok := first[k]; !ok {
				t.Errorf("%s: no %s in %v", kind, k, first)
			}
		}
		if kind != Monthly {
			if _, ok := first["credits"]; ok {
				t.Errorf("%s: credits of a period without any: %v", kind, first)
			}
		}
		key := map[Kind]string{Daily: "date", Monthly: "month", Session: "sessionId"}[kind]
		if first[key] == nil {
			t.Errorf("%s: no %s", kind, key)
		}
		totals := got["totals"].(map[string]any)
		if totals["totalTokens"].(float64) != 1200+34+5+1_000_000+7+8 || totals["credits"].(float64) != 0.25 || totals["totalCost"].(float64) != 1.23466 {
			t.Errorf("%s: totals %v", kind, totals)
		}
		br := first["modelBreakdowns"].([]any)[0].(map[string]any)
		if kind == Daily && (br["modelName"] != "claude-opus-4-6" || br["cost"].(float64) != 1.23456) {
			t.Errorf("breakdown %v", br)
		}
	}
}

// TestJSONIsOneIndentedObject: the report, written a period at a time,
// is byte for byte what encoding/json gives for the whole object indented
// by two spaces (its fields are in alphabetical order, as a map's keys are
// encoded): for each kind, with no period, one, several, repositories and
// a name to escape.
func TestJSONIsOneIndentedObject(t *testing.T) {
	entries := []Entry{
		{Start: ms("2026-02-01T10:00:00Z"), Session: "T-a", Model: "claude-opus-4-6", Repo: "github.com/o/r<&>",
			Usage: Usage{Input: 1200, Output: 34, CacheCreation: 5, CacheRead: 1_000_000, Cost: 12_345_600_000}},
		{Start: ms("2026-02-02T10:00:00Z"), Session: "T-b", Model: "gpt-5.2-\"codex\"",
			Usage: Usage{Input: 7, Output: 8, Credits: 250_000_000, Cost: 1_000_000}},
		{Start: ms("2026-03-02T10:00:00Z"), Session: "T-b", Model: "claude-opus-4-6", Repo: "gitlab.com/g/p",
			Usage: Usage{Input: 1, Output: 2, Cost: 3}},
	}
	for _, kind := range []Kind{Daily, Monthly, Session} {
		for n := range len(entries) + 1 {
			r, err := Build(entries[:n], Options{Kind: kind, Location: time.UTC})
			if err != nil {
				t.Fatal(err)
			}
			var got bytes.Buffer
			if err := WriteJSON(&got, r); err != nil {
				t.Fatal(err)
			}
			dec := json.NewDecoder(bytes.NewReader(got.Bytes()))
			dec.UseNumber()
			var whole map[string]any
			if err := dec.Decode(&whole); err != nil {
				t.Fatalf("%s of %d entries: %v\n%s", kind, n, err, got.String())
			}
			var want bytes.Buffer
			enc := json.NewEncoder(&want)
			enc.SetIndent("", "  ")
			enc.SetEscapeHTML(false)
			if err := enc.Encode(whole); err != nil {
				t.Fatal(err)
			}
			if got.String() != want.String() {
				t.Errorf("%s of %d entries:\n%s\nwant\n%s", kind, n, got.String(), want.String())
			}
		}
	}
}

// TestTableAlignedWithTotals: every line of the table is as wide as the
// heading's columns make it; the totals are the last line; color only when
// asked.
func TestTableAlignedWithTotals(t *testing.T) {
	var b bytes.Buffer
	if err := WriteTable(&b, sample(t, Daily), TableOptions{}); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimRight(b.String(), "\n"), "\n")
	if len(lines) != 6 {
		t.Fatalf("%d lines:\n%s", len(lines), b.String())
	}
	// The right edge of the cost column is the same on every line.
	width := len([]rune(lines[0]))
	for _, l := range lines {
		if n := len([]rune(l)); n != width {
			t.Errorf("line %q is %d wide, the heading %d", l, n, width)
		}
	}
	if !strings.HasPrefix(lines[5], "Total") || !strings.HasSuffix(lines[5], "$1.23        3") || !strings.Contains(lines[5], "1,001,254") {
		t.Errorf("totals line %q", lines[5])
	}
	if strings.Contains(b.String(), "\x1b[") {
		t.Error("escape codes without Color")
	}
	b.Reset()
	if err := WriteTable(&b, sample(t, Daily), TableOptions{Color: true}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "\x1b[33mTotal") {
		t.Errorf("no yellow totals with Color:\n%q", b.String())
	}
}

// TestTableCompactAndNoCost: --compact leaves out the cache columns,
// --no-cost the dollars; the rest stays aligned.
func TestTableCompactAndNoCost(t *testing.T) {
	for _, o := range []TableOptions{{Compact: true}, {NoCost: true}, {Compact: true, NoCost: true}} {
		var b bytes.Buffer
		if err := WriteTable(&b, sample(t, Daily), o); err != nil {
			t.Fatal(err)
		}
		out := b.String()
		lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
		if got := strings.Contains(lines[0], "Cache Read") || strings.Contains(lines[0], "Cache Create"); got == o.Compact {
			t.Errorf("%+v: cache columns shown %v:\n%s", o, got, out)
		}
		if got := strings.Contains(lines[0], "Cost") || strings.Contains(out, "$"); got == o.NoCost {
			t.Errorf("%+v: cost shown %v:\n%s", o, got, out)
		}
		if !strings.Contains(lines[len(lines)-1], "1,001,254") {
			t.Errorf("%+v: totals line %q", o, lines[len(lines)-1])
		}
		width := len([]rune(lines[0]))
		for _, l := range lines {
			if n := len([]rune(l)); n != width {
				t.Errorf("%+v: line %q is %d wide, the heading %d", o, l, n, width)
			}
		}
	}
}

func TestThousands(t *testing.T) {
	for n, want := range map[int64]string{0: "0", 999: "999", 1000: "1,000", 1234567: "1,234,567", -1234: "-1,234"} {
		if got := thousands(n); got != want {
			t.Errorf("thousands(%d) = %q, want %q", n, got, want)
		}
	}
}

// TestLedgerFromGrowths: the ledger files each growth under its bucket,
// thread (the file's name when the document has no id) and model, by
// family and token type; other families are not spending.
func TestLedgerFromGrowths(t *testing.T) {
	l := NewLedger()
	at := ms("2026-02-01T10:15:00Z")
	tok := func(typ string, v int64) backfill.Growth {
		return backfill.Growth{At: at, Key: store.SeriesKey{Fam: store.FamTokens, L1: "m", L2: typ}, V: v}
	}
	l.AddThread(backfill.ThreadGrowth{Path: "/d/T-x.json", Growth: []backfill.Growth{
		tok("input", 1), tok("output", 2), tok("cache_creation", 3), tok("cache_read", 4), tok("input", 10),
		{At: at, Key: store.SeriesKey{Fam: store.FamCredits, L1: "m"}, V: 5},
		{At: at, Key: store.SeriesKey{Fam: store.FamCost, L1: "m"}, V: 6},
		{At: at, Key: store.SeriesKey{Fam: store.FamMessages, L1: "assistant"}, V: 7},
		{At: Undated, Key: store.SeriesKey{Fam: store.FamTokens, L1: "m", L2: "input"}, V: 8},
	}})
	got := l.Entries()
	want := []Entry{
		{Start: Undated, Session: "T-x", Model: "m", Usage: Usage{Input: 8}},
		{Start: at, Session: "T-x", Model: "m", Usage: Usage{Input: 11, Output: 2, CacheCreation: 3, CacheRead: 4, Credits: 5, Cost: 6}},
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("entries %+v, want %+v", got, want)
	}
}

// TestCommitsPerDay: a day's commits and pull requests are in its row of
// the table (the Commits column) and of the JSON (commits, pullRequests,
// added to ccusage's fields), and in the totals; they name no model, so
// the day's models are those that spent.
func TestCommitsPerDay(t *testing.T) {
	r := sample(t, Daily)
	var b bytes.Buffer
	if err := WriteJSON(&b, r); err != nil {
		t.Fatal(err)
	}
	var got struct {
		Daily []struct {
			Date         string   `json:"date"`
			Commits      *int64   `json:"commits"`
			PullRequests *int64   `json:"pullRequests"`
			ModelsUsed   []string `json:"modelsUsed"`
		} `json:"daily"`
		Totals struct {
			Commits, PullRequests int64
		} `json:"totals"`
	}
	if err := json.Unmarshal(b.Bytes(), &got); err != nil {
		t.Fatal(err)
	}
	want := []string{"2026-02-01 0 0 [claude-opus-4-6]", "2026-02-02 3 1 [gpt-5.2-codex]"}
	if len(got.Daily) != len(want) {
		t.Fatalf("%d days, want %d:\n%s", len(got.Daily), len(want), b.String())
	}
	for i, d := range got.Daily {
		if d.Commits == nil || d.PullRequests == nil {
			t.Fatalf("%s: no commits or pullRequests field:\n%s", d.Date, b.String())
		}
		if s := fmt.Sprintf("%s %d %d %v", d.Date, *d.Commits, *d.PullRequests, d.ModelsUsed); s != want[i] {
			t.Errorf("day %q, want %q", s, want[i])
		}
	}
	if got.Totals.Commits != 3 || got.Totals.PullRequests != 1 {
		t.Errorf("totals %+v, want 3 commits, 1 pull request", got.Totals)
	}
	b.Reset()
	if err := WriteTable(&b, r, TableOptions{}); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(b.String(), "\n")
	if !strings.HasSuffix(lines[0], "Commits") || !strings.HasPrefix(lines[3], "2026-02-02") || !strings.HasSuffix(lines[3], " 3") {
		t.Errorf("table:\n%s", b.String())
	}
}
