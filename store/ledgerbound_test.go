package store

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/amp-exporter/amp-exporter/ledger"
	"github.com/amp-exporter/amp-exporter/parser/thread"
)

// boundZones are zones whose midnights fall on every kind of UTC quarter
// hour, and zones that change for summer time.
var boundZones = []string{"UTC", "Asia/Kathmandu", "Pacific/Marquesas", "Pacific/Kiritimati", "Australia/Lord_Howe",
	"Europe/Berlin", "America/New_York", "Pacific/Chatham"}

func loadZone(t *testing.T, name string) *time.Location {
	t.Helper()
	loc, err := time.LoadLocation(name)
	if err != nil {
		t.Fatal(err)
	}
	return loc
}

// dayKey is one series' day in a zone.
type dayKey struct {
	id  uint32
	day string
}

// daySums adds rows up per series and day of loc ("-" for undated rows).
func daySums(rows threadLedger, loc *time.Location) map[dayKey]int64 {
	out := map[dayKey]int64{}
	for _, r := range rows {
		day := "-"
		if r.b != undatedBucket {
			day = time.UnixMilli(startOf(r.b)).In(loc).Format(time.DateOnly)
		}
		out[dayKey{r.id, day}] += r.v
	}
	return out
}

// coarsenCase is a thread's rows: series, active buckets and what each
// holds.
type coarsenCase struct {
	name  string
	rows  func() threadLedger
	bound int
	// level is the coarsest step the case needs: the days of the zone
	// stay exact up to "daily", not beyond.
	level string
}

// quarterHours: series ids 1..series, each with a row every step buckets
// from bucket 0 of 2026-01-05 for n rows; an undated row for series 1.
func quarterHours(series, n, step int) func() threadLedger {
	return func() threadLedger {
		b0 := bucketOf(time.Date(2026, 1, 5, 0, 0, 0, 0, time.UTC).UnixMilli())
		rng := rand.New(rand.NewPCG(uint64(series), uint64(n)))
		rows := threadLedger{{undatedBucket, 1, 5}}
		for id := range uint32(series) {
			for i := range n {
				rows = append(rows, ledgerRow{b0 + int32(i*step), id + 1, 1 + rng.Int64N(1000)})
			}
		}
		sortLedger(rows)
		return rows
	}
}

// TestLedgerCoarsensWithinDays: beyond its bound a thread's ledger keeps
// one row per series and hour of its zone for its oldest days, then one
// per day, then the oldest days together. Every series' sum stays; the
// undated row stays as it is; the rows fit in the bound with room to
// spare; each merged stretch is recorded; and, up to one row a day, every
// day of the zone keeps exactly its own spend, while the newest day keeps
// its quarter hours.
func TestLedgerCoarsensWithinDays(t *testing.T) {
	cases := []coarsenCase{
		// 85 days of continuous use of one series: hours suffice.
		{"continuous", quarterHours(1, maxLedgerRows+10, 1), maxLedgerRows, "hourly"},
		// Six series, four hours a day for 90 days.
		{"four hours a day", func() threadLedger {
			var rows threadLedger
			b0 := bucketOf(time.Date(2025, 9, 20, 9, 0, 0, 0, time.UTC).UnixMilli())
			for id := range uint32(6) {
				for d := range 90 {
					for q := range 16 {
						rows = append(rows, ledgerRow{b0 + int32(d*96+q), id, int64(d*16+q) + 1})
					}
				}
			}
			sortLedger(rows)
			return rows
		}, maxLedgerRows, "hourly"},
		// A row an hour for 30 days: only days help.
		{"hourly already", quarterHours(1, 720, 4), 100, "daily"},
		// A row a day for 200 days: the oldest days go together.
		{"daily already", quarterHours(2, 200, 96), 100, "together"},
	}
	for _, tc := range cases {
		for _, name := range boundZones {
			t.Run(tc.name+"/"+name, func(t *testing.T) {
				loc := loadZone(t, name)
				rows := tc.rows()
				got, spans := coarsenLedger(slices.Clone(rows), nil, tc.bound, loc)
				if len(got) > tc.bound-tc.bound/ledgerSlack {
					t.Fatalf("%d rows, want at most %d", len(got), tc.bound-tc.bound/ledgerSlack)
				}
				if len(spans) == 0 {
					t.Fatal("no coarsened stretch recorded")
				}
				sums := func(rows threadLedger) map[uint32]int64 {
					m := map[uint32]int64{}
					for _, r := range rows {
						m[r.id] += r.v
					}
					return m
				}
				if a, b := sums(rows), sums(got); fmt.Sprint(a) != fmt.Sprint(b) {
					t.Errorf("sums %v, want %v", b, a)
				}
				if rows[0].b == undatedBucket && got[0] != rows[0] {
					t.Errorf("undated row %+v, want %+v", got[0], rows[0])
				}
				if got[len(got)-1] != rows[len(rows)-1] {
					t.Errorf("newest row %+v, want it as it was (%+v)", got[len(got)-1], rows[len(rows)-1])
				}
				inexact := ledger.InexactDays(spansOf(spans), loc)
				if tc.level == "together" {
					if len(inexact) == 0 {
						t.Error("days merged together and none said inexact")
					}
					return
				}
				if len(inexact) != 0 {
					t.Errorf("days %v of the zone said inexact", inexact)
				}
				want, have := daySums(rows, loc), daySums(got, loc)
				for k, v := range want {
					if have[k] != v {
						t.Errorf("series %d, %s: %d, want %d", k.id, k.day, have[k], v)
					}
				}
				// The same rows coarsened again change nothing.
				again, spans2 := coarsenLedger(slices.Clone(got), spans, tc.bound, loc)
				if !slices.Equal(again, got) || !slices.Equal(spans2, spans) {
					t.Error("coarsening rows within the bound changed them")
				}
			})
		}
	}
}

func spansOf(spans []coarseSpan) []ledger.Span {
	out := make([]ledger.Span, len(spans))
	for i, sp := range spans {
		out[i] = ledger.Span{Start: startOf(sp.from), End: startOf(sp.to)}
	}
	return out
}

// TestLedgerCoarseSpansAreSaved: a thread's coarsened stretches are saved
// with its state and restored; stretches that do not check out are left
// out and counted as a repair; a state without them (written before they
// were kept) restores with none.
func TestLedgerCoarseSpansAreSaved(t *testing.T) {
	s := NewThreadStore(StoreOptions{})
	s.SetPrices(ledgerPrices())
	s.SetLedgerZone(loadZone(t, "Asia/Kathmandu"))
	n := maxLedgerRows + 5
	items := make([]thread.Item, 0, n)
	for i := range n {
		items = append(items, thread.Item{Key: msgKey(uint64(i + 1)), Role: thread.RoleAssistant, Model: "mx", StopReason: "end_turn",
			Tokens: thread.Tokens{Input: 10}, At: ledgerT0 + int64(i)*ledger.BucketMs})
	}
	s.Apply("/t/T-big.json", FileVersion{Size: 1}, thread.FromItems("T-big", "smart", items))
	spans := s.LedgerCoarsened()
	if len(spans) == 0 {
		t.Fatal("nothing coarsened")
	}
	ts := s.Export().Threads["T-big"]
	if len(ts.LedgerCoarse) == 0 {
		t.Fatal("no coarsened stretches saved")
	}
	intact, err := json.Marshal(ts.LedgerCoarse)
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name    string
		coarse  string // the saved ledger_coarse
		want    []ledger.Span
		repairs int
	}{
		{"intact", string(intact), spans, 0},
		{"absent", "null", []ledger.Span{}, 0},
		{"out of range", `[[5,3],[0,1],` + string(intact[1:]), spans, 1},
		{"not two integers", `[[1,2,3],"x",[5],[1.5,2],` + string(intact[1:]), spans, 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			saved := ts
			if err := json.Unmarshal([]byte(tc.coarse), &saved.LedgerCoarse); err != nil {
				t.Fatal(err)
			}
			n := NewThreadStore(StoreOptions{})
			if _, err := n.ImportThread("T-big", saved); err != nil {
				t.Fatal(err)
			}
			if got := n.LedgerCoarsened(); !slices.Equal(got, tc.want) {
				t.Errorf("restored %d stretches, want %d", len(got), len(tc.want))
			}
			if n.LedgerRepairs() != tc.repairs {
				t.Errorf("repairs %d, want %d", n.LedgerRepairs(), tc.repairs)
			}
			checkLedgerSums(t, n, tc.name)
		})
	}
}

// FuzzCoarseSpan: whatever a saved stretch holds, it reads without an
// error, and restoring it either keeps a stretch inside the buckets a
// ledger can hold or leaves it out as damage.
func FuzzCoarseSpan(f *testing.F) {
	for _, seed := range []string{`[1976960,1976964]`, `[5,3]`, `[1,2,3]`, `"x"`, `[1.5,2]`, `[]`, `null`, `[1976960,99999999999]`} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var c CoarseSpan
		if err := json.Unmarshal(data, &c); err != nil && json.Valid(data) {
			t.Fatalf("%q: %v", data, err)
		}
		spans, bad := coarseSpansOf([]CoarseSpan{c})
		if len(spans) == 1 == bad {
			t.Fatalf("%q: %v kept and bad %v", data, spans, bad)
		}
		for _, sp := range spans {
			if sp.from >= sp.to || sp.from < ampBeganBucket {
				t.Fatalf("%q: kept %+v", data, sp)
			}
		}
	})
}
