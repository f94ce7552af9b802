package store

import (
	"cmp"
	"encoding/json"
	"math"
	"math/bits"
	"runtime"
	"slices"
	"strings"
	"sync"

	"github.com/amp-exporter/amp-exporter/internal/sat"
	"github.com/amp-exporter/amp-exporter/ledger"
	"github.com/amp-exporter/amp-exporter/parser/thread"
)

// The usage ledger: what each thread spent per 15-minute bucket of UTC
// time (ledger.Bucket), per series of the money families (tokens by type,
// credits, estimated dollars), so that days and months in any time zone
// can be added up from it (docs/ledger.md).
//
// The ledger never counts on its own: it only says when the growth of the
// counters happened. Each Apply counts its items as before, and beside the
// per-series sums it adds up what the items of each bucket give now (by
// each item's own time, thread.Item.At). Whatever a series grows by is
// then spread over its buckets: first to the buckets whose items now give
// more than the thread's ledger holds for them, in time order, and what is
// left (growth no dated item explains: a value rounded differently, items
// that moved) to the thread's latest bucket of that series. So the
// ledger's rows of a series always add up to the thread's counter exactly,
// whatever rewrites, retirements, windows or restarts did: a property
// test holds it (ledger_test.go). An item counts in the bucket of its own
// time; its growth counts in that same bucket as long as its time stays.
// An item whose time changes after it was counted keeps what it counted
// in its first bucket.
//
// Dollars follow token growth (chargeGrowth): a cost series' growth is
// spread over the buckets its token series grew in, in proportion to what
// those tokens cost at the thread's rates, so one bucket's growth (the
// common case) takes all of it.

// ledgerFamily lists the families the ledger keeps.
var ledgerFamily = map[Family]bool{FamTokens: true, FamCredits: true, FamCost: true, FamCommits: true, FamPullRequests: true}

// itemSpread lists the ledger families whose growth is spread by the
// buckets of their items (dollars follow token growth instead).
var itemSpread = map[Family]bool{FamTokens: true, FamCredits: true, FamCommits: true, FamPullRequests: true}

// undatedBucket is the bucket of usage without any time.
const undatedBucket = math.MinInt32

// ampBeganBucket is the earliest bucket an item can be in (ledger.Bounds):
// a saved row before it is damaged.
var ampBeganBucket = bucketOf(ledger.AmpBegan.UnixMilli())

// maxLedgerRows bounds one thread's ledger in the exporter. One model's
// bucket takes up to six rows (four token types, credits, dollars): a
// thread stays under it for about 1,365 active quarter hours of one model
// (four hours a day for three months, half that with two models). Beyond
// it, the thread's oldest days are coarsened to hours, then to days, of
// the exporter's zone (coarsenLedger), so the sums stay exact, the days of
// that zone too, and only old detail within a day goes.
const maxLedgerRows = 8192

// ledgerRow is what one series of a thread grew by in one bucket.
type ledgerRow struct {
	b  int32 // bucket number: epoch ms / ledger.BucketMs, or undatedBucket
	id uint32
	v  int64
}

// threadLedger is a thread's rows, sorted by series then bucket. Like
// threadRecord.contrib it is replaced, never changed in place.
type threadLedger []ledgerRow

// bucketOf is the bucket number of a time (epoch ms).
func bucketOf(at int64) int32 {
	start := ledger.StartOf(at)
	if start == ledger.Undated || start/ledger.BucketMs > math.MaxInt32 {
		return undatedBucket
	}
	return int32(start / ledger.BucketMs)
}

// startOf is the start (epoch ms) of bucket b, or ledger.Undated.
func startOf(b int32) int64 {
	if b == undatedBucket {
		return ledger.Undated
	}
	return int64(b) * ledger.BucketMs
}

// ledgerAt is a model's spending in one bucket, as an itemCounter adds it
// up.
type ledgerAt struct {
	b     int32
	model string
}

// bucketValue is what a series' items of one bucket give in a snapshot.
type bucketValue struct {
	b int32
	v int64
}

// spendAt adds what an item spent to the bucket of its time, under the
// model its tuple is pinned to.
func (k *itemCounter) spendAt(model string, it *thread.Item) {
	if !it.HasCredits && it.Tokens == (thread.Tokens{}) {
		return
	}
	if k.led == nil {
		k.led = map[ledgerAt]*spendAcc{}
	}
	key := ledgerAt{bucketOf(k.ledgerTime(it)), model}
	a := k.led[key]
	if a == nil {
		a = &spendAcc{}
		k.led[key] = a
	}
	// The same sums as the tuple's (spend), per bucket.
	k.spend(a, it)
}

// shippedAt adds a shell call's commits and pull requests to the bucket of
// its time.
func (k *itemCounter) shippedAt(it *thread.Item) {
	if it.Commits <= 0 && it.PullRequests <= 0 {
		return
	}
	if k.ledShipped == nil {
		k.ledShipped = map[int32]*[2]int64{}
	}
	b := bucketOf(k.ledgerTime(it))
	n := k.ledShipped[b]
	if n == nil {
		n = &[2]int64{}
		k.ledShipped[b] = n
	}
	n[0] += int64(max(it.Commits, 0))
	n[1] += int64(max(it.PullRequests, 0))
}

// ledgerTime is the time an item counts at in the ledger: its own, or for
// a time its thread cannot hold (before Amp, before the thread was
// created) the nearest one it can, by the backfill's and the report's
// rule (ledger.Bounds). An item stamped after now keeps its time: the
// counters count it now, and its bucket comes.
func (k *itemCounter) ledgerTime(it *thread.Item) int64 {
	if !k.boundsSet {
		k.bounds = ledger.Bounds{Floor: ledger.AmpBegan.UnixMilli(), Now: k.s.now().UnixMilli()}
		k.floor = k.bounds.ThreadFloor(k.sum)
		k.boundsSet = true
	}
	t, why := k.bounds.ItemTime(k.sum, k.floor, it)
	if why == ledger.BoundFuture {
		return it.At
	}
	return t
}

// ledgerValues turns the pass's per-bucket sums into per-series values,
// each series' buckets in time order, and what the tokens of each token
// series and bucket cost.
func (k *itemCounter) ledgerValues() (values, costs map[SeriesKey][]bucketValue) {
	if len(k.led) == 0 && len(k.ledShipped) == 0 {
		return nil, nil
	}
	values = make(map[SeriesKey][]bucketValue, len(k.led)*2+2)
	for b, n := range k.ledShipped {
		for i, f := range []Family{FamCommits, FamPullRequests} {
			if n[i] > 0 {
				sk := k.key(f, "", "")
				values[sk] = append(values[sk], bucketValue{b, n[i]})
			}
		}
	}
	costs = make(map[SeriesKey][]bucketValue, len(k.led))
	for at, a := range k.led {
		for i, n := range a.tokens {
			if n > 0 {
				sk := k.key(FamTokens, at.model, TokenTypes[i])
				values[sk] = append(values[sk], bucketValue{at.b, n})
				c := sat.Add(a.stdCost[i], a.longCost[i])
				for _, sa := range a.speed {
					c = sat.Add(c, sat.Add(sa.stdCost[i], sa.longCost[i]))
				}
				if c > 0 {
					costs[sk] = append(costs[sk], bucketValue{at.b, c})
				}
			}
		}
		if a.hasCredits {
			if v := fixed(FamCredits, a.credits); v > 0 {
				sk := k.key(FamCredits, at.model, "")
				values[sk] = append(values[sk], bucketValue{at.b, v})
			}
		}
	}
	for _, m := range []map[SeriesKey][]bucketValue{values, costs} {
		for _, vs := range m {
			slices.SortFunc(vs, func(a, b bucketValue) int { return cmp.Compare(a.b, b.b) })
		}
	}
	return values, costs
}

// ledger is ledgerValues without the costs.
func (k *itemCounter) ledger() map[SeriesKey][]bucketValue {
	values, _ := k.ledgerValues()
	return values
}

// retireLedger keeps, per bucket, what the thread's missing items hold in
// its ledger, as retire keeps it per series: what the ledger holds less
// what the items still present give now (now less fresh, the new items).
// It is added to what the snapshot gives (withRetired), so that new items
// of a bucket whose items left show as that bucket's shortfall in full,
// not behind the rows of the items that left.
func (s *ThreadStore) retireLedger(rec *threadRecord, now, fresh map[SeriesKey][]bucketValue) {
	var rows threadLedger
	for _, r := range rec.ledger {
		k := s.series.keys[r.id]
		if !itemSpread[k.Fam] {
			continue // dollars follow token growth
		}
		if v := r.v - (valueAt(now[k], r.b) - valueAt(fresh[k], r.b)); v > 0 {
			rows = append(rows, ledgerRow{r.b, r.id, v})
		}
	}
	rec.change(func(x *threadExtra) { x.ledgerRetired = rows })
}

// valueAt is the value of bucket b in vs (sorted by bucket).
func valueAt(vs []bucketValue, b int32) int64 {
	i, ok := slices.BinarySearchFunc(vs, b, func(bv bucketValue, b int32) int { return cmp.Compare(bv.b, b) })
	if !ok {
		return 0
	}
	return vs[i].v
}

// withRows is what a snapshot gives per series and bucket with rows
// added: the thread's retired part (retireLedger), and for a window what
// the items before it give (prefixLedger). The thread's ledger is compared
// with it as its series are with the snapshot, its window's prefix and
// its retired part.
func (s *ThreadStore) withRows(now map[SeriesKey][]bucketValue, rows threadLedger) map[SeriesKey][]bucketValue {
	if len(rows) == 0 {
		return now
	}
	out := make(map[SeriesKey][]bucketValue, len(now)+1)
	for k, vs := range now {
		out[k] = vs
	}
	cloned := map[SeriesKey]bool{}
	for _, r := range rows {
		k := s.series.keys[r.id]
		vs := out[k]
		if !cloned[k] {
			vs, cloned[k] = slices.Clone(vs), true
		}
		i, ok := slices.BinarySearchFunc(vs, r.b, func(bv bucketValue, b int32) int { return cmp.Compare(bv.b, b) })
		if ok {
			vs[i].v = sat.Add(vs[i].v, r.v)
		} else {
			vs = slices.Insert(vs, i, bucketValue{r.b, r.v})
		}
		out[k] = vs
	}
	return out
}

// prefixLedger is what the items before a thread's next window give per
// bucket: what the snapshot gives (led, with its own window's prefix)
// less what the next window's items give (next).
func (s *ThreadStore) prefixLedger(c contribution, led, next map[SeriesKey][]bucketValue) threadLedger {
	var rows threadLedger
	for k, vs := range led {
		if c[k] == 0 {
			// Credits rounded per bucket can name a series the thread's
			// sum rounds to nothing: no counter, no row.
			continue
		}
		for _, bv := range vs {
			if d := bv.v - valueAt(next[k], bv.b); d > 0 {
				rows = append(rows, ledgerRow{bv.b, s.series.id(k), d})
			}
		}
	}
	sortLedger(rows)
	return slices.Clip(rows)
}

// ledgerSpread spreads one Apply's growth over a thread's buckets. It is
// used under the store's write lock.
type ledgerSpread struct {
	s   *ThreadStore
	rec *threadRecord
	// now is what the snapshot's items give per series and bucket.
	now map[SeriesKey][]bucketValue
	// add is what each (series, bucket) grows by.
	add map[ledgerSlot]int64
	// tokens is the token growth per series and bucket, which the
	// dollars are spread by; nowTokens and costs what the snapshot's
	// tokens of each series and bucket are and cost (its own items, before
	// any retired part or window prefix), which weigh them.
	tokens           map[SeriesKey][]bucketValue
	nowTokens, costs map[SeriesKey][]bucketValue
}

type ledgerSlot struct {
	id uint32
	b  int32
}

// held is what the thread's ledger holds for series id in bucket b,
// with what this spread already added.
func (sp *ledgerSpread) held(id uint32, b int32) int64 {
	l := sp.rec.ledger
	i, ok := slices.BinarySearchFunc(l, ledgerSlot{id, b}, func(r ledgerRow, t ledgerSlot) int {
		return cmp.Or(cmp.Compare(r.id, t.id), cmp.Compare(r.b, t.b))
	})
	var v int64
	if ok {
		v = l[i].v
	}
	return sat.Add(v, sp.add[ledgerSlot{id, b}])
}

// put adds v to series id in bucket b.
func (sp *ledgerSpread) put(id uint32, b int32, v int64) {
	slot := ledgerSlot{id, b}
	sp.add[slot] = sat.Add(sp.add[slot], v)
}

// firstDated is the series' earliest dated bucket in the thread's ledger
// (math.MinInt32 when it has none).
func (sp *ledgerSpread) firstDated(id uint32) int32 {
	l := sp.rec.ledger
	i, _ := slices.BinarySearchFunc(l, ledgerSlot{id, undatedBucket + 1}, func(r ledgerRow, t ledgerSlot) int {
		return cmp.Or(cmp.Compare(r.id, t.id), cmp.Compare(r.b, t.b))
	})
	if i < len(l) && l[i].id == id {
		return l[i].b
	}
	return math.MinInt32
}

// latest is the series' latest bucket, in the snapshot or else in the
// thread's ledger; undatedBucket when it has none.
func (sp *ledgerSpread) latest(k SeriesKey) int32 {
	if vs := sp.now[k]; len(vs) > 0 {
		return vs[len(vs)-1].b
	}
	b := int32(undatedBucket)
	for _, r := range sp.rec.ledger {
		if r.b > b && sp.s.series.keys[r.id] == k {
			b = r.b
		}
	}
	return b
}

// grow spreads g, the growth of token or credit series k.
func (sp *ledgerSpread) grow(k SeriesKey, g int64) {
	if g <= 0 {
		return
	}
	id := sp.s.series.id(k)
	put := func(b int32, v int64) {
		sp.put(id, b, v)
		if k.Fam == FamTokens {
			sp.tokens[k] = append(sp.tokens[k], bucketValue{b, v})
		}
	}
	// A thread restored from a state written before coarsened stretches
	// were kept may have folded its earliest rows into later ones: at its
	// bound, buckets before the series' first row hold nothing of their
	// own any more, and must not take growth as if they were short.
	from := int32(math.MinInt32)
	if sp.s.ledgerMax > 0 && len(sp.rec.ledger) >= sp.s.ledgerMax {
		from = sp.firstDated(id)
	}
	for _, bv := range sp.now[k] {
		if g == 0 {
			return
		}
		if bv.b < from && bv.b != undatedBucket || inSpans(sp.rec.coarse(), bv.b) {
			// A coarsened stretch holds its spend in one of its buckets:
			// the others are not short.
			continue
		}
		if short := bv.v - sp.held(id, bv.b); short > 0 {
			a := min(short, g)
			put(bv.b, a)
			g -= a
		}
	}
	if g > 0 {
		put(sp.latest(k), g)
	}
}

// charge spreads g, the dollars charged for the growth of token series
// tokens, over the buckets those tokens grew in, each bucket's tokens
// weighed at what the snapshot's tokens of that bucket cost (a series
// folded into other mixes models, and long-context tokens cost more):
// the shares are what each bucket's growth cost, to rounding.
func (sp *ledgerSpread) charge(k SeriesKey, g int64, tokens SeriesKey) {
	if g <= 0 {
		return
	}
	id := sp.s.series.id(k)
	grew := sp.tokens[tokens]
	if len(grew) == 0 {
		sp.put(id, sp.latest(tokens), g)
		return
	}
	weights := sp.weights(tokens, grew)
	var total uint64
	for _, w := range weights {
		total += w
	}
	if total == 0 {
		sp.put(id, grew[len(grew)-1].b, g)
		return
	}
	// Each bucket takes its share rounded down, in exact integers; the
	// rest (a few 1e-10 USD of rounding, none for one model's series)
	// goes to the bucket that weighs most.
	heaviest, left := 0, g
	for i, bv := range grew {
		if weights[i] > weights[heaviest] {
			heaviest = i
		}
		hi, lo := bits.Mul64(uint64(g), weights[i])
		share, _ := bits.Div64(hi, lo, total) // weights[i] <= total: the share is at most g
		if s := min(int64(share), left); s > 0 {
			sp.put(id, bv.b, s)
			left -= s
		}
	}
	sp.put(id, grew[heaviest].b, left)
}

// weights are what the token growth of each bucket cost at the prices of
// the snapshot's tokens of that bucket, as integers (1e-10 USD, or
// tokens when a bucket's cost is unknown: then every bucket weighs its
// tokens). Their sum stays below 2^64.
func (sp *ledgerSpread) weights(tokens SeriesKey, grew []bucketValue) []uint64 {
	weights := make([]uint64, len(grew))
	var sum uint64
	for i, bv := range grew {
		n, c := valueAt(sp.nowTokens[tokens], bv.b), valueAt(sp.costs[tokens], bv.b)
		if n <= 0 || c <= 0 {
			return tokenWeights(grew)
		}
		hi, lo := bits.Mul64(uint64(bv.v), uint64(c))
		if hi >= uint64(n) {
			return tokenWeights(grew) // beyond 64 bits
		}
		w, _ := bits.Div64(hi, lo, uint64(n))
		if w > math.MaxInt64/uint64(len(grew)) || sum+w < sum {
			return tokenWeights(grew)
		}
		weights[i], sum = w, sum+w
	}
	return weights
}

// tokenWeights weighs each bucket by its tokens.
func tokenWeights(grew []bucketValue) []uint64 {
	weights := make([]uint64, len(grew))
	for i, bv := range grew {
		weights[i] = uint64(max(bv.v, 0))
	}
	return weights
}

// commit merges the spread into the thread's ledger (a new slice).
func (sp *ledgerSpread) commit() {
	if len(sp.add) == 0 {
		return
	}
	// The rows are kept for every thread ever seen: they go into an array
	// of exactly their number (appended to, it would keep growth room).
	old := sp.rec.ledger
	find := func(slot ledgerSlot) (int, bool) {
		return slices.BinarySearchFunc(old, slot, func(r ledgerRow, t ledgerSlot) int {
			return cmp.Or(cmp.Compare(r.id, t.id), cmp.Compare(r.b, t.b))
		})
	}
	fresh := 0
	for slot, v := range sp.add {
		if _, ok := find(slot); v > 0 && !ok {
			fresh++
		}
	}
	if len(old) == 0 && fresh == 0 {
		return // nothing grew
	}
	rows := make([]ledgerRow, len(old), len(old)+fresh)
	copy(rows, old)
	for slot, v := range sp.add {
		if v <= 0 {
			continue
		}
		if i, ok := find(slot); ok {
			rows[i].v = sat.Add(rows[i].v, v)
			continue
		}
		rows = append(rows, ledgerRow{slot.b, slot.id, v})
	}
	if fresh > 0 {
		sortLedger(rows)
		var spans []coarseSpan
		rows, spans = coarsenLedger(rows, sp.rec.coarse(), sp.s.ledgerMax, sp.s.ledgerZone)
		sp.rec.setCoarse(spans)
	}
	sp.rec.ledger = rows
}

func sortLedger(rows []ledgerRow) {
	slices.SortFunc(rows, func(a, b ledgerRow) int { return cmp.Or(cmp.Compare(a.id, b.id), cmp.Compare(a.b, b.b)) })
}

// settleLedger makes a thread's ledger add up to its counters again after
// a restore: a series whose rows are missing (a state written before the
// ledger) or do not add up (a damaged one) gets its counted value, or what
// its rows lack, under no time. It reports whether it changed anything.
func (s *ThreadStore) settleLedger(rec *threadRecord) bool {
	sums := map[uint32]int64{}
	for _, r := range rec.ledger {
		sums[r.id] = sat.Add(sums[r.id], r.v)
	}
	rows := rec.ledger
	changed := false
	for _, e := range rec.contrib {
		if !ledgerFamily[s.series.keys[e.id].Fam] {
			continue
		}
		held := sums[e.id]
		delete(sums, e.id)
		if held == e.v {
			continue
		}
		if !changed {
			rows, changed = slices.Clone(rows), true
		}
		if held > e.v {
			rows = slices.DeleteFunc(rows, func(r ledgerRow) bool { return r.id == e.id })
			rows = append(rows, ledgerRow{undatedBucket, e.id, e.v})
		} else {
			rows = append(rows, ledgerRow{undatedBucket, e.id, e.v - held})
		}
	}
	if len(sums) > 0 { // rows of series the thread has no counter for
		if !changed {
			rows, changed = slices.Clone(rows), true
		}
		rows = slices.DeleteFunc(rows, func(r ledgerRow) bool { _, stray := sums[r.id]; return stray })
	}
	if !changed {
		return false
	}
	sortLedger(rows)
	// Two undated rows of one series (one restored, one added) are one.
	out := rows[:0]
	for _, r := range rows {
		if n := len(out); n > 0 && out[n-1].id == r.id && out[n-1].b == r.b {
			out[n-1].v = sat.Add(out[n-1].v, r.v)
			continue
		}
		out = append(out, r)
	}
	out, spans := coarsenLedger(out, rec.coarse(), s.ledgerMax, s.ledgerZone)
	rec.setCoarse(spans)
	rec.ledger = slices.Clip(out)
	return true
}

// Ledger returns what every thread spent per bucket and model, the rows of
// one thread, bucket, model and repository added up, sorted by time,
// thread and model. Session is the thread's id (a thread file without an
// id: its name without .json). Safe for concurrent use.
func (s *ThreadStore) Ledger() []ledger.Entry {
	return s.LedgerBetween(math.MinInt64, math.MaxInt64)
}

// LedgerBetween is Ledger for the buckets that start in [from, to) (epoch
// ms); usage without any time is in it when from is math.MinInt64.
func (s *ThreadStore) LedgerBetween(from, to int64) []ledger.Entry {
	return s.ledgerBetween(from, to, runtime.GOMAXPROCS(0))
}

// ledgerBetween is LedgerBetween on at most cores goroutines.
func (s *ThreadStore) ledgerBetween(from, to int64, cores int) []ledger.Entry {
	type threadRows struct {
		key  string
		rows threadLedger
	}
	// Under the lock, only the slices: a record's ledger is replaced,
	// never changed in place, and the series table only grows.
	s.mu.RLock()
	keys := s.series.keys
	all := make([]threadRows, 0, len(s.threads))
	for key, rec := range s.threads {
		if len(rec.ledger) > 0 {
			all = append(all, threadRows{key, rec.ledger})
		}
	}
	s.mu.RUnlock()
	// Threads are added up and sorted on every core, a share each (a
	// year of threads is seconds of work on one; a report waits for it),
	// and the sorted shares merged.
	parts := max(1, min(cores, len(all)/ledgerShare))
	outs := make([][]ledger.Entry, parts)
	var wg sync.WaitGroup
	for p := range parts {
		wg.Go(func() {
			var sums entrySums
			for i := p; i < len(all); i += parts {
				session := strings.TrimSuffix(strings.TrimPrefix(all[i].key, "file:"), ".json")
				outs[p] = sums.add(outs[p], keys, all[i].rows, session, from, to)
			}
			slices.SortFunc(outs[p], ledger.Compare)
		})
	}
	wg.Wait()
	return mergeShares(outs)
}

// mergeShares merges lists of entries, each sorted by ledger.Compare, into
// one sorted list: pair by pair, so that each entry is copied once per
// halving of the lists (a handful of times on a many-core machine).
func mergeShares(shares [][]ledger.Entry) []ledger.Entry {
	for len(shares) > 1 {
		next := shares[:0:0]
		for i := 0; i < len(shares); i += 2 {
			if i+1 == len(shares) {
				next = append(next, shares[i])
				break
			}
			next = append(next, mergeTwo(shares[i], shares[i+1]))
		}
		shares = next
	}
	if len(shares) == 0 {
		return nil
	}
	return shares[0]
}

// mergeTwo merges two sorted lists of entries; entries of equal keys (two
// threads of one session name) are both kept, a's first.
func mergeTwo(a, b []ledger.Entry) []ledger.Entry {
	out := make([]ledger.Entry, 0, len(a)+len(b))
	for len(a) > 0 && len(b) > 0 {
		if ledger.Compare(b[0], a[0]) < 0 {
			out, b = append(out, b[0]), b[1:]
		} else {
			out, a = append(out, a[0]), a[1:]
		}
	}
	return append(append(out, a...), b...)
}

// ledgerShare is the fewest threads LedgerBetween gives a core of its own.
const ledgerShare = 256

// entrySums adds up one thread's rows into entries (one per bucket, model
// and repository), reusing its tables from thread to thread.
type entrySums struct {
	// groups are the thread's (model, repository) pairs, a few; place
	// maps a bucket and group to the entry's index in the output.
	groups []entryGroup
	place  map[uint64]int
}

type entryGroup struct{ model, repo string }

// add appends the entries of one thread's rows (those of the buckets that
// start in [from, to)) to out.
func (e *entrySums) add(out []ledger.Entry, keys []SeriesKey, rows threadLedger, session string, from, to int64) []ledger.Entry {
	e.groups = e.groups[:0]
	if e.place == nil || len(e.place) > 4096 {
		// A map cleared keeps its size: one grown by a long thread is
		// dropped rather than cleared for every thread after it.
		e.place = make(map[uint64]int, 64)
	} else {
		clear(e.place)
	}
	g, last := 0, uint32(math.MaxUint32)
	for _, r := range rows {
		start := startOf(r.b)
		if start < from || start >= to {
			continue
		}
		sk := &keys[r.id]
		if r.id != last { // rows come series by series
			g, last = e.group(sk.L1, sk.Repo), r.id
		}
		pk := uint64(uint32(r.b))<<32 | uint64(g)
		i, ok := e.place[pk]
		if !ok {
			i = len(out)
			e.place[pk] = i
			if len(out) == cap(out) {
				// Doubled: append grows a long list by a quarter, which
				// copies it (and touches new memory) four times as often.
				out = slices.Grow(out, max(len(out), 64))
			}
			out = append(out, ledger.Entry{Start: start, Session: session, Model: sk.L1, Repo: sk.Repo})
		}
		if f := UsageField(sk, &out[i].Usage); f != nil {
			*f = sat.Add(*f, r.v)
		}
	}
	return out
}

// UsageField is the field of u that the values of series k are: a token
// type's count, the credits or the dollars; nil for a series the ledger
// does not keep.
func UsageField(k *SeriesKey, u *ledger.Usage) *int64 {
	switch k.Fam {
	case FamCredits:
		return &u.Credits
	case FamCost:
		return &u.Cost
	case FamCommits:
		return &u.Commits
	case FamPullRequests:
		return &u.PullRequests
	case FamTokens:
		switch k.L2 {
		case "input":
			return &u.Input
		case "output":
			return &u.Output
		case "cache_read":
			return &u.CacheRead
		case "cache_creation":
			return &u.CacheCreation
		}
	}
	return nil
}

// group is the index of a (model, repository) pair among the thread's.
func (e *entrySums) group(model, repo string) int {
	for i, g := range e.groups {
		if g.model == model && g.repo == repo {
			return i
		}
	}
	e.groups = append(e.groups, entryGroup{model, repo})
	return len(e.groups) - 1
}

// LedgerRows returns how many rows the threads' ledgers hold (a gauge of
// its size: 16 bytes each in memory).
func (s *ThreadStore) LedgerRows() int {
	s.mu.RLock()
	defer s.mu.RUnlock()
	n := 0
	for _, rec := range s.threads {
		n += len(rec.ledger)
	}
	return n
}

// LedgerRow is one persisted ledger row: [bucket, series, value], the
// bucket as epoch ms / ledger.BucketMs (or math.MinInt32 for none), the
// series as the index of the row's series in the thread's Series.
type LedgerRow [3]int64

// ledgerStateOf is a thread ledger's persisted form, against the thread's
// persisted series.
func ledgerStateOf(keys []SeriesKey, series SeriesList, rows threadLedger) []LedgerRow {
	if len(rows) == 0 {
		return nil
	}
	// series is sorted by family and labels (threadStateOf): each row's
	// place is found by search, without a map per thread saved.
	out := make([]LedgerRow, 0, len(rows))
	for _, r := range rows {
		k := keys[r.id]
		i, ok := slices.BinarySearchFunc(series, k, func(sv SeriesValue, k SeriesKey) int {
			return cmp.Or(cmp.Compare(sv.Family, string(k.Fam)), cmp.Compare(sv.L1, k.L1), cmp.Compare(sv.L2, k.L2))
		})
		if ok {
			out = append(out, LedgerRow{int64(r.b), int64(i), r.v})
		}
	}
	// By series as saved, then time: the store's own numbering of series
	// differs from run to run, a state file must not.
	slices.SortFunc(out, func(a, b LedgerRow) int { return cmp.Or(cmp.Compare(a[1], b[1]), cmp.Compare(a[0], b[0])) })
	return out
}

// restoreLedger restores a thread's ledger from its persisted form, under
// the thread's repository, and makes it add up to the thread's counters
// (settleLedger). Rows that do not check out (a series out of range or of
// a family the ledger does not keep, a value not above zero) are left
// out. It reports whether the ledger had to be repaired: rows left out, or
// sums that did not add up (every state written before the ledger).
func (s *ThreadStore) restoreLedger(rec *threadRecord, ts ThreadState, repo string, identityOK bool) bool {
	var bad bool
	rec.ledger, bad = s.ledgerRows(ts.Series, ts.Ledger, repo)
	spans, badCoarse := coarseSpansOf(ts.LedgerCoarse)
	rec.setCoarse(spans)
	bad = bad || badCoarse
	// The retired part of the ledger goes with the counters' (restored
	// with the pins, when they check out).
	badRetired := false
	if identityOK {
		var retired threadLedger
		retired, badRetired = s.ledgerRows(ts.Series, ts.LedgerRetired, repo)
		if len(retired) > 0 && !badRetired {
			rec.change(func(x *threadExtra) { x.ledgerRetired = retired })
		}
	}
	if win := rec.more().win; win != nil && ts.Window != nil {
		// A window whose prefix rows do not check out is dropped: the
		// thread is read whole next time. (The window is the one just
		// restored, not yet seen by anything else: it may be changed.)
		rows, badWindow := s.ledgerRows(ts.Series, ts.Window.Ledger, repo)
		if badWindow {
			rec.change(func(x *threadExtra) { x.win = nil })
		} else {
			win.prefixLedger = rows
		}
	}
	return s.settleLedger(rec) || bad || badRetired
}

// ledgerRows reads persisted ledger rows against the thread's persisted
// series, leaving out (bad) those that do not check out.
func (s *ThreadStore) ledgerRows(series SeriesList, rows []LedgerRow, repo string) (threadLedger, bool) {
	bad := false
	out := make(threadLedger, 0, len(rows))
	for _, r := range rows {
		b, i, v := r[0], r[1], r[2]
		if i < 0 || i >= int64(len(series)) || v <= 0 || b != undatedBucket && (b < int64(ampBeganBucket) || b > math.MaxInt32) {
			bad = true
			continue
		}
		k := series[i].keyIn(repo)
		if !ledgerFamily[k.Fam] {
			bad = true
			continue
		}
		out = append(out, ledgerRow{int32(b), s.series.id(k), v})
	}
	sortLedger(out)
	merged := out[:0]
	for _, r := range out {
		if n := len(merged); n > 0 && merged[n-1].id == r.id && merged[n-1].b == r.b {
			merged[n-1].v = sat.Add(merged[n-1].v, r.v)
			continue
		}
		merged = append(merged, r)
	}
	// Within the bound, as a thread's rows are kept: a retired part or a
	// window's prefix has no coarsened stretches of its own to keep.
	bounded, _ := coarsenLedger(merged, nil, s.ledgerMax, s.ledgerZone)
	return slices.Clip(bounded), bad
}

// LedgerRepairs returns how many threads restored from saved state had a
// ledger that did not add up to their counters and was repaired (their
// usage, or what their rows lacked, put under no time): every thread of a
// state written before the ledger, and damaged ones.
func (s *ThreadStore) LedgerRepairs() int {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.ledgerRepairs
}

// UnmarshalJSON reads a row leniently: a row that is not three integers
// (a damaged state) reads as one restoreLedger leaves out, so that it
// costs the ledger its row, not the thread its counters.
func (r *LedgerRow) UnmarshalJSON(data []byte) error {
	var raw []json.Number
	*r = LedgerRow{0, -1, 0} // refused by ledgerRows
	if err := json.Unmarshal(data, &raw); err != nil || len(raw) != 3 {
		return nil
	}
	var row LedgerRow
	for i, n := range raw {
		v, err := n.Int64()
		if err != nil {
			return nil
		}
		row[i] = v
	}
	*r = row
	return nil
}
