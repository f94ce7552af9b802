package ampserver

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/amp-exporter/amp-exporter/parser/thread"
	"github.com/amp-exporter/amp-exporter/store"
)

// A thread's bill per day. threadDisplayCostInfo with start and end
// answers what Amp billed a thread within a period, so the usage ledger's
// billed USD per day can be Amp's own figure rather than an estimate: when
// a changed thread is counted (its whole bill read again), the days of the
// exporter's time zone it was active on that may have changed since they
// were last read are marked due, and each sync asks up to MaxDayBills of
// the due days, newest first, one request each.
//
// A day can change only while it is not over: new messages carry the
// server's time of now. So a day read after it ended (and a settling
// margin, dayBillSettle) is complete and never asked again; a day read
// before it ended is asked once more, with the thread's next change or
// the next bill recheck (SyncConfig.BillRecheck). Only days that end
// within the horizon (SyncConfig.DayBillHorizon) are asked: older days
// keep their estimate alone.
//
// What it costs, in requests: a first sync asks one request per thread
// and day it was active within the horizon, never the threads' whole
// history: 30,000 threads over a year hold ~2,900 of the last 35 days,
// which the generated corpus makes active 1.04 days each (416 requests
// for 400 threads): ~3,000 requests, 15 syncs of 200. In steady state a
// changed thread costs one request (today's) and one more at its first
// change after midnight (yesterday's, then complete): about one request
// per changed thread and sync.

// DefaultDayBillHorizon is how far back day bills are asked: the longest
// period the ledger's readers show by default (this month, up to 31 days,
// and the last 30 days' chart) with a few days to spare for an exporter
// that was down.
const DefaultDayBillHorizon = 35 * 24 * time.Hour

// dayBillSettle is how long after a day ended its bill is taken for
// final: an answer that streamed across midnight is billed when it ends,
// and the server's clock need not be the exporter's.
const dayBillSettle = time.Hour

// DayBillStore is a Store that keeps threads' bills per day (a
// *store.ThreadStore).
type DayBillStore interface {
	DayBills(id string) []store.DayBill
	MarkDayBillsDue(id string, days []store.DayBill) int
	DueDayBills(since int64, limit int) []store.DueDayBill
	ApplyDayBill(id string, start, end int64, usd map[string]float64, readAt int64) bool
	DropDayBillDue(id string, start, end int64) bool
}

// dayBillStore returns the store's day bills when they are asked for.
func (s *Syncer) dayBillStore() (DayBillStore, bool) {
	ds, ok := s.store.(DayBillStore)
	return ds, ok && s.cfg.Billed && s.cfg.DayBillHorizon > 0 && !s.dayBillsOff
}

// horizon is the start (epoch ms) of the oldest day whose bill is asked.
func (s *Syncer) horizon(now time.Time) int64 {
	return dayOf(now.Add(-s.cfg.DayBillHorizon).UnixMilli(), s.cfg.Location).Start
}

// dayOf is the day of loc holding at (epoch ms).
func dayOf(at int64, loc *time.Location) store.DayBill {
	t := time.UnixMilli(at).In(loc)
	y, m, d := t.Date()
	return store.DayBill{Start: time.Date(y, m, d, 0, 0, 0, 0, loc).UnixMilli(), End: time.Date(y, m, d+1, 0, 0, 0, 0, loc).UnixMilli()}
}

// activeDays are the days within the horizon of a thread's spending, as
// far as sum holds it (a window holds the thread's newest messages): the
// days of its items that carry tokens or credits. A time more than a day
// ahead (a client's clock: usage.timestamp stands in for a missing
// createdAt) names no day to ask.
func (s *Syncer) activeDays(sum *thread.Summary) []store.DayBill {
	if _, ok := s.dayBillStore(); !ok {
		return nil
	}
	now := s.clock.Now()
	since, until := s.horizon(now), now.Add(24*time.Hour).UnixMilli()
	var out []store.DayBill
	for _, it := range sum.Items {
		if it.Copied || it.At < since || it.At > until || it.Tokens == (thread.Tokens{}) && !it.HasCredits {
			continue
		}
		if d := dayOf(it.At, s.cfg.Location); len(out) == 0 || !containsDay(out, d) {
			out = append(out, d)
		}
	}
	return out
}

func containsDay(days []store.DayBill, d store.DayBill) bool {
	for _, x := range days {
		if x.Start == d.Start {
			return true
		}
	}
	return false
}

// dayBillsDue marks the days of thread id to be asked: the active ones
// given that are not complete, and every day kept that was read before it
// was over (the thread may have spent more that day after it was read).
func (s *Syncer) dayBillsDue(id string, active []store.DayBill) {
	ds, ok := s.dayBillStore()
	if !ok {
		return
	}
	since := s.horizon(s.clock.Now())
	settle := dayBillSettle.Milliseconds()
	kept := ds.DayBills(id)
	var due []store.DayBill
	for _, d := range kept {
		if d.End > since && d.ReadAt > 0 && d.ReadAt < d.End+settle {
			due = append(due, d)
		}
	}
	for _, d := range active {
		complete := false
		for _, k := range kept {
			if k.Start == d.Start && k.End == d.End && k.ReadAt >= k.End+settle {
				complete = true
			}
		}
		if !complete && !containsDay(due, d) {
			due = append(due, d)
		}
	}
	if ds.MarkDayBillsDue(id, due) > 0 {
		s.dayBillsIdle.Store(false)
	}
}

// askDayBills asks up to MaxDayBills due days, MaxConcurrency at a time.
// A refused key, a rate limit or a transient failure leaves the rest for
// the next sync; a day the server cannot answer (the thread is gone, the
// answer is not understood) is not asked again until the thread changes;
// an invalid-argument (the server's API changed) stops day bills until a
// restart. Failures are one log line per sync (at warn level once, until a
// pass fails nothing); the thread's whole bill is not touched by any.
func (s *Syncer) askDayBills(ctx context.Context, st *Stats) {
	ds, ok := s.dayBillStore()
	if !ok || ctx.Err() != nil || s.dayBillsIdle.Load() {
		return
	}
	due := ds.DueDayBills(s.horizon(s.clock.Now()), s.cfg.MaxDayBills)
	if len(due) == 0 {
		s.dayBillsIdle.Store(true)
		return
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	jobs := make(chan store.DueDayBill)
	var mu sync.Mutex
	var firstErr error
	var read, failed, settled int // settled: read, or not to be asked again
	var wg sync.WaitGroup
	for range min(s.cfg.MaxConcurrency, len(due)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for d := range jobs {
				at := s.clock.Now()
				ci, err := s.client.ThreadDisplayCostInfoWithin(ctx, d.ID, time.UnixMilli(d.Start), time.UnixMilli(d.End))
				mu.Lock()
				switch {
				case err == nil:
					ds.ApplyDayBill(d.ID, d.Start, d.End, billSplit(ci), at.UnixMilli())
					read++
					settled++
				case ctx.Err() != nil:
					// Stopped by another failure: not this day's.
				case errors.Is(err, ErrThreadNotFound):
					ds.DropDayBillDue(d.ID, d.Start, d.End) // gone: the listing says so
					settled++
				case errors.Is(err, ErrInvalidArgument):
					s.dayBillsOff = true
					s.noteBug(err)
					failed++
					firstErr = cmpErr(firstErr, err)
					cancel()
				case errors.Is(err, ErrBadResponse) || errors.Is(err, ErrBadDocument) || errors.Is(err, ErrTooLarge):
					ds.DropDayBillDue(d.ID, d.Start, d.End)
					settled++
					failed++
					firstErr = cmpErr(firstErr, err)
				default:
					failed++
					firstErr = cmpErr(firstErr, err)
					cancel() // refused, rate limited, transient: the rest waits
				}
				mu.Unlock()
			}
		}()
	}
feed:
	for _, d := range due {
		select {
		case jobs <- d:
		case <-ctx.Done():
			break feed
		}
	}
	close(jobs)
	wg.Wait()
	st.DayBills += read
	st.DayBillsFailed += failed
	// Every due day was listed and none is left: until a day is marked,
	// there is nothing to look for.
	s.dayBillsIdle.Store(len(due) < s.cfg.MaxDayBills && settled == len(due))
	if failed == 0 {
		s.dayBillsWarned = false
		return
	}
	warn := !s.dayBillsWarned
	s.dayBillsWarned = true
	log := s.log.Debug
	if warn {
		log = s.log.Warn
	}
	log("cannot read threads' bills per day from the Amp server; the days are asked again later and the whole threads' bills are unaffected",
		"failed", failed, "read", read, "err", firstErr)
}

func cmpErr(first, err error) error {
	if first != nil {
		return first
	}
	return err
}
