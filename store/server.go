package store

import (
	"math"
	"slices"
	"sort"
	"strings"
)

// The Amp server source (source/ampserver) counts into a ThreadStore of
// its own, keyed by thread id, with source="server". What it adds to the
// store is here: the billed cost family and the server's own metrics.

// Billed cost kinds, the values of amp_billed_cost_usd_total's kind label.
var BilledKinds = []string{"free", "paid", "subscription", "total"}

// ServerPathPrefix prefixes the "path" of a server thread in a store.
const ServerPathPrefix = "amp-server:"

// ServerPath is the store path of server thread id.
func ServerPath(id string) string { return ServerPathPrefix + id }

// ServerPaths lists the present server threads of the store.
func (s *ThreadStore) ServerPaths() []string {
	s.mu.RLock()
	defer s.mu.RUnlock()
	var out []string
	for p := range s.files {
		if strings.HasPrefix(p, ServerPathPrefix) {
			out = append(out, p)
		}
	}
	sort.Strings(out)
	return out
}

// ApplyBilled records what Amp bills for thread key, in USD per kind. Like
// every counter it only grows: each kind keeps the largest value seen for
// the thread, and the totals grow by the difference.
func (s *ThreadStore) ApplyBilled(key string, usd map[string]float64) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	rec := s.threads[key]
	if rec == nil {
		return false // only threads the store counts are billed here
	}
	changed := false
	for kind, v := range usd {
		if math.IsNaN(v) || v <= 0 {
			continue
		}
		k := SeriesKey{FamBilled, kind, ""}
		id := s.series.id(k)
		n := fixed(FamBilled, v)
		var was int64
		if i, ok := rec.contrib.find(id); ok {
			was = rec.contrib[i].v
		}
		if n > was {
			if !changed {
				// A delta taken earlier shares the record's series and
				// reads them without the lock: change a copy.
				rec.contrib = slices.Clone(rec.contrib)
			}
			s.addTo(rec, k, n-was)
			changed = true
		}
	}
	if changed {
		s.lastChange = s.now()
		s.generation++
		// Saved with the next delta: the bill often arrives after the
		// thread's counts were saved, and an unchanged thread is not
		// fetched again after a restart.
		s.changedThreads[key] = struct{}{}
	}
	return changed
}
