// Package spend sums the usage ledger into what a person asks first: what
// was spent today, in the last 7 days and this month, per day of the last
// 30 by model, and in which repositories, in one time zone. The landing
// page, /api/spend and the statusline show the same Summary, so they
// never disagree.
package spend

import (
	"cmp"
	"slices"
	"sort"
	"time"

	"github.com/amp-exporter/amp-exporter/internal/runway"
	"github.com/amp-exporter/amp-exporter/internal/sat"
	"github.com/amp-exporter/amp-exporter/ledger"
)

// ChartDays is how many days the chart shows (today the last).
const ChartDays = 30

// MaxChartModels is how many models get a color of their own in the chart;
// the others are summed as OtherModels.
const MaxChartModels = 5

// MaxRepositories is how many repositories the summary names (this
// month's, by estimated cost).
const MaxRepositories = 5

// OtherModels names the models beyond MaxChartModels in the chart.
const OtherModels = "other models"

// Input is what a summary is made from.
type Input struct {
	Entries []ledger.Entry
	// Bills is what the Amp server billed; BillsKnown says whether the
	// exporter asks for bills at all (without, billed USD is unknown, not
	// zero).
	Bills      []ledger.Bill
	BillsKnown bool
	Location   *time.Location
	Now        time.Time
	// Entitlement is the Amp account's current window, nil when unknown.
	Entitlement *Entitlement
	// Coarsened are the stretches long threads' rows were merged over to
	// keep their ledgers bounded (ledger.Span).
	Coarsened []ledger.Span
}

// Amount is what was spent in a period, in the ledger's fixed point (1e-10
// USD).
type Amount struct {
	Estimated int64
	// Billed is nil when bills are not known.
	Billed *int64
}

// Day is one day of the chart.
type Day struct {
	// Date is YYYY-MM-DD in the summary's zone.
	Date string
	// Start is the day's first instant.
	Start time.Time
	Amount
	// Tokens are the day's tokens of every type.
	Tokens int64
	// Models is the day's estimated cost per chart model (Summary.Models),
	// in that order.
	Models []int64
}

// Repository is one repository's spend this month; Name "" is the usage
// of threads without one.
type Repository struct {
	Name      string
	Estimated int64
}

// Summary is the spend at a glance.
type Summary struct {
	Location *time.Location
	Now      time.Time
	// Today, Last7 (today and the 6 days before) and Month (since the
	// first of this month).
	Today, Last7, Month Amount
	// TodayDate, Last7From and MonthFrom are the first days of the
	// periods, YYYY-MM-DD.
	TodayDate, Last7From, MonthFrom string
	// Days are the last ChartDays days, oldest first.
	Days []Day
	// Models are the chart's series, by estimated cost over the chart's
	// days (highest first), OtherModels last when there are more.
	Models []string
	// Repositories are this month's top repositories by estimated cost.
	Repositories []Repository
	// MoreRepositories counts the repositories left out of Repositories.
	MoreRepositories int
	// Undated is the estimated cost of usage without any time (in no
	// period).
	Undated int64
	// Entitlement is the Amp account's current window, nil when unknown.
	Entitlement *Entitlement
	// CoarsenedFrom and CoarsenedTo are the first and last days (in the
	// zone) whose detail some long thread's ledger coarsened, "" for
	// none; InexactDays those of them whose spend may be off in this zone
	// (coarsened in another, before ledger.timezone changed).
	CoarsenedFrom, CoarsenedTo string
	InexactDays                []string
	// Recent is the spend of each ledger bucket from runway.Long before
	// Now on (oldest first, buckets without spend left out), billed where
	// known (recentSpend): what Runway reads. A summary kept while the ledger does
	// not change holds every bucket a later Now needs.
	Recent []runway.Spend
}

// Entitlement is the Amp account's current entitlement window as the Amp
// server last reported it; nil fields are unknown.
type Entitlement struct {
	Window       string
	LimitUSD     *float64
	RemainingUSD *float64
	UsedRatio    *float64
	// ResetsAt is zero when unknown.
	ResetsAt time.Time
}

// Summarize sums the ledger; every sum saturates (package sat), as the
// store's counters do. Days start at midnight in the zone (a day of
// a daylight-saving change is 23 or 25 hours); every ledger bucket lies in
// one day, since zones are whole quarter hours from UTC.
func Summarize(in Input) Summary {
	loc := in.Location
	if loc == nil {
		loc = time.Local
	}
	now := in.Now.In(loc)
	s := Summary{Location: loc, Now: in.Now, Entitlement: in.Entitlement}
	if len(in.Coarsened) > 0 {
		first, last := in.Coarsened[0].Start, in.Coarsened[0].End
		for _, sp := range in.Coarsened {
			first, last = min(first, sp.Start), max(last, sp.End)
		}
		s.CoarsenedFrom = time.UnixMilli(first).In(loc).Format(time.DateOnly)
		s.CoarsenedTo = time.UnixMilli(last - 1).In(loc).Format(time.DateOnly)
		s.InexactDays = ledger.InexactDays(in.Coarsened, loc)
	}
	y, m, d := now.Date()
	// starts[i] is the first instant of Days[i]; starts[ChartDays] is
	// tomorrow's.
	starts := make([]int64, ChartDays+1)
	s.Days = make([]Day, ChartDays)
	for i := range ChartDays + 1 {
		t := time.Date(y, m, d-(ChartDays-1)+i, 0, 0, 0, 0, loc)
		starts[i] = t.UnixMilli()
		if i < ChartDays {
			s.Days[i] = Day{Date: t.Format(time.DateOnly), Start: t}
		}
	}
	month := time.Date(y, m, 1, 0, 0, 0, 0, loc)
	monthStart := month.UnixMilli()
	from := min(monthStart, starts[0])
	end := starts[ChartDays]
	s.TodayDate = s.Days[ChartDays-1].Date
	s.Last7From = s.Days[ChartDays-7].Date
	s.MonthFrom = month.Format(time.DateOnly)

	dayOf := func(at int64) int {
		if at < starts[0] || at >= end {
			return -1
		}
		return sort.Search(ChartDays, func(i int) bool { return starts[i+1] > at }) // first day ending after at
	}
	byModel := map[string][]int64{} // per day
	modelTotal := map[string]int64{}
	repos := map[string]int64{}
	for i := range in.Entries {
		e := &in.Entries[i]
		if e.Start == ledger.Undated {
			s.Undated = sat.Add(s.Undated, e.Cost)
			continue
		}
		if e.Start < from || e.Start >= end {
			continue
		}
		if e.Start >= monthStart {
			s.Month.Estimated = sat.Add(s.Month.Estimated, e.Cost)
			repos[e.Repo] = sat.Add(repos[e.Repo], e.Cost)
		}
		if i := dayOf(e.Start); i >= 0 {
			s.Days[i].Estimated = sat.Add(s.Days[i].Estimated, e.Cost)
			s.Days[i].Tokens = sat.Add(s.Days[i].Tokens, e.Tokens())
			per := byModel[e.Model]
			if per == nil {
				per = make([]int64, ChartDays)
				byModel[e.Model] = per
			}
			per[i] = sat.Add(per[i], e.Cost)
			modelTotal[e.Model] = sat.Add(modelTotal[e.Model], e.Cost)
		}
	}
	if in.BillsKnown {
		var month int64
		days := make([]int64, ChartDays)
		for _, b := range in.Bills {
			if b.Start < from || b.Start >= end {
				continue
			}
			if b.Start >= monthStart {
				month = sat.Add(month, b.USD)
			}
			if i := dayOf(b.Start); i >= 0 {
				days[i] = sat.Add(days[i], b.USD)
			}
		}
		s.Month.Billed = &month
		for i := range s.Days {
			s.Days[i].Billed = &days[i]
		}
	}
	s.Today = s.Days[ChartDays-1].Amount
	s.Last7 = sumDays(s.Days[ChartDays-7:], in.BillsKnown)

	s.Models = chartModels(modelTotal)
	folded := len(s.Models) > MaxChartModels
	for i := range s.Days {
		s.Days[i].Models = make([]int64, len(s.Models))
	}
	colored := map[string]int{}
	for j, name := range s.Models {
		colored[name] = j
	}
	for name, per := range byModel {
		j, ok := colored[name]
		if !ok {
			if !folded {
				continue // a model that cost nothing in these days
			}
			j = len(s.Models) - 1 // OtherModels
		}
		for i, v := range per {
			s.Days[i].Models[j] = sat.Add(s.Days[i].Models[j], v)
		}
	}

	for name, v := range repos {
		if v > 0 {
			s.Repositories = append(s.Repositories, Repository{Name: name, Estimated: v})
		}
	}
	slices.SortFunc(s.Repositories, func(a, b Repository) int {
		return cmp.Or(cmp.Compare(b.Estimated, a.Estimated), cmp.Compare(a.Name, b.Name))
	})
	if n := len(s.Repositories); n > MaxRepositories {
		s.MoreRepositories = n - MaxRepositories
		s.Repositories = s.Repositories[:MaxRepositories]
	}
	s.Recent = recentSpend(in, ledger.StartOf(in.Now.Add(-runway.Long).UnixMilli()))
	return s
}

// recentSpend is the spend of each bucket from the one holding from on,
// oldest first, as the runway reads it: billed where the Amp server billed
// the thread for the day (the day's bill spread over the thread's buckets
// of that day in proportion to their estimated cost: bills are kept per
// day, the estimate per bucket), estimated elsewhere (threads never
// billed, and a day whose bill is not read yet).
func recentSpend(in Input, from int64) []runway.Spend {
	type dayKey struct {
		session string
		start   int64
	}
	bills := map[string][]ledger.Bill{} // by thread: the bills of days that reach into the window
	if in.BillsKnown {
		for _, b := range in.Bills {
			if b.End > from {
				bills[b.Session] = append(bills[b.Session], b)
			}
		}
	}
	billOf := func(e *ledger.Entry) (ledger.Bill, bool) {
		for _, b := range bills[e.Session] {
			if e.Start >= b.Start && e.Start < b.End {
				return b, true
			}
		}
		return ledger.Bill{}, false
	}
	estimated := map[dayKey]int64{} // a billed day's estimated cost
	if len(bills) > 0 {
		for i := range in.Entries {
			e := &in.Entries[i]
			if _, ok := bills[e.Session]; !ok || e.Start == ledger.Undated {
				continue
			}
			if b, ok := billOf(e); ok {
				k := dayKey{b.Session, b.Start}
				estimated[k] = sat.Add(estimated[k], e.Cost)
			}
		}
	}
	buckets := map[int64]float64{}
	for i := range in.Entries {
		e := &in.Entries[i]
		if e.Start == ledger.Undated || e.Start < from {
			continue
		}
		usd := USD(e.Cost)
		if b, ok := billOf(e); ok {
			if est := estimated[dayKey{b.Session, b.Start}]; est > 0 {
				usd *= float64(b.USD) / float64(est)
			}
		}
		buckets[e.Start] += usd
	}
	starts := make([]int64, 0, len(buckets))
	for start, v := range buckets {
		if v > 0 {
			starts = append(starts, start)
		}
	}
	slices.Sort(starts)
	out := make([]runway.Spend, len(starts))
	for i, start := range starts {
		out[i] = runway.Spend{Start: time.UnixMilli(start), End: time.UnixMilli(start + ledger.BucketMs), USD: buckets[start]}
	}
	return out
}

// Runway is when the entitlement window runs out at the pace of the
// recent spend (runway.Pace over Recent: billed where known), as of s.Now;
// false when nothing is being spent or what is left of the window is
// unknown or spent.
func (s Summary) Runway() (runway.Runway, bool) {
	e := s.Entitlement
	if e == nil {
		return runway.Runway{}, false
	}
	return runway.Of(e.RemainingUSD, e.ResetsAt, runway.Pace(s.Recent, s.Now), s.Now)
}

// sumDays adds days up.
func sumDays(days []Day, billsKnown bool) Amount {
	var a Amount
	var billed int64
	for _, d := range days {
		a.Estimated = sat.Add(a.Estimated, d.Estimated)
		if d.Billed != nil {
			billed = sat.Add(billed, *d.Billed)
		}
	}
	if billsKnown {
		a.Billed = &billed
	}
	return a
}

// chartModels are the models with a color of their own, by cost (then
// name), and OtherModels for the rest; models that cost nothing in the
// chart's days are left out.
func chartModels(total map[string]int64) []string {
	names := make([]string, 0, len(total))
	for name, v := range total {
		if v > 0 {
			names = append(names, name)
		}
	}
	slices.SortFunc(names, func(a, b string) int { return cmp.Or(cmp.Compare(total[b], total[a]), cmp.Compare(a, b)) })
	if len(names) > MaxChartModels+1 {
		names = append(names[:MaxChartModels], OtherModels)
	}
	return names
}

// Window is the time a summary made at now in loc reads, [from, to) in
// epoch ms: from the first of the month or the chart's first day, whichever
// is earlier, to the end of today. A ledger read for a summary need hold
// no other rows.
func Window(now time.Time, loc *time.Location) (from, to int64) {
	if loc == nil {
		loc = time.Local
	}
	y, m, d := now.In(loc).Date()
	first := time.Date(y, m, d-(ChartDays-1), 0, 0, 0, 0, loc).UnixMilli()
	month := time.Date(y, m, 1, 0, 0, 0, 0, loc).UnixMilli()
	return min(first, month), time.Date(y, m, d+1, 0, 0, 0, 0, loc).UnixMilli()
}

// USD converts the ledger's fixed point (1e-10 USD) to dollars.
func USD(v int64) float64 { return float64(v) / 1e10 }
