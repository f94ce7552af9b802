package spend

import (
	"fmt"
	"testing"
	"time"

	"github.com/amp-exporter/amp-exporter/ledger"
)

func zone(t *testing.T, name string) *time.Location {
	t.Helper()
	loc, err := time.LoadLocation(name)
	if err != nil {
		t.Fatal(err)
	}
	return loc
}

// at is an entry of cost (whole cents) at a wall time of loc.
func at(loc *time.Location, wall, model, repo string, cents int64) ledger.Entry {
	t, err := time.ParseInLocation("2006-01-02 15:04", wall, loc)
	if err != nil {
		panic(err)
	}
	return ledger.Entry{Start: ledger.StartOf(t.UnixMilli()), Session: "T-1", Model: model, Repo: repo,
		Usage: ledger.Usage{Input: 1, Cost: cents * 1e8}}
}

func cents(v int64) int64 { return v / 1e8 }

// The periods are taken in the zone: an entry at 23:50 on the 1st in
// Kathmandu (+05:45) is the 1st there and the 1st's evening in UTC; one at
// 00:10 on the 2nd is today there but yesterday in UTC.
func TestSummarizePeriods(t *testing.T) {
	ktm := zone(t, "Asia/Kathmandu")
	berlin := zone(t, "Europe/Berlin")
	tests := []struct {
		name                 string
		loc                  *time.Location
		now                  string
		entries              []ledger.Entry
		today, last7, month  int64 // cents
		todayDate, monthFrom string
		undated              int64
	}{
		{"kathmandu midnight", ktm, "2026-12-02 12:00", []ledger.Entry{
			at(ktm, "2026-12-01 23:50", "m", "", 3),
			at(ktm, "2026-12-02 00:10", "m", "", 5),
			at(ktm, "2026-11-30 23:59", "m", "", 7),  // last month, within 7 days
			at(ktm, "2026-11-25 23:59", "m", "", 11), // 8th day back: not in last 7
			at(ktm, "2026-12-02 12:15", "m", "", 13), // after now, today: in (a later bucket of today)
			at(ktm, "2026-12-03 00:00", "m", "", 17), // tomorrow: out
		}, 5 + 13, 3 + 5 + 7 + 13, 3 + 5 + 13, "2026-12-02", "2026-12-01", 0},
		{"berlin across the autumn change", berlin, "2026-10-25 23:30", []ledger.Entry{
			at(berlin, "2026-10-25 00:05", "m", "", 1), // the 25 h day
			at(berlin, "2026-10-25 23:20", "m", "", 2),
			at(berlin, "2026-10-24 23:59", "m", "", 4),
			at(berlin, "2026-10-01 00:00", "m", "", 8),
			at(berlin, "2026-09-30 23:45", "m", "", 16), // September, 26 days back: in no period asked but the chart's
			{Start: ledger.Undated, Model: "m", Usage: ledger.Usage{Cost: 32e8}},
		}, 1 + 2, 1 + 2 + 4, 1 + 2 + 4 + 8, "2026-10-25", "2026-10-01", 32},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			now, _ := time.ParseInLocation("2006-01-02 15:04", tt.now, tt.loc)
			s := Summarize(Input{Entries: tt.entries, Location: tt.loc, Now: now})
			if got := [3]int64{cents(s.Today.Estimated), cents(s.Last7.Estimated), cents(s.Month.Estimated)}; got != [3]int64{tt.today, tt.last7, tt.month} {
				t.Errorf("today, 7 days, month = %v, want %v", got, [3]int64{tt.today, tt.last7, tt.month})
			}
			if s.TodayDate != tt.todayDate || s.MonthFrom != tt.monthFrom {
				t.Errorf("today %s, month from %s", s.TodayDate, s.MonthFrom)
			}
			if cents(s.Undated) != tt.undated {
				t.Errorf("undated %d", cents(s.Undated))
			}
			if s.Today.Billed != nil || s.Month.Billed != nil {
				t.Errorf("billed known without bills")
			}
			// The chart's days add up to what the entries in them cost.
			var chart int64
			for _, d := range s.Days {
				var models int64
				for _, v := range d.Models {
					models += v
				}
				if models != d.Estimated {
					t.Errorf("%s: models add up to %d, the day is %d", d.Date, models, d.Estimated)
				}
				chart += d.Estimated
			}
			var want int64
			for _, e := range tt.entries {
				if e.Start >= s.Days[0].Start.UnixMilli() && e.Start < s.Days[ChartDays-1].Start.AddDate(0, 0, 1).UnixMilli() {
					want += e.Cost
				}
			}
			if chart != want {
				t.Errorf("chart %d, entries in its days %d", chart, want)
			}
			if len(s.Days) != ChartDays || s.Days[ChartDays-1].Date != tt.todayDate {
				t.Errorf("days %d, last %s", len(s.Days), s.Days[len(s.Days)-1].Date)
			}
		})
	}
}

// Bills are summed by the day they start in; with bills known, a period
// without any is billed $0, without them billed is unknown.
func TestSummarizeBills(t *testing.T) {
	loc := time.UTC
	now := time.Date(2026, 12, 2, 12, 0, 0, 0, loc)
	day := func(d int) int64 { return time.Date(2026, 12, d, 0, 0, 0, 0, loc).UnixMilli() }
	bills := []ledger.Bill{
		{Start: day(2), End: day(3), Session: "T-1", USD: 7e8},
		{Start: day(1), End: day(2), Session: "T-1", USD: 3e8},
		{Start: day(1) - 86400000, End: day(1), Session: "T-2", USD: 1e8}, // 30 November
	}
	s := Summarize(Input{Bills: bills, BillsKnown: true, Location: loc, Now: now})
	if s.Today.Billed == nil || cents(*s.Today.Billed) != 7 || cents(*s.Month.Billed) != 10 || cents(*s.Last7.Billed) != 11 {
		t.Errorf("billed today %v, month %v, 7 days %v", s.Today.Billed, s.Month.Billed, s.Last7.Billed)
	}
	if b := s.Days[0].Billed; b == nil || *b != 0 {
		t.Errorf("a day without bills: %v, want $0", b)
	}
}

// More models than colors: the cheapest are summed as OtherModels; the
// top repositories are this month's, highest first, the rest counted.
func TestSummarizeFoldsModelsAndRepositories(t *testing.T) {
	loc := time.UTC
	now := time.Date(2026, 12, 2, 12, 0, 0, 0, loc)
	var entries []ledger.Entry
	for i := range 8 {
		entries = append(entries, at(loc, "2026-12-02 10:00", fmt.Sprintf("model-%d", i), fmt.Sprintf("github.com/a/r%d", i), int64(10+i)))
	}
	entries = append(entries, at(loc, "2026-11-30 10:00", "model-0", "github.com/a/old", 1000)) // last month
	s := Summarize(Input{Entries: entries, Location: loc, Now: now})
	want := []string{"model-0", "model-7", "model-6", "model-5", "model-4", OtherModels}
	if fmt.Sprint(s.Models) != fmt.Sprint(want) {
		t.Errorf("models %v, want %v", s.Models, want)
	}
	today := s.Days[ChartDays-1]
	if got := cents(today.Models[len(want)-1]); got != 11+12+13 { // model-1, -2 and -3
		t.Errorf("other models today %d, want %d", got, 11+12+13)
	}
	if len(s.Repositories) != MaxRepositories || s.Repositories[0].Name != "github.com/a/r7" || s.MoreRepositories != 3 {
		t.Errorf("repositories %+v, %d more", s.Repositories, s.MoreRepositories)
	}
}

// Window covers exactly what Summarize reads: the month, the chart's days
// and today, in the zone.
func TestWindow(t *testing.T) {
	ktm := zone(t, "Asia/Kathmandu")
	for _, c := range []struct {
		now, from, to string
	}{
		{"2026-12-02 12:00", "2026-11-03 00:00", "2026-12-03 00:00"}, // the chart starts before the month
		{"2026-12-31 23:59", "2026-12-01 00:00", "2027-01-01 00:00"}, // the month starts before the chart
	} {
		now, _ := time.ParseInLocation("2006-01-02 15:04", c.now, ktm)
		from, to := Window(now, ktm)
		wf, _ := time.ParseInLocation("2006-01-02 15:04", c.from, ktm)
		wt, _ := time.ParseInLocation("2006-01-02 15:04", c.to, ktm)
		if from != wf.UnixMilli() || to != wt.UnixMilli() {
			t.Errorf("%s: [%s, %s), want [%s, %s)", c.now, time.UnixMilli(from).In(ktm), time.UnixMilli(to).In(ktm), c.from, c.to)
		}
		// An entry just outside changes nothing; one just inside does.
		in := func(at int64) Summary {
			return Summarize(Input{Entries: []ledger.Entry{{Start: at, Model: "m", Usage: ledger.Usage{Cost: 1}}}, Location: ktm, Now: now})
		}
		if s := in(from - ledger.BucketMs); s.Month.Estimated+s.Days[0].Estimated != 0 {
			t.Errorf("%s: a bucket before the window counted", c.now)
		}
		if s := in(to); s.Today.Estimated != 0 {
			t.Errorf("%s: a bucket after the window counted", c.now)
		}
		s := in(from)
		var chart int64
		for _, d := range s.Days {
			chart += d.Estimated
		}
		if s.Month.Estimated+chart == 0 {
			t.Errorf("%s: the window's first bucket counted nowhere", c.now)
		}
	}
}

// A thread's commits (ledger entries under no model, with no spend) are
// no model of the chart.
func TestSummarizeLeavesCommitsOut(t *testing.T) {
	loc := time.UTC
	now := time.Date(2026, 12, 2, 12, 0, 0, 0, loc)
	entries := []ledger.Entry{at(loc, "2026-12-02 10:00", "m", "", 5), at(loc, "2026-12-02 10:00", "", "", 0)}
	entries[1].Usage = ledger.Usage{Commits: 2, PullRequests: 1}
	s := Summarize(Input{Entries: entries, Location: loc, Now: now})
	if fmt.Sprint(s.Models) != "[m]" {
		t.Errorf("models %q, want [m]", s.Models)
	}
	if got := cents(s.Days[ChartDays-1].Estimated); got != 5 {
		t.Errorf("today %d cents, want 5", got)
	}
}
