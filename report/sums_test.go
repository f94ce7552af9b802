package report

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/amp-exporter/amp-exporter/backfill"
	"github.com/amp-exporter/amp-exporter/internal/testsupport/threadgen"
	"github.com/amp-exporter/amp-exporter/parser/thread"
	"github.com/amp-exporter/amp-exporter/pricing"
	"github.com/amp-exporter/amp-exporter/store"
)

// TestLedgerSumsAreTheCounters: over generated corpora (usage and
// usageLedger threads, credits, several models; a copy of a thread under
// another file name), the ledger a report reads adds up, per model, to
// exactly what the exporter's store counts from the same files: tokens by
// type, credits and dollars, also when the label cap folds models into
// other (dollars of other mix models and are rounded).
func TestLedgerSumsAreTheCounters(t *testing.T) {
	pr, err := pricing.Embedded(nil)
	if err != nil {
		t.Fatal(err)
	}
	prices := pricing.New(pr, "genai-prices", pr.Version, nil)
	for _, seed := range []int64{11, 12} {
		for _, maxValues := range []int{100, 2} {
			t.Run(fmt.Sprintf("seed=%d/max_label_values=%d", seed, maxValues), func(t *testing.T) {
				dir := t.TempDir()
				g := threadgen.New(threadgen.Options{Threads: 40, TotalBytes: 3_000_000, Seed: seed,
					Start: time.Date(2026, 1, 20, 22, 0, 0, 0, time.UTC)})
				if _, err := g.WriteDir(dir); err != nil {
					t.Fatal(err)
				}
				name, data := g.Thread(3)
				if err := os.WriteFile(filepath.Join(dir, "copy-of-"+name), data, 0o644); err != nil {
					t.Fatal(err)
				}
				// One worker: the label cap keeps the models it sees first,
				// so the store is shown the files in the same order (the
				// first scan's: largest first).
				l, st, err := Load(context.Background(), LoadOptions{Dirs: []string{dir}, Workers: 1, Prices: prices,
					Labels: store.NewLabelCap(maxValues, nil), Now: time.Now()})
				if err != nil {
					t.Fatal(err)
				}
				if st.Duplicates != 1 {
					t.Errorf("%d duplicate files, want 1", st.Duplicates)
				}
				got := map[store.SeriesKey]int64{}
				for _, e := range l.Entries() {
					for i, v := range []int64{e.Input, e.Output, e.CacheRead, e.CacheCreation} {
						got[store.SeriesKey{Fam: store.FamTokens, L1: e.Model, L2: store.TokenTypes[i]}] += v
					}
					got[store.SeriesKey{Fam: store.FamCredits, L1: e.Model}] += e.Credits
					got[store.SeriesKey{Fam: store.FamCost, L1: e.Model}] += e.Cost
				}
				live := store.NewThreadStore(store.StoreOptions{MaxLabelValues: maxValues})
				live.SetPrices(prices)
				p := thread.NewParser()
				files, err := backfill.ThreadFiles([]string{dir})
				if err != nil {
					t.Fatal(err)
				}
				for _, path := range files {
					data, err := os.ReadFile(path)
					if err != nil {
						t.Fatal(err)
					}
					th, err := p.ParseBytes(data)
					if err != nil {
						t.Fatal(err)
					}
					live.Apply(path, store.FileVersion{Size: int64(len(data))}, thread.Summarize(th))
				}
				want := map[store.SeriesKey]int64{}
				for k, v := range live.Snapshot().Totals() {
					if (k.Fam == store.FamTokens || k.Fam == store.FamCredits || k.Fam == store.FamCost) && v > 0 {
						want[k] = v
					}
				}
				for k, v := range got {
					if v != want[k] {
						t.Errorf("%v: the ledger adds up to %d, the counter is %d", k, v, want[k])
					}
				}
				for k, v := range want {
					if _, ok := got[k]; !ok {
						t.Errorf("%v: counter %d, not in the ledger", k, v)
					}
				}
				// The exporter's own ledger, kept as it counted the files, is
				// row for row the one the report replayed.
				if maxValues == 100 {
					compareLedgers(t, live.Ledger(), l.Entries())
				}
				if want[store.SeriesKey{Fam: store.FamCredits, L1: "claude-opus-4-5-20251101"}] == 0 && maxValues == 100 {
					t.Errorf("no credits in the corpus: it does not exercise them")
				}
			})
		}
	}
}

// compareLedgers reports the rows two ledgers differ in.
func compareLedgers(t *testing.T, live, replayed []Entry) {
	t.Helper()
	type key struct {
		start          int64
		session, model string
	}
	index := func(es []Entry) map[key]Usage {
		m := map[key]Usage{}
		for _, e := range es {
			u := m[key{e.Start, e.Session, e.Model}]
			u.Add(e.Usage)
			m[key{e.Start, e.Session, e.Model}] = u
		}
		return m
	}
	a, b := index(live), index(replayed)
	n := 0
	for k, u := range b {
		if a[k] != u && n < 10 {
			t.Errorf("%v: live %+v, replayed %+v", k, a[k], u)
			n++
		}
	}
	for k, u := range a {
		if _, ok := b[k]; !ok && n < 10 {
			t.Errorf("%v: live %+v, not replayed", k, u)
			n++
		}
	}
}
