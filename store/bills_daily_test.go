package store

import (
	"fmt"
	"reflect"
	"testing"

	"github.com/amp-exporter/amp-exporter/ledger"
)

const dayMs = 86_400_000

// day is day n of the test's calendar (UTC days from 2026-04-01).
func day(n int64) DayBill {
	const d0 = 1775001600000 // 2026-04-01T00:00:00Z
	return DayBill{Start: d0 + n*dayMs, End: d0 + (n+1)*dayMs}
}

// A server thread's bills per day: marked due, listed newest first, read,
// listed by Bills under the thread's pinned repository, and kept across a
// restart from either form of the saved state, due days included.
func TestDayBillsKeptAndRestored(t *testing.T) {
	s := repoStore(0, unreadable{})
	s.Apply(AmpServerPath("T-1"), FileVersion{}, summaryOf(t, repoThread("T-1", "git@github.com:acme/web.git", 100)))
	s.Apply(AmpServerPath("T-2"), FileVersion{}, summaryOf(t, repoThread("T-2", "", 100)))
	if n := s.MarkDayBillsDue("T-1", []DayBill{day(0), day(1), day(2)}); n != 3 {
		t.Fatalf("marked %d days, want 3", n)
	}
	if n := s.MarkDayBillsDue("T-2", []DayBill{day(1)}); n != 1 {
		t.Fatalf("marked %d days, want 1", n)
	}
	if n := s.MarkDayBillsDue("T-unknown", []DayBill{day(1)}); n != 0 {
		t.Fatalf("a thread the store does not count: %d days marked", n)
	}
	due := s.DueDayBills(day(0).End, 3)
	want := []DueDayBill{{"T-1", day(2).Start, day(2).End}, {"T-1", day(1).Start, day(1).End}, {"T-2", day(1).Start, day(1).End}}
	if !reflect.DeepEqual(due, want) {
		t.Fatalf("due %v, want the newest three after day 0: %v", due, want)
	}
	if len(s.Bills()) != 0 {
		t.Fatal("days never read are listed as bills")
	}
	for i, d := range []DayBill{day(0), day(1), day(2)} {
		if !s.ApplyDayBill("T-1", d.Start, d.End, map[string]float64{"paid": 0.25 * float64(i+1), "free": 0.125}, d.End+1) {
			t.Fatalf("day %d not kept", i)
		}
	}
	s.ApplyDayBill("T-2", day(1).Start, day(1).End, map[string]float64{"total": 0}, day(1).Start+5)
	// Read again, unchanged: nothing to save.
	if s.ApplyDayBill("T-2", day(1).Start, day(1).End, map[string]float64{"total": 0}, day(1).Start+5) {
		t.Fatal("an unchanged day counted as a change")
	}
	if s.ApplyDayBill("T-1", day(5).Start, day(5).End, map[string]float64{"total": 1}, 1) {
		t.Fatal("a day never marked was kept")
	}
	s.MarkDayBillsDue("T-2", []DayBill{day(3)}) // due across the restart
	wantBills := []ledger.Bill{
		{Start: day(0).Start, End: day(0).End, Session: "T-1", Repo: "github.com/acme/web", USD: 3_750_000_000},
		{Start: day(1).Start, End: day(1).End, Session: "T-1", Repo: "github.com/acme/web", USD: 6_250_000_000},
		{Start: day(1).Start, End: day(1).End, Session: "T-2", USD: 0},
		{Start: day(2).Start, End: day(2).End, Session: "T-1", Repo: "github.com/acme/web", USD: 8_750_000_000},
	}
	if got := s.Bills(); !reflect.DeepEqual(got, wantBills) {
		t.Fatalf("bills\n%v\nwant\n%v", got, wantBills)
	}

	whole := repoStore(0, unreadable{})
	if err := whole.Import(roundTrip(t, s.Export())); err != nil {
		t.Fatal(err)
	}
	rp := &replay{threads: map[string]ThreadState{}, files: map[string]FileRecord{}}
	rp.add(t, s.ExportDelta())
	for name, r := range map[string]*ThreadStore{"whole state": whole, "deltas": rp.restore(t)} {
		if got := r.Bills(); !reflect.DeepEqual(got, wantBills) {
			t.Errorf("%s: bills after the restart\n%v\nwant\n%v", name, got, wantBills)
		}
		if got := r.DueDayBills(0, 10); !reflect.DeepEqual(got, []DueDayBill{{"T-2", day(3).Start, day(3).End}}) {
			t.Errorf("%s: due after the restart %v", name, got)
		}
		if got := r.DayBills("T-1"); len(got) != 3 || got[2].ReadAt != day(2).End+1 {
			t.Errorf("%s: T-1's days %+v", name, got)
		}
	}
	// A later change is in the next delta only.
	if d := s.ExportDelta(); !d.Empty() {
		t.Fatal("nothing changed, yet a delta")
	}
	s.DropDayBillDue("T-2", day(3).Start, day(3).End)
	if d := s.ExportDelta(); d.ThreadCount() != 1 || len(s.DueDayBills(0, 10)) != 0 {
		t.Fatal("a day taken off the due ones is not saved")
	}
}

// Days of another time zone (kept before the zone changed) that overlap a
// new day are dropped, so a thread's days never overlap and Bills never
// counts an hour twice; a thread keeps maxDayBills days at most.
func TestDayBillsDisjointAndBounded(t *testing.T) {
	s := repoStore(0, unreadable{})
	s.Apply(AmpServerPath("T-1"), FileVersion{}, summaryOf(t, repoThread("T-1", "", 100)))
	s.MarkDayBillsDue("T-1", []DayBill{day(-3), day(0), day(1), day(2)})
	for _, d := range []DayBill{day(-3), day(0), day(1), day(2)} {
		s.ApplyDayBill("T-1", d.Start, d.End, map[string]float64{"total": 1}, d.End)
	}
	// Days of UTC+05:30, from day 1 on: each overlaps two UTC days, the
	// three of them go (and are asked again as the new zone's days as far
	// as they are marked); day -3 overlaps none and stays.
	shift := int64(-5*3600_000 - 1800_000)
	ist := []DayBill{{Start: day(1).Start + shift, End: day(1).End + shift}, {Start: day(2).Start + shift, End: day(2).End + shift}}
	if n := s.MarkDayBillsDue("T-1", ist); n != 2 {
		t.Fatalf("marked %d", n)
	}
	got := s.DayBills("T-1")
	if len(got) != 3 || got[0] != (DayBill{Start: day(-3).Start, End: day(-3).End, USD: 1e10, ReadAt: day(-3).End}) ||
		got[1] != (DayBill{Start: ist[0].Start, End: ist[0].End, Due: true}) || got[2] != (DayBill{Start: ist[1].Start, End: ist[1].End, Due: true}) {
		t.Fatalf("days after the zone changed %+v", got)
	}
	for i := 1; i < len(got); i++ {
		if got[i].Start < got[i-1].End {
			t.Fatalf("days overlap: %+v", got)
		}
	}

	var many []DayBill
	for n := range int64(maxDayBills + 50) {
		many = append(many, day(10+n))
	}
	s.MarkDayBillsDue("T-1", many)
	if got := s.DayBills("T-1"); len(got) != maxDayBills || got[len(got)-1] != (DayBill{Start: many[len(many)-1].Start, End: many[len(many)-1].End, Due: true}) {
		t.Fatalf("%d days kept, want the newest %d", len(got), maxDayBills)
	}
	// A damaged state: days that are no period, overlap or are negative
	// are left out.
	restored := dayBillsOf([]DayBill{day(3), {Start: 5, End: 5}, {Start: day(3).Start + 1, End: day(3).End + 1}, {Start: day(1).Start, End: day(1).End, USD: -1}, day(0)})
	if fmt.Sprint(restored) != fmt.Sprint([]DayBill{day(0), day(3)}) {
		t.Fatalf("restored %v", restored)
	}
}
