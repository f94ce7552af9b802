package store

import (
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/amp-exporter/amp-exporter/internal/testsupport/testsize"
	"github.com/amp-exporter/amp-exporter/ledger"
	"github.com/amp-exporter/amp-exporter/parser/thread"
	"github.com/amp-exporter/amp-exporter/pricing"
)

var ledgerT0 = time.Date(2026, 11, 3, 23, 50, 0, 0, time.UTC).UnixMilli()

func ledgerPrices() Prices {
	return pricing.New(nil, "test", "1", map[string]pricing.Price{
		"m1": {Input: 3, Output: 15, CacheRead: 0.3, CacheWrite: 3.75, HasCacheRead: true, HasCacheWrite: true},
		"m2": {Input: 1.1, Output: 4.4},
	})
}

// spendMsg is an assistant message that spent tokens and credits at a
// time (0: none).
func spendMsg(id uint64, model string, at, in, out int64, credits float64) thread.Item {
	return thread.Item{Key: msgKey(id), Role: thread.RoleAssistant, Model: model, StopReason: "end_turn",
		Tokens: thread.Tokens{Input: in, Output: out, CacheRead: in / 3}, At: at, Credits: credits, HasCredits: credits > 0}
}

// ledgerSums adds a ledger up per series, as the store's totals name them.
func ledgerSums(entries []ledger.Entry) map[SeriesKey]int64 {
	out := map[SeriesKey]int64{}
	add := func(k SeriesKey, v int64) {
		if v != 0 {
			out[k] += v
		}
	}
	for _, e := range entries {
		add(SeriesKey{FamTokens, e.Model, "input", e.Repo}, e.Input)
		add(SeriesKey{FamTokens, e.Model, "output", e.Repo}, e.Output)
		add(SeriesKey{FamTokens, e.Model, "cache_read", e.Repo}, e.CacheRead)
		add(SeriesKey{FamTokens, e.Model, "cache_creation", e.Repo}, e.CacheCreation)
		add(SeriesKey{FamCredits, e.Model, "", e.Repo}, e.Credits)
		add(SeriesKey{FamCost, e.Model, "", e.Repo}, e.Cost)
	}
	return out
}

// moneyTotals is the store's totals of the families the ledger keeps.
func moneyTotals(s *ThreadStore) map[SeriesKey]int64 {
	out := map[SeriesKey]int64{}
	for k, v := range s.Snapshot().Totals() {
		if ledgerFamily[k.Fam] && v != 0 {
			out[k] = v
		}
	}
	return out
}

func checkLedgerSums(t *testing.T, s *ThreadStore, step string) {
	t.Helper()
	got, want := ledgerSums(s.Ledger()), moneyTotals(s)
	for k, v := range want {
		if got[k] != v {
			t.Fatalf("%s: ledger %v = %d, counter %d", step, k, got[k], v)
		}
	}
	for k, v := range got {
		if _, ok := want[k]; !ok {
			t.Fatalf("%s: ledger %v = %d, no counter", step, k, v)
		}
	}
}

// An item counts in the bucket of its own time and its growth in that
// same bucket; a thread's items of two days are in two days; items without
// a time are undated.
func TestLedgerCountsEachItemInItsBucket(t *testing.T) {
	s := NewThreadStore(StoreOptions{})
	s.SetPrices(ledgerPrices())
	day2 := ledgerT0 + 20*60_000 // 00:10 the next day (UTC)
	first := []thread.Item{spendMsg(1, "m1", ledgerT0, 100, 10, 0), spendMsg(2, "m1", day2, 50, 5, 0)}
	s.Apply("/t/T-a.json", FileVersion{Size: 1}, thread.FromItems("T-a", "smart", first))
	// The first message grows (a streaming update); a new one has no time.
	grown := []thread.Item{spendMsg(1, "m1", ledgerT0, 160, 40, 0), spendMsg(2, "m1", day2, 50, 5, 0), spendMsg(3, "m2", 0, 7, 1, 0)}
	s.Apply("/t/T-a.json", FileVersion{Size: 2}, thread.FromItems("T-a", "smart", grown))
	got := map[int64]ledger.Usage{}
	for _, e := range s.Ledger() {
		u := got[e.Start]
		u.Add(e.Usage)
		got[e.Start] = u
		if e.Session != "T-a" {
			t.Errorf("session %q", e.Session)
		}
	}
	b1, b2 := ledger.StartOf(ledgerT0), ledger.StartOf(day2)
	if got[b1].Input != 160 || got[b1].Output != 40 || got[b1].CacheRead != 53 {
		t.Errorf("first bucket %+v, want the grown first message (160/40/53)", got[b1])
	}
	if got[b2].Input != 50 || got[b2].Output != 5 {
		t.Errorf("second bucket %+v, want 50/5", got[b2])
	}
	if got[ledger.Undated].Input != 7 {
		t.Errorf("undated %+v, want the message without a time", got[ledger.Undated])
	}
	// m1 at $3/$15/$0.3 a million: (160·3 + 40·15 + 53·0.3)/1e6 USD.
	if want := int64(160*30_000 + 40*150_000 + 53*3_000); got[b1].Cost != want {
		t.Errorf("first bucket cost %d, want %d", got[b1].Cost, want)
	}
	checkLedgerSums(t, s, "end")
}

// An item whose time moves after it was counted keeps what it counted in
// its first bucket; only its later growth follows the new time.
func TestLedgerItemThatMovesKeepsItsCount(t *testing.T) {
	s := NewThreadStore(StoreOptions{})
	later := ledgerT0 + 3*3_600_000
	s.Apply("/t/T-m.json", FileVersion{Size: 1}, thread.FromItems("T-m", "smart", []thread.Item{spendMsg(1, "m1", ledgerT0, 100, 0, 0)}))
	s.Apply("/t/T-m.json", FileVersion{Size: 2}, thread.FromItems("T-m", "smart", []thread.Item{spendMsg(1, "m1", later, 130, 0, 0)}))
	in := map[int64]int64{}
	for _, e := range s.Ledger() {
		in[e.Start] += e.Input
	}
	if in[ledger.StartOf(ledgerT0)] != 100 || in[ledger.StartOf(later)] != 30 {
		t.Errorf("input by bucket %v; want 100 where it was first counted, 30 at its new time", in)
	}
	checkLedgerSums(t, s, "end")
}

// The ledger adds up to the counters exactly, always: random threads that
// grow, are rewritten and truncated, change models and times, with prices
// changing and the store restarted from its saved state (whole and thread
// by thread) in between.
func TestLedgerSumsEqualCounters(t *testing.T) {
	seeds, steps := 6, 60
	if testsize.Long() {
		seeds, steps = 40, 150
	}
	for seed := range seeds {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			r := rand.New(rand.NewPCG(uint64(seed), 7))
			s := NewThreadStore(StoreOptions{MaxLabelValues: 3})
			s.SetPrices(ledgerPrices())
			threads := map[string][]thread.Item{}
			models := []string{"m1", "m2", "m3", "m4", ""}
			for step := range steps {
				id := fmt.Sprintf("T-%d", r.IntN(4))
				items := slices.Clone(threads[id])
				switch op := r.IntN(10); {
				case op < 5 || len(items) == 0: // a new message
					at := ledgerT0 + r.Int64N(4*86_400_000)
					if r.IntN(8) == 0 {
						at = 0
					}
					items = append(items, spendMsg(uint64(len(items)+1+r.IntN(2)), models[r.IntN(len(models))], at,
						r.Int64N(5000), r.Int64N(900), float64(r.IntN(3))*0.37))
				case op < 7: // a message grows, maybe moving in time
					i := r.IntN(len(items))
					items[i].Tokens.Input += r.Int64N(300)
					items[i].Tokens.Output += r.Int64N(80)
					if r.IntN(3) == 0 {
						items[i].At += r.Int64N(7_200_000)
					}
				case op < 8: // truncated: an edited prompt drops what followed
					items = items[:r.IntN(len(items))]
				case op < 9: // a rewrite that shrinks a value
					i := r.IntN(len(items))
					items[i].Tokens.Input /= 2
				default:
					s.SetPrices(pricing.New(nil, "test", fmt.Sprint(step), map[string]pricing.Price{
						"m1": {Input: float64(1 + r.IntN(5)), Output: 15}, "m2": {Input: 0.7, Output: 3.3}}))
				}
				slices.SortFunc(items, func(a, b thread.Item) int { return int(a.Key>>1) - int(b.Key>>1) })
				items = slices.CompactFunc(items, func(a, b thread.Item) bool { return a.Key == b.Key })
				threads[id] = items
				s.Apply("/t/"+id+".json", FileVersion{Size: int64(step)}, thread.FromItems(id, "smart", slices.Clone(items)))
				checkLedgerSums(t, s, fmt.Sprintf("step %d", step))
				if r.IntN(12) == 0 {
					s = restartStore(t, s, r.IntN(2) == 0)
					checkLedgerSums(t, s, fmt.Sprintf("restart after step %d", step))
				}
			}
			if s.LedgerRepairs() != 0 {
				t.Errorf("%d ledgers repaired on restore; a saved ledger must add up", s.LedgerRepairs())
			}
		})
	}
}

// restartStore saves s and restores it into a new store, as one state
// (Export/Import) or thread by thread (ExportDelta/ImportThread), through
// JSON as the state log writes it.
func restartStore(t *testing.T, s *ThreadStore, whole bool) *ThreadStore {
	t.Helper()
	n := NewThreadStore(StoreOptions{MaxLabelValues: 3})
	n.SetPrices(ledgerPrices())
	if whole {
		b, err := json.Marshal(s.Export())
		if err != nil {
			t.Fatal(err)
		}
		var st State
		if err := json.Unmarshal(b, &st); err != nil {
			t.Fatal(err)
		}
		if err := n.Import(&st); err != nil {
			t.Fatal(err)
		}
		return n
	}
	st := s.Export()
	n.labels.restore(st.Labels)
	for key, ts := range st.Threads {
		b, err := json.Marshal(ts)
		if err != nil {
			t.Fatal(err)
		}
		var back ThreadState
		if err := json.Unmarshal(b, &back); err != nil {
			t.Fatal(err)
		}
		if _, err := n.ImportThread(key, back); err != nil {
			t.Fatal(err)
		}
	}
	for p, f := range st.Files {
		if err := n.ImportFile(p, f); err != nil {
			t.Fatal(err)
		}
	}
	return n
}

// A state written before the ledger, or with a damaged one, is restored
// with its usage (or what its rows lack) under no time, counted in
// LedgerRepairs; good rows keep their times.
func TestLedgerRestoreRepairs(t *testing.T) {
	s := NewThreadStore(StoreOptions{})
	s.SetPrices(ledgerPrices())
	s.Apply("/t/T-r.json", FileVersion{Size: 1}, thread.FromItems("T-r", "smart", []thread.Item{
		spendMsg(1, "m1", ledgerT0, 100, 10, 0.5), spendMsg(2, "m1", ledgerT0+86_400_000, 40, 4, 0)}))
	st := s.Export()
	ts := st.Threads["T-r"]
	if len(ts.Ledger) == 0 {
		t.Fatal("no ledger saved")
	}
	cases := map[string]func(ts *ThreadState){
		"before the ledger": func(ts *ThreadState) { ts.Ledger = nil },
		"series out of range": func(ts *ThreadState) {
			ts.Ledger = append(slices.Clone(ts.Ledger), LedgerRow{1, 999, 5})
		},
		"a row lost": func(ts *ThreadState) { ts.Ledger = slices.Clone(ts.Ledger[1:]) },
		"too much":   func(ts *ThreadState) { l := slices.Clone(ts.Ledger); l[0][2] *= 3; ts.Ledger = l },
		"not money": func(ts *ThreadState) {
			ts.Ledger = append(slices.Clone(ts.Ledger), LedgerRow{1, 0, 5}) // series 0 is context_bucket
		},
	}
	for name, damage := range cases {
		t.Run(name, func(t *testing.T) {
			d := ts
			damage(&d)
			n := NewThreadStore(StoreOptions{})
			if _, err := n.ImportThread("T-r", d); err != nil {
				t.Fatal(err)
			}
			if n.LedgerRepairs() != 1 {
				t.Errorf("repairs %d, want 1", n.LedgerRepairs())
			}
			checkLedgerSums(t, n, name)
		})
	}
	// An intact ledger needs no repair and keeps every row's time.
	n := NewThreadStore(StoreOptions{})
	if _, err := n.ImportThread("T-r", ts); err != nil {
		t.Fatal(err)
	}
	if n.LedgerRepairs() != 0 || !slices.Equal(n.Ledger(), s.Ledger()) {
		t.Errorf("intact ledger: repairs %d, entries %v, want %v", n.LedgerRepairs(), n.Ledger(), s.Ledger())
	}
}

// Growth no dated item explains (a value rounded differently per bucket,
// items that moved) goes to the series' latest bucket; dollars charged for
// tokens that grew in no bucket go there too; and shares of dollars that
// round down leave their rest in the bucket that grew most.
func TestLedgerSpreadRemainders(t *testing.T) {
	s := NewThreadStore(StoreOptions{})
	rec := &threadRecord{}
	in := SeriesKey{Fam: FamTokens, L1: "m1", L2: "input"}
	cost := SeriesKey{Fam: FamCost, L1: "m1"}
	sp := &ledgerSpread{s: s, rec: rec, now: map[SeriesKey][]bucketValue{in: {{10, 5}, {12, 3}}},
		add: map[ledgerSlot]int64{}, tokens: map[SeriesKey][]bucketValue{}}
	sp.grow(in, 20)                                  // 5 and 3 explained, 12 left: to bucket 12
	sp.charge(cost, 1000, in)                        // 1000 by 5:15 → 250 and 750
	sp.grow(SeriesKey{Fam: FamCredits, L1: "m1"}, 7) // nothing dated: undated
	sp.commit()
	want := map[ledgerSlot]int64{
		{s.series.id(in), 10}: 5, {s.series.id(in), 12}: 15,
		{s.series.id(cost), 10}: 250, {s.series.id(cost), 12}: 750,
		{s.series.id(SeriesKey{Fam: FamCredits, L1: "m1"}), undatedBucket}: 7,
	}
	got := map[ledgerSlot]int64{}
	for _, r := range rec.ledger {
		got[ledgerSlot{r.id, r.b}] = r.v
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("rows %v, want %v", got, want)
	}
	// 10 split 1:1:1 rounds each share down to 3: the rest goes to the
	// heaviest (first of equals).
	rec2 := &threadRecord{}
	sp = &ledgerSpread{s: s, rec: rec2, add: map[ledgerSlot]int64{},
		tokens: map[SeriesKey][]bucketValue{in: {{1, 1}, {2, 1}, {3, 1}}}}
	sp.charge(cost, 10, in)
	sp.commit()
	var sum int64
	for _, r := range rec2.ledger {
		sum += r.v
	}
	if sum != 10 || len(rec2.ledger) != 3 || rec2.ledger[0].v != 4 {
		t.Errorf("rows %v, want 4, 3, 3", rec2.ledger)
	}
}

// An item stamped at a time its thread cannot hold (a clock at 1970,
// before the thread was created) is in the ledger where the backfill and
// the report put it: at the thread's created.
func TestLedgerBoundsTimesAsTheReport(t *testing.T) {
	s := NewThreadStore(StoreOptions{})
	items := []thread.Item{spendMsg(1, "m1", 86_400_000, 10, 1, 0), spendMsg(2, "m1", ledgerT0-5*3_600_000, 20, 2, 0), spendMsg(3, "m1", ledgerT0+60_000, 30, 3, 0)}
	sum := thread.FromItems("T-b", "smart", items)
	sum.Created = ledgerT0
	s.Apply("/t/T-b.json", FileVersion{Size: 1}, sum)
	in := map[int64]int64{}
	for _, e := range s.Ledger() {
		in[e.Start] += e.Input
	}
	if want := map[int64]int64{ledger.StartOf(ledgerT0): 60}; fmt.Sprint(in) != fmt.Sprint(want) {
		t.Errorf("input by bucket %v, want all at the thread's created %v", in, want)
	}
}

// A ledger event stamped hours before its thread's created (the server's
// clock against a client clock that is ahead) is in the ledger at its own
// stamp, where the report and ccusage put it; a message stamped so is
// still at the created.
func TestLedgerKeepsEarlyLedgerEventsAtTheirStamp(t *testing.T) {
	s := NewThreadStore(StoreOptions{})
	early := ledgerT0 - 5*3_600_000
	event := thread.Item{Key: thread.ItemKey(thread.ItemLedger, 1), Model: "m1", At: early,
		Tokens: thread.Tokens{Input: 40, Output: 4}}
	sum := thread.FromItems("T-l", "smart", []thread.Item{event, spendMsg(2, "m1", early, 20, 2, 0), spendMsg(3, "m1", ledgerT0+60_000, 30, 3, 0)})
	sum.Created = ledgerT0
	s.Apply("/t/T-l.json", FileVersion{Size: 1}, sum)
	in := map[int64]int64{}
	for _, e := range s.Ledger() {
		in[e.Start] += e.Input
	}
	if want := map[int64]int64{ledger.StartOf(early): 40, ledger.StartOf(ledgerT0): 50}; fmt.Sprint(in) != fmt.Sprint(want) {
		t.Errorf("input by bucket %v, want the event at its stamp, the messages at the created %v", in, want)
	}
}

// After a truncation (an edited prompt drops the answer), the new answer
// counts in its own bucket even when the answer that left held that
// bucket: the retired part is kept per bucket too.
func TestLedgerTruncationKeepsNewItemsInTheirBucket(t *testing.T) {
	s := NewThreadStore(StoreOptions{})
	later := ledgerT0 + 2*3_600_000
	s.Apply("/t/T-e.json", FileVersion{Size: 1}, thread.FromItems("T-e", "smart", []thread.Item{spendMsg(2, "m1", ledgerT0, 100, 0, 0)}))
	// The answer left; a new one in the same quarter hour, and one later.
	s.Apply("/t/T-e.json", FileVersion{Size: 2}, thread.FromItems("T-e", "smart", []thread.Item{
		spendMsg(3, "m1", ledgerT0+60_000, 60, 0, 0), spendMsg(5, "m1", later, 30, 0, 0)}))
	in := map[int64]int64{}
	for _, e := range s.Ledger() {
		in[e.Start] += e.Input
	}
	if want := map[int64]int64{ledger.StartOf(ledgerT0): 160, ledger.StartOf(later): 30}; fmt.Sprint(in) != fmt.Sprint(want) {
		t.Errorf("input by bucket %v, want %v", in, want)
	}
	checkLedgerSums(t, s, "end")
	// Saved and restored, the retired part stays: a later growth of the
	// new answer still lands in its bucket.
	s = restartStore(t, s, false)
	s.Apply("/t/T-e.json", FileVersion{Size: 3}, thread.FromItems("T-e", "smart", []thread.Item{
		spendMsg(3, "m1", ledgerT0+60_000, 75, 0, 0), spendMsg(5, "m1", later, 30, 0, 0)}))
	in = map[int64]int64{}
	for _, e := range s.Ledger() {
		in[e.Start] += e.Input
	}
	if want := map[int64]int64{ledger.StartOf(ledgerT0): 175, ledger.StartOf(later): 30}; fmt.Sprint(in) != fmt.Sprint(want) {
		t.Errorf("after a restart: input by bucket %v, want %v", in, want)
	}
}

// TestLedgerOnSeveralCoresIsOneCores: the ledger of many threads added up
// on several cores (a share of the threads each) is the one added up on
// one, the whole of it and a range of buckets.
func TestLedgerOnSeveralCoresIsOneCores(t *testing.T) {
	s := NewThreadStore(StoreOptions{})
	s.SetPrices(ledgerPrices())
	threads := 4*ledgerShare + 37
	for i := range threads {
		id := fmt.Sprintf("T-%04d", i)
		at := ledgerT0 + int64(i%97)*15*60_000
		items := []thread.Item{spendMsg(1, "m1", at, 100+int64(i), 10, 0), spendMsg(2, []string{"m1", "m2"}[i%2], at+int64(i%5)*3_600_000, 50, 5, float64(i%3))}
		s.Apply("/t/"+id+".json", FileVersion{Size: 1}, thread.FromItems(id, "smart", items))
	}
	for _, r := range []struct{ from, to int64 }{{math.MinInt64, math.MaxInt64}, {ledgerT0 + 3_600_000, ledgerT0 + 10*3_600_000}} {
		one := s.ledgerBetween(r.from, r.to, 1)
		if len(one) < 100 {
			t.Fatalf("%d entries of %d threads: the ledger is not what the test thinks", len(one), threads)
		}
		for _, cores := range []int{2, 3, 64} {
			if got := s.ledgerBetween(r.from, r.to, cores); !slices.Equal(got, one) {
				t.Errorf("[%d, %d) on %d cores: %d entries differ from one core's %d", r.from, r.to, cores, len(got), len(one))
			}
		}
	}
}

// TestUsageField: each series the ledger keeps is one field of a usage,
// and no other series is any.
func TestUsageField(t *testing.T) {
	for _, c := range []struct {
		k    SeriesKey
		want ledger.Usage
	}{
		{SeriesKey{Fam: FamTokens, L1: "m", L2: "input"}, ledger.Usage{Input: 7}},
		{SeriesKey{Fam: FamTokens, L1: "m", L2: "output"}, ledger.Usage{Output: 7}},
		{SeriesKey{Fam: FamTokens, L1: "m", L2: "cache_read"}, ledger.Usage{CacheRead: 7}},
		{SeriesKey{Fam: FamTokens, L1: "m", L2: "cache_creation"}, ledger.Usage{CacheCreation: 7}},
		{SeriesKey{Fam: FamCredits, L1: "m"}, ledger.Usage{Credits: 7}},
		{SeriesKey{Fam: FamCost, L1: "m"}, ledger.Usage{Cost: 7}},
	} {
		var u ledger.Usage
		if f := UsageField(&c.k, &u); f == nil {
			t.Errorf("%v: no field", c.k)
		} else if *f = 7; u != c.want {
			t.Errorf("%v: %+v, want %+v", c.k, u, c.want)
		}
	}
	for _, k := range []SeriesKey{{Fam: FamTokens, L1: "m", L2: "reasoning"}, {Fam: FamTokensLong, L1: "m", L2: "input"}, {Fam: FamUnpriced, L1: "m"}, {Fam: FamToolCalls, L1: "Bash", L2: "done"}} {
		var u ledger.Usage
		if f := UsageField(&k, &u); f != nil {
			t.Errorf("%v: a field of the ledger", k)
		}
	}
}
