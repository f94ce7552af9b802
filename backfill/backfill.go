// Package backfill turns the history the exporter reads (thread files, Amp
// server threads) into timestamped samples of the counters the live
// exporter serves: one cumulative value per series per step, counted by
// the same stores, identity rules and label caps, so that the last sample
// of each series is the value the live counter starts from.
//
// Each thread is replayed on its own: its items are sorted into the steps
// their times fall in, each step's items are counted as a store that never
// saw the thread counts them (the live exporter's ThreadStore, Count,
// sharing the label cap and prices with every other thread), and that
// count is the thread's growth at that step. The whole thread is then counted at once, as the
// live exporter's first scan counts it, and the growths are trued up to
// that count (they differ only where the store rounds a sum), so the last
// sample of every series is the live value exactly.
package backfill

import (
	"cmp"
	"errors"
	"fmt"
	"iter"
	"maps"
	"math"
	"slices"
	"sync"
	"time"

	"github.com/amp-exporter/amp-exporter/internal/sat"
	"github.com/amp-exporter/amp-exporter/parser/thread"
	"github.com/amp-exporter/amp-exporter/store"
)

// Families are the store families written as history, in output order:
// the counters whose items each carry a time.
var Families = []store.Family{
	store.FamMessages, store.FamPrompts, store.FamTokens, store.FamCredits,
	store.FamCost, store.FamUnpriced, store.FamFinished, store.FamToolCalls,
	store.FamLines, store.FamLinesByModel, store.FamShellCommands,
	store.FamCommits, store.FamPullRequests, store.FamPushes,
	store.FamCommitsByModel, store.FamPullRequestsByModel,
}

// How a thread is replayed (tests compare the three).
type replay int

const (
	// replayPrefix applies, for each step, every item up to it to one
	// store: the store's totals after each are the cumulative values.
	replayPrefix replay = iota
	// replayOnlyNew applies, for each step, its items alone to one store:
	// the earlier items leave the snapshot and the store keeps what they
	// counted, as when a thread file loses messages.
	replayOnlyNew
	// replayFresh counts each step's items as a store that never saw the
	// thread would (store.ThreadStore.Count), then the whole thread, as the
	// live exporter's first scan does; the steps' growths are trued up to
	// that count (they differ only where a sum is rounded: credits, and
	// dollars of a series folded into other), so the last sample is the
	// live value exactly. Each step then costs what its own items cost.
	replayFresh
)

var replayMode = replayFresh

// Options configure a Backfill.
type Options struct {
	// Until is the time of the last sample; items after it are not
	// history (the live counters count them). Required.
	Until time.Time
	// Step is the distance between samples (default 5m).
	Step time.Duration
	// Prices price tokens as the live exporter does (nil: nothing priced).
	Prices store.Prices
	// Labels is the label cap shared by every thread, as in the live
	// exporter (nil: a cap of 100 per label).
	Labels *store.LabelCap
	// Repositories is the repository label's configuration, as in the
	// live exporter, so that history and live series join (nil: no
	// thread has a repository).
	Repositories *store.Repositories
	// Now is when the backfill runs (default: Until): an item stamped
	// after it is not history (BoundFuture).
	Now time.Time
	// Floor is the earliest time an item can have (default AmpBegan).
	Floor time.Time
	// Buckets places each growth at the start of the step its items'
	// time falls in ([start, start+Step)) instead of at the first sample
	// that counts it: the usage report groups growths into periods, and an
	// item stamped exactly on a step's boundary belongs to the step it
	// opens. Items without any time stay at math.MinInt64.
	Buckets bool
	// PerThread, when set, receives each thread's growths instead of the
	// Backfill merging them into its series: the usage report keeps them
	// per thread (its sessions). It is called from the workers that call
	// AddThread, possibly at once.
	PerThread func(ThreadGrowth)
}

// ThreadGrowth is what one thread counted, step by step (Options.PerThread).
type ThreadGrowth struct {
	Source string
	Path   string
	// ID is the thread's id, "" when its document has none.
	ID     string
	Growth []Growth
	// Later counts the thread's items after Until, left out: a cache of
	// the growth is then not the thread's whole at its version.
	Later int64
}

// Growth is what one series of a thread grew by at one step: At is the
// sample time (epoch ms; the step's start with Options.Buckets), or
// math.MinInt64 for items without any time; V is in the store's fixed
// point (store.Unfixed).
type Growth struct {
	At  int64
	Key store.SeriesKey
	V   int64
}

// SeriesID names one output series: the source label and the store's key.
type SeriesID struct {
	Source string
	Key    store.SeriesKey
}

// Backfill collects the usage of threads per step. It is safe for
// concurrent use: AddThread may run on several workers.
type Backfill struct {
	opts   Options
	stepMs int64
	until  int64

	// counter counts each step's items as a store that never saw the
	// thread (store.ThreadStore.Count); it records nothing.
	counter *store.ThreadStore

	mu sync.Mutex
	// deltas holds, per series, its growths: at a sample time (epoch ms),
	// in the stores' fixed point; unsorted, a time may repeat.
	deltas  map[SeriesID][]Point
	first   int64 // earliest sample time with growth; 0 when none
	threads int
	items   int64
	later   int64 // items after Until, left to the live counters
	bounded map[string]int64
}

// New returns an empty Backfill.
func New(opts Options) (*Backfill, error) {
	if opts.Step <= 0 {
		opts.Step = 5 * time.Minute
	}
	if opts.Step < time.Second || opts.Step%time.Millisecond != 0 {
		return nil, fmt.Errorf("step %s: must be a whole number of milliseconds, at least 1s", opts.Step)
	}
	if opts.Until.IsZero() {
		return nil, errors.New("no until time")
	}
	if opts.Labels == nil {
		opts.Labels = store.NewLabelCap(100, nil)
	}
	if opts.Now.IsZero() {
		opts.Now = opts.Until
	}
	if opts.Floor.IsZero() {
		opts.Floor = AmpBegan
	}
	b := &Backfill{
		opts:    opts,
		stepMs:  opts.Step.Milliseconds(),
		until:   opts.Until.UnixMilli(),
		deltas:  map[SeriesID][]Point{},
		bounded: map[string]int64{},
	}
	b.counter = b.newStore()
	return b, nil
}

// sampleAt is the time of the first sample that counts an item of time at
// (epoch ms): the next multiple of the step, or Until. An item without
// any time (0) counts from the first sample.
func (b *Backfill) sampleAt(at int64) int64 {
	if at <= 0 {
		return math.MinInt64
	}
	if b.opts.Buckets {
		return min(floorDiv(at, b.stepMs)*b.stepMs, b.until)
	}
	t := (at + b.stepMs - 1) / b.stepMs * b.stepMs
	return min(t, b.until)
}

// AddThread replays one parsed thread (its Items must be valid: call it
// before the parser parses another) as counted under source (the source
// label: store.SourceThreads, store.SourceAmpServer). path is the thread's
// file, or store.AmpServerPath of its id. Items after Until are left out.
func (b *Backfill) AddThread(source, path string, sum *thread.Summary) error {
	if sum.Items == nil || !sum.ItemsValid() {
		return errors.New("backfill: a thread summary without its items")
	}
	// The sample each item first counts in, and the items in that order
	// (stable: a step's items keep the thread's order, which the identity
	// rules read); items after Until are left out.
	at := make([]int64, len(sum.Items))
	order := make([]int32, 0, len(sum.Items))
	var later, items int64
	var bounded map[string]int64
	bounds := b.bounds()
	lo := bounds.ThreadFloor(sum)
	rounded := false // an item's values are summed before rounding (credits)
	for i := range sum.Items {
		it := &sum.Items[i]
		t, why := bounds.ItemTime(sum, lo, it)
		if why != "" {
			if bounded == nil {
				bounded = map[string]int64{}
			}
			bounded[why]++
		}
		if t > b.until {
			at[i] = math.MaxInt64
			if !it.Copied {
				later++
			}
			continue
		}
		at[i] = b.sampleAt(t)
		if !it.Copied {
			items++
		}
		rounded = rounded || it.HasCredits
		order = append(order, int32(i))
	}
	slices.SortStableFunc(order, func(x, y int32) int { return cmp.Compare(at[x], at[y]) })

	prefix := *sum
	// The totals are the whole thread's; the store counts the items and
	// only sizes its tables by the totals, which would oversize them at
	// every step.
	prefix.Tokens, prefix.ToolCalls, prefix.Credits, prefix.Finished = nil, nil, nil, nil
	prefix.TokensOverThreshold, prefix.ContextUtil, prefix.ExchangeSeconds = nil, nil, nil
	buf := make([]thread.Item, 0, len(order))
	var grew []Growth
	var steps []int64
	// The stateful modes (tests) keep one store for the thread and take
	// the growth of its totals at each step.
	var st *store.ThreadStore
	var prev map[store.SeriesKey]int64
	for lo := 0; lo < len(order); {
		s := at[order[lo]]
		hi := lo + 1
		for hi < len(order) && at[order[hi]] == s {
			hi++
		}
		buf = buf[:0]
		if replayMode == replayPrefix {
			for i := range sum.Items {
				if at[i] <= s {
					buf = append(buf, sum.Items[i])
				}
			}
		} else {
			for _, i := range order[lo:hi] {
				buf = append(buf, sum.Items[i])
			}
		}
		lo = hi
		prefix.Items = buf
		steps = append(steps, s)
		if replayMode == replayFresh {
			// What the step's items count on their own, as a store that
			// never saw the thread would count them.
			for k, v := range b.counter.Count(&prefix) {
				grew = append(grew, Growth{s, k, v})
				// Dollars of a series that mixes models are shared out
				// in proportion: rounded too.
				rounded = rounded || k.L1 == store.OtherValue
			}
		} else {
			if st == nil {
				st, prev = b.newStore(), map[store.SeriesKey]int64{}
			}
			st.Apply(path, store.FileVersion{Size: int64(len(steps))}, &prefix)
			for k, v := range st.Snapshot().Totals() {
				if d := v - prev[k]; d > 0 {
					grew = append(grew, Growth{s, k, d})
					prev[k] = v
				}
			}
		}
		prefix.FoldedModels, prefix.FoldedTools = nil, nil // counted at the first
	}
	// Where nothing is rounded, the steps add up to the whole thread's
	// count by themselves (integers; dollars per model are tokens times
	// a price per token).
	if replayMode == replayFresh && len(steps) > 1 && rounded {
		// The whole thread, counted at once: the live value.
		buf = buf[:0]
		for i := range sum.Items {
			if at[i] != math.MaxInt64 {
				buf = append(buf, sum.Items[i])
			}
		}
		prefix.Items = buf
		grew = trueUp(grew, b.counter.Count(&prefix), steps[len(steps)-1])
	}

	grew = b.handOut(source, path, sum.ID, later, grew)
	b.mu.Lock()
	defer b.mu.Unlock()
	b.threads++
	b.items += items
	b.later += later
	for why, n := range bounded {
		b.bounded[why] += n
	}
	for _, g := range grew {
		if g.V <= 0 || !slices.Contains(Families, g.Key.Fam) {
			continue
		}
		id := SeriesID{source, g.Key}
		b.deltas[id] = append(b.deltas[id], Point{g.At, g.V})
		if g.At != math.MinInt64 && (b.first == 0 || g.At < b.first) {
			b.first = g.At
		}
	}
	return nil
}

// handOut gives a thread's growths of the backfilled families to
// Options.PerThread, when it is set, and returns what is left to merge:
// nothing then, else all of them.
func (b *Backfill) handOut(source, path, id string, later int64, grew []Growth) []Growth {
	if b.opts.PerThread == nil {
		return grew
	}
	kept := grew[:0]
	for _, g := range grew {
		if g.V > 0 && slices.Contains(Families, g.Key.Fam) {
			kept = append(kept, g)
		}
	}
	b.opts.PerThread(ThreadGrowth{Source: source, Path: path, ID: id, Growth: kept, Later: later})
	return nil
}

// trueUp makes the steps' growth add up to want, the whole thread counted
// at once (the live value): what the steps fall short by is added at the
// last step, what they exceed it by is taken back from the latest growth
// first, never turning one negative.
func trueUp(grew []Growth, want map[store.SeriesKey]int64, last int64) []Growth {
	got := make(map[store.SeriesKey]int64, len(want))
	for _, g := range grew {
		got[g.Key] += g.V
	}
	for k, w := range want {
		if d := w - got[k]; d > 0 {
			grew = append(grew, Growth{last, k, d})
		}
	}
	for i := len(grew) - 1; i >= 0; i-- {
		g := &grew[i]
		if d := got[g.Key] - want[g.Key]; d > 0 {
			take := min(d, g.V) // a growth never turns negative
			g.V -= take
			got[g.Key] -= take
		}
	}
	return grew
}

// newStore returns a store of a thread's own; the label cap and prices are
// shared, so labels fold as in one store holding every thread.
func (b *Backfill) newStore() *store.ThreadStore {
	st := store.NewThreadStore(store.StoreOptions{Labels: b.opts.Labels, Repositories: b.opts.Repositories, Now: func() time.Time { return time.Time{} }})
	if b.opts.Prices != nil {
		st.SetPrices(b.opts.Prices)
	}
	return st
}

// Stats describe what was replayed.
type Stats struct {
	Threads int
	Items   int64 // counted items up to Until
	Later   int64 // items after Until, left to the live counters
	First   time.Time
	// Bounded counts the items whose time was out of what their thread
	// can hold, by reason (Bound…); they are counted all the same.
	Bounded map[string]int64
}

// Stats returns what was replayed so far.
func (b *Backfill) Stats() Stats {
	b.mu.Lock()
	defer b.mu.Unlock()
	s := Stats{Threads: b.threads, Items: b.items, Later: b.later, Bounded: maps.Clone(b.bounded)}
	if b.first != 0 {
		s.First = time.UnixMilli(b.first)
	}
	return s
}

// Point is one sample of a series.
type Point struct {
	T int64 // epoch ms
	V int64 // cumulative, in the store's fixed point (store.Unfixed)
}

// Range returns the sample times from from to Until: from rounded down to
// the step, every step after it, and Until. A zero from means the earliest
// usage.
func (b *Backfill) Range(from time.Time) []int64 {
	b.mu.Lock()
	first := b.first
	b.mu.Unlock()
	start := first
	if !from.IsZero() {
		start = from.UnixMilli()
	}
	if start == 0 || start > b.until {
		start = b.until
	}
	start = floorDiv(start, b.stepMs) * b.stepMs
	var ts []int64
	for t := start; t < b.until; t += b.stepMs {
		ts = append(ts, t)
	}
	return append(ts, b.until)
}

func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && (a < 0) != (b < 0) {
		q--
	}
	return q
}

// Series is one series' history: a sample at each of Times, the value
// cumulative. Its points are made as they are read (Points), so that a long
// history is never held in memory whole.
type Series struct {
	ID SeriesID
	// Times are the sample times from the series' first growth on.
	Times  []int64
	growth []Point // sorted by time
}

// Points yields the series' samples in time order.
func (s *Series) Points() iter.Seq[Point] {
	return func(yield func(Point) bool) {
		c := cursor{s: s}
		for _, t := range s.Times {
			if !yield(Point{t, c.at(t)}) {
				return
			}
		}
	}
}

// cursor walks a series' growths in time order.
type cursor struct {
	s   *Series
	j   int
	cum int64
}

// at is the series' value at t, for t not before the last call's.
func (c *cursor) at(t int64) int64 {
	for c.j < len(c.s.growth) && c.s.growth[c.j].T <= t {
		c.cum = sat.Add(c.cum, c.s.growth[c.j].V)
		c.j++
	}
	return c.cum
}

// Series returns every series with usage up to Until, sorted, each with a
// sample at every time of times (Range) from its first growth on (growth
// before the first time is in the first sample).
func (b *Backfill) Series(times []int64) []Series {
	b.mu.Lock()
	defer b.mu.Unlock()
	ids := make([]SeriesID, 0, len(b.deltas))
	for id := range b.deltas {
		ids = append(ids, id)
	}
	slices.SortFunc(ids, compareIDs)
	out := make([]Series, 0, len(ids))
	for _, id := range ids {
		d := slices.Clone(b.deltas[id])
		slices.SortFunc(d, func(a, b Point) int { return cmp.Compare(a.T, b.T) })
		if len(d) == 0 {
			continue
		}
		first, _ := slices.BinarySearch(times, d[0].T)
		if first == len(times) {
			continue
		}
		out = append(out, Series{ID: id, Times: times[first:], growth: d})
	}
	return out
}

// Samples is the number of samples the series hold.
func Samples(series []Series) int64 {
	var n int64
	for i := range series {
		n += int64(len(series[i].Times))
	}
	return n
}

func compareIDs(a, b SeriesID) int {
	return cmp.Or(
		cmp.Compare(famIndex(a.Key.Fam), famIndex(b.Key.Fam)),
		cmp.Compare(a.Source, b.Source),
		cmp.Compare(a.Key.L1, b.Key.L1),
		cmp.Compare(a.Key.L2, b.Key.L2))
}

func famIndex(f store.Family) int { return slices.Index(Families, f) }
