package store

import (
	"cmp"
	"math"
	"slices"
	"strings"

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
var ledgerFamily = map[Family]bool{FamTokens: true, FamCredits: true, FamCost: true}

// undatedBucket is the bucket of usage without any time.
const undatedBucket = math.MinInt32

// maxLedgerRows bounds one thread's ledger. A thread of months of
// activity (a bucket every 15 minutes, around the clock, a few models)
// stays under it; beyond it, new buckets of a series add to the series'
// latest row, so the sums stay exact and only the time gets coarser.
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

type ledgerAcc struct {
	tokens     [4]int64 // TokenTypes order
	credits    float64
	hasCredits bool
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
		k.led = map[ledgerAt]*ledgerAcc{}
	}
	key := ledgerAt{bucketOf(k.ledgerTime(it)), model}
	a := k.led[key]
	if a == nil {
		a = &ledgerAcc{}
		k.led[key] = a
	}
	if it.HasCredits {
		a.credits += it.Credits
		a.hasCredits = true
	}
	for i, n := range [4]int64{it.Tokens.Input, it.Tokens.Output, it.Tokens.CacheRead, it.Tokens.CacheCreation} {
		if n > 0 {
			a.tokens[i] = satAdd(a.tokens[i], n)
		}
	}
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
// each series' buckets in time order.
func (k *itemCounter) ledgerValues() map[SeriesKey][]bucketValue {
	if len(k.led) == 0 {
		return nil
	}
	out := make(map[SeriesKey][]bucketValue, len(k.led)*2)
	for at, a := range k.led {
		for i, n := range a.tokens {
			if n > 0 {
				sk := k.key(FamTokens, at.model, TokenTypes[i])
				out[sk] = append(out[sk], bucketValue{at.b, n})
			}
		}
		if a.hasCredits {
			if v := fixed(FamCredits, a.credits); v > 0 {
				sk := k.key(FamCredits, at.model, "")
				out[sk] = append(out[sk], bucketValue{at.b, v})
			}
		}
	}
	for sk, vs := range out {
		slices.SortFunc(vs, func(a, b bucketValue) int { return cmp.Compare(a.b, b.b) })
		out[sk] = vs
	}
	return out
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
		if k.Fam != FamTokens && k.Fam != FamCredits {
			continue // dollars follow token growth
		}
		if v := r.v - (valueAt(now[k], r.b) - valueAt(fresh[k], r.b)); v > 0 {
			rows = append(rows, ledgerRow{r.b, r.id, v})
		}
	}
	rec.ledgerRetired = rows
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
			vs[i].v = satAdd(vs[i].v, r.v)
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
func (s *ThreadStore) prefixLedger(led, next map[SeriesKey][]bucketValue) threadLedger {
	var rows threadLedger
	for k, vs := range led {
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
	// dollars are spread by.
	tokens map[SeriesKey][]bucketValue
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
	return v + sp.add[ledgerSlot{id, b}]
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
		sp.add[ledgerSlot{id, b}] += v
		if k.Fam == FamTokens {
			sp.tokens[k] = append(sp.tokens[k], bucketValue{b, v})
		}
	}
	for _, bv := range sp.now[k] {
		if g == 0 {
			return
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
// tokens, over the buckets those tokens grew in, in proportion (the
// tokens of one series have one price, so this is what each bucket's
// tokens cost, to rounding).
func (sp *ledgerSpread) charge(k SeriesKey, g int64, tokens SeriesKey) {
	if g <= 0 {
		return
	}
	id := sp.s.series.id(k)
	grew := sp.tokens[tokens]
	var total int64
	for _, bv := range grew {
		total = satAdd(total, bv.v)
	}
	if total <= 0 {
		sp.add[ledgerSlot{id, sp.latest(tokens)}] += g
		return
	}
	// Each bucket takes its share rounded down; the rest (a few 1e-10
	// USD of rounding) goes to the bucket that grew most.
	heaviest, left := 0, g
	for i, bv := range grew {
		if bv.v > grew[heaviest].v {
			heaviest = i
		}
		share := min(int64(float64(g)*float64(bv.v)/float64(total)), left)
		if share > 0 {
			sp.add[ledgerSlot{id, bv.b}] += share
			left -= share
		}
	}
	sp.add[ledgerSlot{id, grew[heaviest].b}] += left
}

// commit merges the spread into the thread's ledger (a new slice).
func (sp *ledgerSpread) commit() {
	if len(sp.add) == 0 {
		return
	}
	rows := slices.Clone(sp.rec.ledger)
	var fresh []ledgerRow
	for slot, v := range sp.add {
		if v <= 0 {
			continue
		}
		i, ok := slices.BinarySearchFunc(rows, slot, func(r ledgerRow, t ledgerSlot) int {
			return cmp.Or(cmp.Compare(r.id, t.id), cmp.Compare(r.b, t.b))
		})
		if ok {
			rows[i].v = satAdd(rows[i].v, v)
			continue
		}
		fresh = append(fresh, ledgerRow{slot.b, slot.id, v})
	}
	if len(fresh) > 0 {
		rows = append(rows, fresh...)
		sortLedger(rows)
		rows = boundLedger(rows)
	}
	sp.rec.ledger = slices.Clip(rows)
}

func sortLedger(rows []ledgerRow) {
	slices.SortFunc(rows, func(a, b ledgerRow) int { return cmp.Or(cmp.Compare(a.id, b.id), cmp.Compare(a.b, b.b)) })
}

// boundLedger folds the rows of a thread beyond maxLedgerRows into the
// next later row of the same series: the earliest buckets of the series
// with the most rows merge first, so the sums stay and only old detail
// goes.
func boundLedger(rows []ledgerRow) []ledgerRow {
	for len(rows) > maxLedgerRows {
		// The series with the most rows loses its earliest row.
		best, bestN, start := -1, 0, 0
		for i := 1; i <= len(rows); i++ {
			if i == len(rows) || rows[i].id != rows[start].id {
				if n := i - start; n > bestN {
					best, bestN = start, n
				}
				start = i
			}
		}
		if bestN < 2 {
			return rows // one row per series: nothing to fold
		}
		rows[best+1].v = satAdd(rows[best+1].v, rows[best].v)
		rows = slices.Delete(rows, best, best+1)
	}
	return rows
}

// settleLedger makes a thread's ledger add up to its counters again after
// a restore: a series whose rows are missing (a state written before the
// ledger) or do not add up (a damaged one) gets its counted value, or what
// its rows lack, under no time. It reports whether it changed anything.
func (s *ThreadStore) settleLedger(rec *threadRecord) bool {
	sums := map[uint32]int64{}
	for _, r := range rec.ledger {
		sums[r.id] = satAdd(sums[r.id], r.v)
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
			out[n-1].v = satAdd(out[n-1].v, r.v)
			continue
		}
		out = append(out, r)
	}
	rec.ledger = slices.Clip(boundLedger(out))
	return true
}

// Ledger returns what every thread spent per bucket and model, the rows of
// one thread, bucket, model and repository added up, sorted by time,
// thread and model. Session is the thread's id (a thread file without an
// id: its name without .json). Safe for concurrent use.
func (s *ThreadStore) Ledger() []ledger.Entry {
	type entryKey struct {
		b                    int32
		session, model, repo string
	}
	s.mu.RLock()
	acc := make(map[entryKey]*ledger.Usage, len(s.threads))
	for key, rec := range s.threads {
		session := strings.TrimSuffix(strings.TrimPrefix(key, "file:"), ".json")
		for _, r := range rec.ledger {
			sk := s.series.keys[r.id]
			ek := entryKey{r.b, session, sk.L1, sk.Repo}
			u := acc[ek]
			if u == nil {
				u = &ledger.Usage{}
				acc[ek] = u
			}
			switch {
			case sk.Fam == FamCredits:
				u.Credits += r.v
			case sk.Fam == FamCost:
				u.Cost += r.v
			case sk.L2 == "input":
				u.Input += r.v
			case sk.L2 == "output":
				u.Output += r.v
			case sk.L2 == "cache_read":
				u.CacheRead += r.v
			case sk.L2 == "cache_creation":
				u.CacheCreation += r.v
			}
		}
	}
	s.mu.RUnlock()
	out := make([]ledger.Entry, 0, len(acc))
	for k, u := range acc {
		out = append(out, ledger.Entry{Start: startOf(k.b), Session: k.session, Model: k.model, Repo: k.repo, Usage: *u})
	}
	slices.SortFunc(out, func(a, b ledger.Entry) int {
		return cmp.Or(cmp.Compare(a.Start, b.Start), cmp.Compare(a.Session, b.Session), cmp.Compare(a.Model, b.Model), cmp.Compare(a.Repo, b.Repo))
	})
	return out
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
	type name struct{ f, l1, l2 string }
	index := make(map[name]int64, len(series))
	for i, sv := range series {
		index[name{sv.Family, sv.L1, sv.L2}] = int64(i)
	}
	out := make([]LedgerRow, 0, len(rows))
	for _, r := range rows {
		k := keys[r.id]
		if i, ok := index[name{string(k.Fam), k.L1, k.L2}]; ok {
			out = append(out, LedgerRow{int64(r.b), i, r.v})
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
func (s *ThreadStore) restoreLedger(rec *threadRecord, ts ThreadState, repo string) bool {
	var bad bool
	rec.ledger, bad = s.ledgerRows(ts.Series, ts.Ledger, repo)
	retired, badRetired := s.ledgerRows(ts.Series, ts.LedgerRetired, repo)
	if len(retired) > 0 && !badRetired {
		rec.ledgerRetired = retired
	}
	if rec.win != nil && ts.Window != nil {
		// A window whose prefix rows do not check out is dropped: the
		// thread is read whole next time.
		rows, badWindow := s.ledgerRows(ts.Series, ts.Window.Ledger, repo)
		if badWindow {
			rec.win = nil
		} else {
			rec.win.prefixLedger = rows
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
		if i < 0 || i >= int64(len(series)) || v <= 0 || b < math.MinInt32 || b > math.MaxInt32 {
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
			merged[n-1].v = satAdd(merged[n-1].v, r.v)
			continue
		}
		merged = append(merged, r)
	}
	return slices.Clip(boundLedger(merged)), bad
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
