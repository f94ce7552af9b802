package report

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/amp-exporter/amp-exporter/internal/testsupport/threadgen"
	"github.com/amp-exporter/amp-exporter/ledger"
	"github.com/amp-exporter/amp-exporter/parser/thread"
	"github.com/amp-exporter/amp-exporter/pricing"
	"github.com/amp-exporter/amp-exporter/store"
)

// longThread is the generator's long thread (threadgen.Long).
type longThread struct {
	start time.Time
	days  int
}

func (lt longThread) gen() threadgen.Long { return threadgen.Long{Start: lt.start, Days: lt.days} }

// file is the thread as an Amp thread file.
func (lt longThread) file() []byte { return lt.gen().File("T-long") }

// daily is what the thread spent per day of loc, in tokens and credits.
func (lt longThread) daily(loc *time.Location) map[string]Usage {
	out := map[string]Usage{}
	for day, d := range lt.gen().Daily(loc) {
		out[day] = Usage{Input: d.Input, Output: d.Output, CacheRead: d.CacheRead, CacheCreation: d.CacheCreation, Credits: d.Credits}
	}
	return out
}

// growing is the thread's summary as it stands at the end of every
// every-th day (and its last), as a live exporter reads it while it
// grows.
func (lt longThread) growing(tb testing.TB, every int) []*thread.Summary {
	tb.Helper()
	var sums []*thread.Summary
	for d := every; d < lt.days+every; d += every {
		// A parser per file: a parser reuses its storage from one file
		// to the next, and these summaries are all kept.
		th, err := thread.NewParser().ParseBytes(longThread{start: lt.start, days: min(d, lt.days)}.file())
		if err != nil {
			tb.Fatal(err)
		}
		sums = append(sums, thread.Summarize(th))
	}
	return sums
}

// daysRight counts the days of want a report gets right (tokens and
// credits), and says how many input tokens it puts on another day.
func daysRight(t *testing.T, entries []Entry, loc *time.Location, want map[string]Usage) (right int, movedInput int64) {
	t.Helper()
	r, err := Build(entries, Options{Kind: Daily, Location: loc})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]Usage{}
	for _, p := range r.Periods {
		u := p.Usage
		u.Cost = 0
		got[p.Key] = u
	}
	for day, w := range want {
		if got[day] == w {
			right++
		}
		movedInput += max(w.Input-got[day].Input, 0)
	}
	for day, g := range got {
		if _, ok := want[day]; !ok {
			t.Errorf("%s: a day without usage holds %+v", day, g)
		}
	}
	return right, movedInput
}

// longThreadZones are zones whose days start at every kind of offset:
// whole, half and three quarters of an hour, both sides of UTC, the far
// ends (+14:00, -09:30) and zones that change for summer time.
var longThreadZones = []string{"UTC", "Asia/Kathmandu", "Pacific/Marquesas", "Pacific/Kiritimati",
	"Asia/Kolkata", "Australia/Lord_Howe", "Europe/Berlin", "America/New_York", "Pacific/Chatham"}

// TestLongThreadDaysAreExact: a thread active four hours a day for 90
// days (two models, 17,280 ledger rows) is reported day by day exactly,
// in every zone, from the thread file.
func TestLongThreadDaysAreExact(t *testing.T) {
	pr, err := pricing.Embedded(nil)
	if err != nil {
		t.Fatal(err)
	}
	prices := pricing.New(pr, "genai-prices", pr.Version, nil)
	// From autumn to winter: the summer-time zones change on the way.
	lt := longThread{start: time.Date(2025, 9, 20, 0, 0, 0, 0, time.UTC), days: 90}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "T-long.json"), lt.file(), 0o644); err != nil {
		t.Fatal(err)
	}
	l, _, err := Load(context.Background(), LoadOptions{Dirs: []string{dir}, Workers: 1, Prices: prices,
		Labels: store.NewLabelCap(100, nil), Now: lt.start.AddDate(0, 0, lt.days+1)})
	if err != nil {
		t.Fatal(err)
	}
	entries := l.Entries()
	for _, name := range longThreadZones {
		t.Run(name, func(t *testing.T) {
			loc := zone(t, name)
			want := lt.daily(loc)
			right, moved := daysRight(t, entries, loc, want)
			if right != len(want) {
				var input int64
				for _, u := range want {
					input += u.Input
				}
				t.Errorf("%d of %d days right; %.1f%% of the input tokens on another day", right, len(want), 100*float64(moved)/float64(input))
			}
		})
	}
}

// TestExporterLongThreadDaysInItsZone: the exporter keeps the same thread
// bounded (it grows day by day, as a live thread does): it coarsens the
// oldest days within the days of its own zone (ledger.timezone), so a
// report in that zone gets every day right, and says which spans it
// coarsened, so that a report in another zone knows which of its days may
// be off: every day such a report gets wrong is one of them.
func TestExporterLongThreadDaysInItsZone(t *testing.T) {
	lt := longThread{start: time.Date(2025, 9, 20, 0, 0, 0, 0, time.UTC), days: 90}
	// Every fifth day: 18 reads, the bound reached and coarsened again
	// several times.
	sums := lt.growing(t, 5)
	// wrongElsewhere counts the days of other zones that the coarsening
	// did make wrong (and said so): the check is not an empty one.
	wrongElsewhere := 0
	for _, name := range longThreadZones {
		t.Run(name, func(t *testing.T) {
			loc := zone(t, name)
			st := store.NewThreadStore(store.StoreOptions{Now: func() time.Time { return lt.start.AddDate(0, 0, lt.days+1) }})
			st.SetLedgerZone(loc)
			for d, sum := range sums {
				st.Apply("/t/T-long.json", store.FileVersion{Size: int64(d + 1)}, sum)
				if rows := st.LedgerRows(); rows > 8192 {
					t.Fatalf("day %d: %d rows, beyond the bound", d+1, rows)
				}
			}
			entries, spans := st.Ledger(), st.LedgerCoarsened()
			want := lt.daily(loc)
			if right, moved := daysRight(t, entries, loc, want); right != len(want) {
				t.Errorf("its own zone: %d of %d days right, %d input tokens on another day", right, len(want), moved)
			}
			if len(spans) == 0 {
				t.Fatal("nothing coarsened: the thread does not reach the bound")
			}
			if inexact := ledger.InexactDays(spans, loc); len(inexact) != 0 {
				t.Errorf("its own zone: days %v said inexact", inexact)
			}
			// Another zone: the days it gets wrong are among those the
			// spans say may be off, and the others are right.
			for _, other := range []string{"Pacific/Marquesas", "Asia/Kathmandu", "Pacific/Kiritimati", "America/New_York"} {
				oloc := zone(t, other)
				inexact := map[string]bool{}
				for _, d := range ledger.InexactDays(spans, oloc) {
					inexact[d] = true
				}
				r, err := Build(entries, Options{Kind: Daily, Location: oloc})
				if err != nil {
					t.Fatal(err)
				}
				owant := lt.daily(oloc)
				for _, per := range r.Periods {
					u := per.Usage
					u.Cost = 0
					if u != owant[per.Key] {
						if !inexact[per.Key] {
							t.Errorf("in %s, %s is wrong (%+v, want %+v) and not said to be", other, per.Key, u, owant[per.Key])
						}
						wrongElsewhere++
					}
				}
			}
		})
	}
	if wrongElsewhere == 0 {
		t.Error("no day of another zone made wrong: the spans are not put to the test")
	}
}

// BenchmarkLongThreadLedger reports what the 90-day thread's ledger holds
// in the exporter (applied day by day, as it grows; coarsened beyond the
// bound) and in a report's store (read once, whole, unbounded): rows,
// their bytes in memory (16 each), the coarsened stretches (8 bytes each)
// and the saved form's bytes.
//
//	go test -run '^$' -bench LongThreadLedger -benchtime 1x ./report/
func BenchmarkLongThreadLedger(b *testing.B) {
	pr, err := pricing.Embedded(nil)
	if err != nil {
		b.Fatal(err)
	}
	prices := pricing.New(pr, "genai-prices", pr.Version, nil)
	lt := longThread{start: time.Date(2025, 9, 20, 0, 0, 0, 0, time.UTC), days: 90}
	sums := lt.growing(b, 1)
	for _, bc := range []struct {
		name      string
		unbounded bool
		applied   []*thread.Summary
	}{{"exporter", false, sums}, {"report", true, sums[len(sums)-1:]}} {
		b.Run(bc.name, func(b *testing.B) {
			var st *store.ThreadStore
			for b.Loop() {
				st = store.NewThreadStore(store.StoreOptions{LedgerUnbounded: bc.unbounded, Now: func() time.Time { return lt.start.AddDate(0, 0, lt.days+1) }})
				st.SetPrices(prices)
				for d, sum := range bc.applied {
					st.Apply("/t/T-long.json", store.FileVersion{Size: int64(d + 1)}, sum)
				}
			}
			ts := st.Export().Threads["T-long"]
			saved, err := json.Marshal(ts)
			if err != nil {
				b.Fatal(err)
			}
			b.ReportMetric(float64(st.LedgerRows()), "rows")
			b.ReportMetric(float64(st.LedgerRows()*16+len(ts.LedgerCoarse)*8), "ledger-bytes")
			b.ReportMetric(float64(len(ts.LedgerCoarse)), "coarsened-spans")
			b.ReportMetric(float64(len(saved)), "state-bytes")
		})
	}
}
