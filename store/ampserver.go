package store

import (
	"math"
	"slices"
	"sort"
	"strings"

	"github.com/amp-exporter/amp-exporter/internal/sat"
)

// The Amp server source (source/ampserver) counts into a ThreadStore of
// its own, keyed by thread id, with source="server". What it adds to the
// store is here: the billed cost family and the server's own metrics.

// Billed cost kinds, the values of amp_billed_cost_usd_total's kind label.
var BilledKinds = []string{"free", "paid", "subscription", "total"}

// AmpServerPathPrefix prefixes the "path" of a server thread in a store.
const AmpServerPathPrefix = "amp-server:"

// AmpServerPath is the store path of server thread id.
func AmpServerPath(id string) string { return AmpServerPathPrefix + id }

// AmpServerPaths lists the present server threads of the store.
func (s *ThreadStore) AmpServerPaths() []string {
	s.mu.RLock()
	defer s.mu.RUnlock()
	var out []string
	for p := range s.files {
		if strings.HasPrefix(p, AmpServerPathPrefix) {
			out = append(out, p)
		}
	}
	sort.Strings(out)
	return out
}

// ApplyBilled records what Amp bills for thread key: one amount, the sum
// of usd's values, split by kind (free, paid, subscription from Amp's
// breakdown, total for what it gives no breakdown of). Like every counter
// it only grows, and per thread the sum over kinds equals the largest
// amount billed: when the amount grows, the growth goes to the kinds that
// are below their share of the new split (in proportion to how far
// below), so a bill that changes shape (a breakdown, then a total only, or
// the reverse) is never counted twice.
//
// A thread another source counts is billed here only once its bill was
// kept by ApplyOthersBill.
func (s *ThreadStore) ApplyBilled(key string, usd map[string]float64) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.applyBilledLocked(key, usd)
}

func (s *ThreadStore) applyBilledLocked(id string, usd map[string]float64) bool {
	recs, rec, key := s.billRecords(id)
	if rec == nil {
		return false // only threads the store counts, or keeps the bill of
	}
	kinds := make([]string, 0, len(usd))
	for kind := range usd {
		kinds = append(kinds, kind)
	}
	for _, kind := range BilledKinds {
		if _, ok := usd[kind]; !ok {
			kinds = append(kinds, kind) // counted before, maybe
		}
	}
	sort.Strings(kinds)
	var target, counted int64
	want := make([]int64, len(kinds))
	have := make([]int64, len(kinds))
	for i, kind := range kinds {
		if v := usd[kind]; !math.IsNaN(v) && v > 0 {
			want[i] = fixed(FamBilled, v)
			target += want[i]
		}
		for _, r := range recs {
			// Under the repository each record is pinned to.
			sid := s.series.id(SeriesKey{Fam: FamBilled, L1: kind, Repo: r.repo})
			if j, ok := r.contrib.find(sid); ok {
				have[i] = sat.Add(have[i], r.contrib[j].v)
			}
		}
		counted = sat.Add(counted, have[i])
	}
	if target <= counted {
		return false
	}
	// The growth, shared among the kinds below their share: their
	// shortfalls add up to at least the growth (the shares add up to the
	// target, what is counted to less).
	grow := target - counted
	var short int64
	for i := range kinds {
		short += max(want[i]-have[i], 0)
	}
	add := make([]int64, len(kinds))
	var given int64
	for i := range kinds {
		if d := want[i] - have[i]; d > 0 {
			add[i] = min(int64(float64(d)*float64(grow)/float64(short)), d)
			given += add[i]
		}
	}
	for i := range kinds { // what rounding left, to those still short
		if given >= grow {
			break
		}
		if d := want[i] - have[i] - add[i]; d > 0 {
			n := min(d, grow-given)
			add[i] += n
			given += n
		}
	}
	// A delta taken earlier shares the record's series and reads them
	// without the lock: change a copy.
	rec.contrib = slices.Clone(rec.contrib)
	for i, kind := range kinds {
		if add[i] > 0 {
			s.addTo(rec, SeriesKey{Fam: FamBilled, L1: kind, Repo: rec.repo}, add[i])
		}
	}
	if cap(rec.contrib) > len(rec.contrib) {
		rec.contrib = copyExact(rec.contrib) // the room an insert left
	}
	s.lastChange = s.now()
	s.generation++
	// Saved with the next delta: the bill often arrives after the
	// thread's counts were saved, and an unchanged thread is not fetched
	// again after a restart.
	s.changedThreads[key] = struct{}{}
	return true
}
