package spend

import (
	"math"
	"testing"
	"time"

	"github.com/amp-exporter/amp-exporter/internal/runway"
	"github.com/amp-exporter/amp-exporter/ledger"
)

// usdAt is an entry of usd (a multiple of 1e-10) in the bucket holding t.
func usdAt(t time.Time, model string, usd float64) ledger.Entry {
	return ledger.Entry{Start: ledger.StartOf(t.UnixMilli()), Session: "T-1", Model: model,
		Usage: ledger.Usage{Input: 1, Cost: int64(math.Round(usd * 1e10))}}
}

// The runway reads the estimated spend of the last 6 hours from the
// ledger's buckets (every model, thread and repository of a bucket
// together), and the entitlement as it is now.
func TestSummaryRunway(t *testing.T) {
	now := time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC) // a bucket boundary
	left := 7.5
	ent := &Entitlement{Window: "daily", RemainingUSD: &left, ResetsAt: now.Add(10 * time.Hour)}
	// 2.5 USD/h for the last 6h: 0.625 per bucket, in two models.
	var steady []ledger.Entry
	for i := 1; i <= 24; i++ {
		at := now.Add(-time.Duration(i) * ledger.Bucket)
		steady = append(steady, usdAt(at, "opus", 0.5), usdAt(at, "sonnet", 0.125))
	}
	older := append([]ledger.Entry{usdAt(now.Add(-7*time.Hour), "opus", 100)}, steady...)
	tests := []struct {
		name    string
		entries []ledger.Entry
		ent     *Entitlement
		ok      bool
		perHour float64
		phrase  string
	}{
		{"out before the reset", steady, ent, true, 2.5, "out in ~3h at this pace"},
		{"spend older than 6h does not count", older, ent, true, 2.5, "out in ~3h at this pace"},
		{"the reset first", steady, &Entitlement{RemainingUSD: &left, ResetsAt: now.Add(2 * time.Hour)}, true, 2.5, "lasts until the reset"},
		{"nothing spent lately", []ledger.Entry{usdAt(now.Add(-7*time.Hour), "opus", 100)}, ent, false, 0, ""},
		{"no entitlement", steady, nil, false, 0, ""},
		{"undated usage is no pace", []ledger.Entry{{Start: ledger.Undated, Model: "m", Usage: ledger.Usage{Cost: 1e12}}}, ent, false, 0, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := Summarize(Input{Entries: tt.entries, Location: time.UTC, Now: now, Entitlement: tt.ent})
			r, ok := s.Runway()
			if ok != tt.ok {
				t.Fatalf("runway %+v %v, want ok %v", r, ok, tt.ok)
			}
			if !ok {
				if s.JSON().Runway != nil {
					t.Errorf("JSON has a runway: %+v", s.JSON().Runway)
				}
				return
			}
			if math.Abs(r.PerHour-tt.perHour) > 1e-9 || r.Phrase(now) != tt.phrase {
				t.Errorf("%v USD/h, %q; want %v, %q", r.PerHour, r.Phrase(now), tt.perHour, tt.phrase)
			}
			j := s.JSON().Runway
			if j == nil || j.USDPerHour != r.PerHour || !j.RunsOutAt.Equal(r.Out.Truncate(time.Second)) || j.BeforeReset != r.BeforeReset() {
				t.Errorf("JSON runway %+v, want %+v", j, r)
			}
		})
	}
}

// A summary kept (the ledger did not change) and read later: the runway is
// worked out at the summary's Now, from the buckets it kept.
func TestSummaryRunwayLater(t *testing.T) {
	made := time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
	left := 7.5
	var entries []ledger.Entry
	for i := 1; i <= 24; i++ {
		entries = append(entries, usdAt(made.Add(-time.Duration(i)*ledger.Bucket), "opus", 0.625))
	}
	s := Summarize(Input{Entries: entries, Location: time.UTC, Now: made, Entitlement: &Entitlement{RemainingUSD: &left}})
	if r, ok := s.Runway(); !ok || r.PerHour != 2.5 {
		t.Fatalf("at once: %+v %v", r, ok)
	}
	s.Now = made.Add(20 * time.Minute) // nothing spent since
	if r, ok := s.Runway(); ok {
		t.Fatalf("20 minutes later, nothing spent since: %+v, want no runway", r)
	}
	if want := runway.Pace(s.Recent, made); want != 2.5 {
		t.Fatalf("the kept buckets give %v USD/h", want)
	}
}

// Where the Amp server billed a thread for the day, its recent buckets
// count at what was billed: the day's bill spread over the thread's
// buckets of that day in proportion to their estimate. Threads without a
// bill (local ones, or today's not read yet) count at the estimate.
func TestSummaryRunwayBilled(t *testing.T) {
	now := time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
	day := time.Date(2026, 12, 2, 0, 0, 0, 0, time.UTC)
	left := 7.5
	var entries []ledger.Entry
	for i := 1; i <= 24; i++ {
		at := now.Add(-time.Duration(i) * ledger.Bucket)
		server := usdAt(at, "opus", 0.625) // 2.5 USD/h estimated
		server.Session = "T-server"
		local := usdAt(at, "opus", 0.625) // 2.5 USD/h estimated
		local.Session = "T-local"
		entries = append(entries, server, local)
	}
	early := usdAt(day.Add(2*time.Hour), "opus", 5) // earlier today: in the day's estimate (20 USD), not in the pace
	early.Session = "T-server"
	entries = append(entries, early)
	bill := func(from time.Time, usd float64) ledger.Bill {
		return ledger.Bill{Start: from.UnixMilli(), End: from.AddDate(0, 0, 1).UnixMilli(), Session: "T-server", USD: int64(usd * 1e10)}
	}
	tests := []struct {
		name    string
		bills   []ledger.Bill
		known   bool
		perHour float64
	}{
		// Billed 10 of an estimated 20: the server thread's 2.5 USD/h is
		// 1.25 billed; the local thread's 2.5 stays.
		{"today billed at half the estimate", []ledger.Bill{bill(day, 10), bill(day.AddDate(0, 0, -1), 99)}, true, 3.75},
		{"today's bill not read yet", []ledger.Bill{bill(day.AddDate(0, 0, -1), 99)}, true, 5},
		{"bills not known", nil, false, 5},
		{"billed nothing", []ledger.Bill{bill(day, 0)}, true, 2.5},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := Summarize(Input{Entries: entries, Bills: tt.bills, BillsKnown: tt.known, Location: time.UTC, Now: now,
				Entitlement: &Entitlement{RemainingUSD: &left}})
			r, ok := s.Runway()
			if !ok || math.Abs(r.PerHour-tt.perHour) > 1e-9 {
				t.Errorf("pace %v (%v), want %v USD/h", r.PerHour, ok, tt.perHour)
			}
		})
	}
}
