package store

import (
	"cmp"
	"slices"
	"strings"

	"github.com/amp-exporter/amp-exporter/internal/sat"
	"github.com/amp-exporter/amp-exporter/ledger"
)

// A server thread's bill per day. threadDisplayCostInfo answers what Amp
// billed a thread within a period; the server source asks it, for each day
// of the exporter's time zone a thread was active, and keeps the answers
// here, in the thread's record, saved with it. amp_billed_cost_usd_total
// stays the bill of the whole thread (bills.go, ampserver.go): the days
// are for the usage ledger (Bills), which has no metric of its own.
//
// Size: one DayBill (40 bytes, ~90 in the state file) per thread and day
// it was active within the source's horizon while the exporter ran, never
// more than maxDayBills a thread, and 24 bytes a record for the slice. At
// 30,000 threads active 1.04 days each (the generated corpus), 31,200
// days: 2.9 MB more heap right after they were read (the days, and the
// set of changed threads until the next save), 2.8 MB more state, written
// a thread's record at a time as its days are read.

// DayBill is a thread's bill within one day [Start, End) (epoch ms), as
// saved: USD in 1e-10 USD, ReadAt when it was asked (epoch ms, 0 while it
// never was), Due while it is to be asked.
type DayBill struct {
	Start  int64 `json:"s"`
	End    int64 `json:"e"`
	USD    int64 `json:"usd,omitempty"`
	ReadAt int64 `json:"read,omitempty"`
	Due    bool  `json:"due,omitempty"`
}

// maxDayBills bounds a thread's days: more than a year of days a thread
// was active is not a thread but a bug, and the oldest go first.
const maxDayBills = 400

// DueDayBill names one day bill to be asked.
type DueDayBill struct {
	ID         string
	Start, End int64
}

// DayBills returns a copy of the days kept for thread id.
func (s *ThreadStore) DayBills(id string) []DayBill {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if rec := s.threads[id]; rec != nil {
		return slices.Clone(rec.more().days)
	}
	return nil
}

// MarkDayBillsDue marks days of thread id as to be asked: a day already
// kept is marked, a new one added. A kept day that overlaps a new one
// without being it (a day of another time zone, kept before the zone
// changed) is dropped, so the days stay disjoint and no bill is counted
// twice. It returns how many days it marked; a thread the store does not
// count has none.
func (s *ThreadStore) MarkDayBillsDue(id string, days []DayBill) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	rec := s.threads[id]
	if rec == nil || len(days) == 0 {
		return 0
	}
	next := slices.Clone(rec.more().days)
	n := 0
	for _, d := range days {
		if d.End <= d.Start {
			continue
		}
		i, found := slices.BinarySearchFunc(next, d.Start, func(b DayBill, at int64) int { return cmp.Compare(b.Start, at) })
		if found && next[i].End == d.End {
			if !next[i].Due {
				next[i].Due = true
				n++
			}
			continue
		}
		next = slices.DeleteFunc(next, func(b DayBill) bool { return b.Start < d.End && d.Start < b.End })
		i, _ = slices.BinarySearchFunc(next, d.Start, func(b DayBill, at int64) int { return cmp.Compare(b.Start, at) })
		next = slices.Insert(next, i, DayBill{Start: d.Start, End: d.End, Due: true})
		n++
	}
	if len(next) > maxDayBills {
		next = slices.Clone(next[len(next)-maxDayBills:])
	}
	if n > 0 || len(next) != len(rec.more().days) {
		rec.change(func(x *threadExtra) { x.days = next })
		s.changedThreads[id] = struct{}{}
		s.generation++
	}
	return n
}

// DueDayBills lists up to limit days to be asked that end after since
// (epoch ms), the newest first: today's bill is the one most looked at.
func (s *ThreadStore) DueDayBills(since int64, limit int) []DueDayBill {
	s.mu.RLock()
	var out []DueDayBill
	for id, rec := range s.threads {
		for _, d := range rec.more().days {
			if d.Due && d.End > since {
				out = append(out, DueDayBill{ID: id, Start: d.Start, End: d.End})
			}
		}
	}
	s.mu.RUnlock()
	slices.SortFunc(out, func(a, b DueDayBill) int {
		return cmp.Or(cmp.Compare(b.Start, a.Start), strings.Compare(a.ID, b.ID))
	})
	return out[:min(len(out), max(limit, 0))]
}

// ApplyDayBill records thread id's bill of the day [start, end), read at
// readAt (epoch ms): usd split by kind as for ApplyBilled, kept as their
// sum. A day no longer kept (replaced meanwhile) is left alone.
func (s *ThreadStore) ApplyDayBill(id string, start, end int64, usd map[string]float64, readAt int64) bool {
	var amount int64
	for _, v := range usd {
		amount = sat.Add(amount, fixed(FamBilled, v))
	}
	return s.setDay(id, start, end, func(d *DayBill) {
		d.USD, d.ReadAt, d.Due = amount, readAt, false
	})
}

// DropDayBillDue takes the day [start, end) of thread id off the days to
// be ask: the server cannot answer it (the thread is gone, its answer is
// not understood). What was read of it before is kept.
func (s *ThreadStore) DropDayBillDue(id string, start, end int64) bool {
	return s.setDay(id, start, end, func(d *DayBill) { d.Due = false })
}

func (s *ThreadStore) setDay(id string, start, end int64, set func(*DayBill)) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	rec := s.threads[id]
	if rec == nil {
		return false
	}
	days := rec.more().days
	i, found := slices.BinarySearchFunc(days, start, func(b DayBill, at int64) int { return cmp.Compare(b.Start, at) })
	if !found || days[i].End != end {
		return false
	}
	next := slices.Clone(days)
	set(&next[i])
	if next[i] == days[i] {
		return false
	}
	rec.change(func(x *threadExtra) { x.days = next })
	s.changedThreads[id] = struct{}{}
	s.generation++
	return true
}

// Bills lists the day bills read so far, by day and thread: Session is
// the thread's id, Repo the repository label value the thread is pinned
// to. A day never read is not listed (its bill is not known, which is not
// a bill of zero).
func (s *ThreadStore) Bills() []ledger.Bill {
	s.mu.RLock()
	var out []ledger.Bill
	for id, rec := range s.threads {
		if strings.HasPrefix(id, billPrefix) {
			continue
		}
		for _, d := range rec.more().days {
			if d.ReadAt > 0 {
				out = append(out, ledger.Bill{Start: d.Start, End: d.End, Session: id, Repo: rec.repo, USD: d.USD})
			}
		}
	}
	s.mu.RUnlock()
	slices.SortFunc(out, func(a, b ledger.Bill) int {
		return cmp.Or(cmp.Compare(a.Start, b.Start), strings.Compare(a.Session, b.Session))
	})
	return out
}

// dayBillsOf restores saved days: those that are not a period, overlap
// an earlier one or carry a negative amount are left out (the next read of
// the thread asks again), as are the oldest past maxDayBills.
func dayBillsOf(saved []DayBill) []DayBill {
	if len(saved) == 0 {
		return nil
	}
	days := slices.Clone(saved)
	slices.SortFunc(days, func(a, b DayBill) int { return cmp.Compare(a.Start, b.Start) })
	out := days[:0]
	for _, d := range days {
		if d.End <= d.Start || d.USD < 0 || d.ReadAt < 0 || len(out) > 0 && d.Start < out[len(out)-1].End {
			continue
		}
		out = append(out, d)
	}
	if len(out) > maxDayBills {
		out = out[len(out)-maxDayBills:]
	}
	return slices.Clip(out)
}
