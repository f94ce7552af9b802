package report

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"time"
)

// Kind is how a report groups the usage.
type Kind string

// The reports.
const (
	Daily   Kind = "daily"
	Monthly Kind = "monthly"
	Session Kind = "session"
)

// Options select and group the usage of a report.
type Options struct {
	Kind Kind
	// Location is the time zone days and months are taken in.
	Location *time.Location
	// Since and Until bound the days whose usage counts, inclusive,
	// YYYY-MM-DD (ParseDate); "" for no bound.
	Since, Until string
	// Last keeps the usage of the last Last periods up to Now: days of a
	// daily report, months of a monthly one (1 is today, this month), and
	// the Last most recently active threads of a session report; 0 keeps
	// everything.
	Last int
	// Now is when the report is made (for Last).
	Now time.Time
}

// Period is one row of a report: a day, a month or a thread.
type Period struct {
	// Key is the date (YYYY-MM-DD), the month (YYYY-MM) or the thread id.
	Key string
	Usage
	// Models is the usage per model.
	Models map[string]*Usage
	// Repos is the usage per repository ("" for threads without one).
	Repos map[string]*Usage
	// First and Last are the first and last buckets with usage (epoch ms).
	First, Last int64
	order       []string // models in the order first used
}

// ModelsUsed lists the period's models in the order they were first used.
func (p *Period) ModelsUsed() []string { return p.order }

// Breakdown lists the period's models by estimated cost, highest first
// (as ccusage orders its modelBreakdowns), then by name.
func (p *Period) Breakdown() []string {
	names := slices.Clone(p.order)
	slices.SortStableFunc(names, func(a, b string) int {
		return cmp.Or(cmp.Compare(p.Models[b].Cost, p.Models[a].Cost), cmp.Compare(a, b))
	})
	return names
}

// Repositories lists the period's repositories by estimated cost, highest
// first, then by name; "" (threads without one) among them.
func (p *Period) Repositories() []string {
	names := make([]string, 0, len(p.Repos))
	for r := range p.Repos {
		names = append(names, r)
	}
	slices.SortFunc(names, func(a, b string) int {
		return cmp.Or(cmp.Compare(p.Repos[b].Cost, p.Repos[a].Cost), cmp.Compare(a, b))
	})
	return names
}

// Report is a grouped report.
type Report struct {
	Kind    Kind
	Periods []*Period
	Totals  Usage
	// Undated is the usage left out for want of any time (Undated
	// bucket): the exporter's counters have it, no period can.
	Undated Usage
}

// Build groups the ledger's entries into a report.
func Build(entries []Entry, o Options) (*Report, error) {
	if o.Location == nil {
		o.Location = time.Local
	}
	if o.Since != "" && o.Until != "" && o.Since > o.Until {
		return nil, fmt.Errorf("--since %s is after --until %s", o.Since, o.Until)
	}
	if o.Last < 0 {
		return nil, errors.New("--last must not be negative")
	}
	switch o.Kind {
	case Daily, Monthly, Session:
	default:
		return nil, fmt.Errorf("unknown report %q", o.Kind)
	}
	from := lastFrom(o)
	r := &Report{Kind: o.Kind}
	byKey := map[string]*Period{}
	// Entries come by time, a day's together: its name is made once.
	var day string
	var dayY, dayD int
	var dayM time.Month
	for i := range entries {
		e := &entries[i]
		if e.Start == Undated {
			r.Undated.Add(e.Usage)
			continue
		}
		if y, m, d := time.UnixMilli(e.Start).In(o.Location).Date(); day == "" || y != dayY || m != dayM || d != dayD {
			dayY, dayM, dayD = y, m, d
			day = time.Date(y, m, d, 12, 0, 0, 0, time.UTC).Format("2006-01-02")
		}
		if (o.Since != "" && day < o.Since) || (o.Until != "" && day > o.Until) || (from != "" && day < from) {
			continue
		}
		key := day
		switch o.Kind {
		case Monthly:
			key = day[:7]
		case Session:
			key = e.Session
		}
		p := byKey[key]
		if p == nil {
			p = &Period{Key: key, Models: map[string]*Usage{}, Repos: map[string]*Usage{}, First: e.Start}
			byKey[key] = p
			r.Periods = append(r.Periods, p)
		}
		p.Add(e.Usage)
		p.First, p.Last = min(p.First, e.Start), max(p.Last, e.Start)
		// The commits and pull requests of a thread's shell calls name no
		// model: they are the period's, not a model's.
		if !shipsOnly(e) {
			m := p.Models[e.Model]
			if m == nil {
				m = &Usage{}
				p.Models[e.Model] = m
				p.order = append(p.order, e.Model)
			}
			m.Add(e.Usage)
		}
		rp := p.Repos[e.Repo]
		if rp == nil {
			rp = &Usage{}
			p.Repos[e.Repo] = rp
		}
		rp.Add(e.Usage)
	}
	if o.Kind == Session {
		// Threads by id, as ccusage lists them (Amp's ids are UUIDv7:
		// the order they were created in); the Last most recently active
		// ones.
		slices.SortFunc(r.Periods, func(a, b *Period) int { return cmp.Compare(a.Key, b.Key) })
		if o.Last > 0 && len(r.Periods) > o.Last {
			byLast := slices.Clone(r.Periods)
			slices.SortFunc(byLast, func(a, b *Period) int { return cmp.Or(cmp.Compare(b.Last, a.Last), cmp.Compare(a.Key, b.Key)) })
			keep := map[*Period]bool{}
			for _, p := range byLast[:o.Last] {
				keep[p] = true
			}
			r.Periods = slices.DeleteFunc(r.Periods, func(p *Period) bool { return !keep[p] })
		}
	} else {
		slices.SortFunc(r.Periods, func(a, b *Period) int { return cmp.Compare(a.Key, b.Key) })
	}
	for _, p := range r.Periods {
		r.Totals.Add(p.Usage)
	}
	return r, nil
}

// shipsOnly reports whether an entry holds commits and pull requests
// alone (the ledger keeps them under no model).
func shipsOnly(e *Entry) bool {
	u := e.Usage
	u.Commits, u.PullRequests = 0, 0
	return e.Model == "" && u.IsZero()
}

// lastFrom is the first day --last keeps, "" for all: the first day of
// the last Last days (daily) or months (monthly) up to Now, in the
// report's zone.
func lastFrom(o Options) string {
	if o.Last <= 0 || o.Kind == Session {
		return ""
	}
	now := o.Now.In(o.Location)
	if o.Kind == Monthly {
		return time.Date(now.Year(), now.Month()-time.Month(o.Last-1), 1, 0, 0, 0, 0, o.Location).Format("2006-01-02")
	}
	return time.Date(now.Year(), now.Month(), now.Day()-(o.Last-1), 0, 0, 0, 0, o.Location).Format("2006-01-02")
}
