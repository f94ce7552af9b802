package store

import (
	"encoding/json"
	"slices"
	"testing"

	"github.com/amp-exporter/amp-exporter/ledger"
	"github.com/amp-exporter/amp-exporter/parser/thread"
)

// Spend too large for the fixed point saturates the counter; the ledger
// saturates with it instead of wrapping and losing its row.
func TestLedgerSaturatesWithTheCounter(t *testing.T) {
	s := NewThreadStore(StoreOptions{})
	s.SetPrices(ledgerPrices())
	it := thread.Item{Key: msgKey(1), Role: thread.RoleAssistant, Model: "m1", StopReason: "end_turn",
		Tokens: thread.Tokens{Input: 250_000_000_000_000, Output: 20_000_000_000_000}, At: ledgerT0}
	s.Apply("/t/T-o.json", FileVersion{Size: 1}, thread.FromItems("T-o", "smart", []thread.Item{it}))
	checkLedgerSums(t, s, "huge")
}

// A thread at its bound: new growth goes to its own bucket, not to a
// bucket whose row was folded away (which then looks short).
func TestLedgerBoundKeepsNewGrowthInItsBucket(t *testing.T) {
	s := NewThreadStore(StoreOptions{})
	n := maxLedgerRows + 5
	items := make([]thread.Item, 0, n+1)
	for i := range n {
		items = append(items, thread.Item{Key: msgKey(uint64(i + 1)), Role: thread.RoleAssistant, Model: "mx", StopReason: "end_turn",
			Tokens: thread.Tokens{Input: 10}, At: ledgerT0 + int64(i)*ledger.BucketMs})
	}
	s.Apply("/t/T-big.json", FileVersion{Size: 1}, thread.FromItems("T-big", "smart", slices.Clone(items)))
	if rows := s.LedgerRows(); rows > maxLedgerRows {
		t.Fatalf("%d rows, bound %d", rows, maxLedgerRows)
	}
	later := ledgerT0 + int64(n+100)*ledger.BucketMs
	items = append(items, thread.Item{Key: msgKey(uint64(n + 1)), Role: thread.RoleAssistant, Model: "mx", StopReason: "end_turn",
		Tokens: thread.Tokens{Input: 7}, At: later})
	s.Apply("/t/T-big.json", FileVersion{Size: 2}, thread.FromItems("T-big", "smart", slices.Clone(items)))
	checkLedgerSums(t, s, "bound")
	in := map[int64]int64{}
	for _, e := range s.Ledger() {
		in[e.Start] += e.Input
	}
	if in[ledger.StartOf(later)] != 7 {
		t.Errorf("the new item's bucket holds %d, want 7", in[ledger.StartOf(later)])
	}
}

// A damaged saved state: dollars in the retired part, rows before Amp
// began, rows that are not three integers. Each is left out or repaired;
// the thread's counters stay and the ledger adds up to them.
func TestLedgerDamagedStates(t *testing.T) {
	s := NewThreadStore(StoreOptions{})
	s.SetPrices(ledgerPrices())
	items := []thread.Item{spendMsg(1, "m1", ledgerT0, 100, 10, 0)}
	s.Apply("/t/T-c.json", FileVersion{Size: 1}, thread.FromItems("T-c", "smart", slices.Clone(items)))
	good := s.Export().Threads["T-c"]

	t.Run("dollars retired", func(t *testing.T) {
		ts := good
		var cost int64
		for _, sv := range ts.Series {
			if sv.Family == string(FamCost) {
				cost = sv.Value
			}
		}
		// More than the thread counted: merged, it would raise the counter.
		ts.Retired = append(slices.Clone(ts.Retired), SeriesValue{Family: string(FamCost), L1: "m1", Value: cost + 1000})
		n := NewThreadStore(StoreOptions{})
		n.SetPrices(ledgerPrices())
		if _, err := n.ImportThread("T-c", ts); err != nil {
			t.Fatal(err)
		}
		n.Apply("/t/T-c.json", FileVersion{Size: 2}, thread.FromItems("T-c", "smart", slices.Clone(items)))
		checkLedgerSums(t, n, "after apply")
		if got, want := moneyTotals(n), moneyTotals(s); !mapsEqual(got, want) {
			t.Errorf("counters %v, want %v", got, want)
		}
	})
	t.Run("before Amp", func(t *testing.T) {
		ts := good
		l := slices.Clone(ts.Ledger)
		for i := range l {
			l[i][0] = 0 // 1970-01-01
		}
		ts.Ledger = l
		n := NewThreadStore(StoreOptions{})
		if _, err := n.ImportThread("T-c", ts); err != nil {
			t.Fatal(err)
		}
		for _, e := range n.Ledger() {
			if e.Start != ledger.Undated {
				t.Errorf("row at %d kept", e.Start)
			}
		}
		if n.LedgerRepairs() != 1 {
			t.Errorf("repairs %d, want 1", n.LedgerRepairs())
		}
		checkLedgerSums(t, n, "restored")
	})
	for _, row := range []string{`[1,0,1e30]`, `[1,0,5.5]`, `[1,0,5,7]`, `"x"`} {
		t.Run("row "+row, func(t *testing.T) {
			raw := `{"series":[["tokens","m1","input",5]],"ledger":[` + row + `,[1966666,0,5]]}`
			var ts ThreadState
			if err := json.Unmarshal([]byte(raw), &ts); err != nil {
				t.Fatalf("the thread's state is lost with its row: %v", err)
			}
			n := NewThreadStore(StoreOptions{})
			if _, err := n.ImportThread("T-j", ts); err != nil {
				t.Fatal(err)
			}
			if n.LedgerRepairs() != 1 {
				t.Errorf("repairs %d, want 1", n.LedgerRepairs())
			}
			checkLedgerSums(t, n, "restored")
		})
	}
}

func mapsEqual(a, b map[SeriesKey]int64) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// The dollars of a series folded into other (two models, two prices) are
// split by what each bucket's tokens cost, not by their number.
func TestLedgerFoldedDollarsByPrice(t *testing.T) {
	s := NewThreadStore(StoreOptions{MaxLabelValues: 1})
	s.SetPrices(ledgerPrices())
	h := int64(3_600_000)
	mk := func(id uint64, model string, at, in int64) thread.Item {
		return thread.Item{Key: msgKey(id), Role: thread.RoleAssistant, Model: model, StopReason: "end_turn", Tokens: thread.Tokens{Input: in}, At: at}
	}
	s.Apply("/t/T-f.json", FileVersion{Size: 1}, thread.FromItems("T-f", "smart", []thread.Item{
		mk(1, "mz", ledgerT0, 1), mk(2, "m1", ledgerT0+h, 1000), mk(3, "m2", ledgerT0+2*h, 1000)}))
	checkLedgerSums(t, s, "folded")
	cost := map[int64]int64{}
	for _, e := range s.Ledger() {
		if e.Model == OtherValue {
			cost[e.Start] += e.Cost
		}
	}
	// m1 at $3, m2 at $1.1 a million input tokens.
	if got1, got2 := cost[ledger.StartOf(ledgerT0+h)], cost[ledger.StartOf(ledgerT0+2*h)]; got1 != 1000*30_000 || got2 != 1000*11_000 {
		t.Errorf("other's dollars by bucket %d and %d, want %d and %d", got1, got2, 1000*30_000, 1000*11_000)
	}
}
