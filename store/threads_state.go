package store

import (
	"fmt"
	"sort"

	"github.com/amp-exporter/amp-exporter/internal/sat"
)

// StateVersion is the version of the persisted state's layout.
const StateVersion = 1

// State is the persisted form of a ThreadStore.
type State struct {
	Version      int                    `json:"version"`
	LastActivity int64                  `json:"last_activity_ms"`
	Labels       map[string][]string    `json:"labels"`
	Threads      map[string]ThreadState `json:"threads"`
	Files        map[string]FileRecord  `json:"files"`
}

// series returns the contribution in its persisted form, sorted so state
// files are stable.
func (c contribution) series() []SeriesValue {
	out := make([]SeriesValue, 0, len(c))
	for k, v := range c {
		out = append(out, SeriesValue{Family: string(k.Fam), L1: k.L1, L2: k.L2, Value: v})
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if a.Family != b.Family {
			return a.Family < b.Family
		}
		if a.L1 != b.L1 {
			return a.L1 < b.L1
		}
		return a.L2 < b.L2
	})
	return out
}

// contributionOf is the inverse of series.
func contributionOf(series []SeriesValue) contribution {
	c := make(contribution, len(series))
	for _, sv := range series {
		k := sv.key()
		c[k] = sat.Add(c[k], sv.Value)
	}
	return c
}

// key is the series a persisted value is restored into. Its label values
// are sanitized as they are read: a state saved before they were
// sanitized at ingest must not bring control characters back.
func (sv SeriesValue) key() SeriesKey {
	return SeriesKey{Fam: Family(sv.Family), L1: restoredLabel(sv.L1), L2: restoredLabel(sv.L2)}
}

// restoredLabel sanitizes a persisted label value ("" stays "": no label).
func restoredLabel(v string) string {
	if v == "" {
		return ""
	}
	return sanitizeLabel(v)
}

// checkSeries refuses persisted series of families a store does not keep,
// or with negative values.
func checkSeries(series []SeriesValue, known map[Family]bool) error {
	for _, sv := range series {
		if !known[Family(sv.Family)] {
			return fmt.Errorf("unknown series family %q", sv.Family)
		}
		if sv.Value < 0 {
			return fmt.Errorf("invalid value %v in %q", sv.Value, sv.Family)
		}
	}
	return nil
}

// ThreadState is one thread's persisted contribution.
type ThreadState struct {
	LastActivity int64      `json:"last_activity_ms,omitempty"`
	Series       SeriesList `json:"series"`
	// Pins are the labels the thread's items were first counted under.
	// State files written before them lack it: such a thread is pinned
	// from the first snapshot read after the restore.
	Pins *PinState `json:"pins,omitempty"`
	// Retired is what items no longer in the thread's file counted, kept
	// apart since the file was truncated (ThreadStore.retire).
	Retired []SeriesValue `json:"retired,omitempty"`
	// Window is where a server thread's next read may start (window.go).
	Window *WindowState `json:"window,omitempty"`
	// BilledAt is set on the bill of a thread another source counts
	// (bills.go): how the server listed the thread when it was read.
	BilledAt *FileVersion `json:"billed_at,omitempty"`
	// Repository is the repository label value the thread is pinned to
	// (repository.go); its series of the families that carry the label
	// are under it, so they are saved without it. Absent: none (and every
	// thread of a state written before the label).
	Repository string `json:"repo,omitempty"`
	// Ledger is when the thread's money series grew (ledger.go). Absent
	// in a state written before the ledger: the thread's usage is then
	// under no time.
	Ledger []LedgerRow `json:"ledger,omitempty"`
	// LedgerRetired is what the items that left the thread hold in its
	// ledger, per bucket (ledger.go, retireLedger).
	LedgerRetired []LedgerRow `json:"ledger_retired,omitempty"`
	// LedgerCoarse are the stretches of Ledger whose rows were merged to
	// keep it within its bound (ledgerbound.go): [from, to) in buckets.
	// Absent for a thread never coarsened, and in a state written before
	// they were kept.
	LedgerCoarse []CoarseSpan `json:"ledger_coarse,omitempty"`
	// DayBills are a server thread's bills per day (bills_daily.go).
	DayBills []DayBill `json:"day_bills,omitempty"`
}

// SeriesValue is one persisted series of a contribution.
type SeriesValue struct {
	Family string `json:"f"`
	L1     string `json:"a,omitempty"`
	L2     string `json:"b,omitempty"`
	Value  int64  `json:"v"` // fixed point, see families
}

// Export returns the store's state for persistence.
func (s *ThreadStore) Export() *State {
	s.mu.RLock()
	defer s.mu.RUnlock()
	st := &State{
		Version:      StateVersion,
		LastActivity: s.lastActivity,
		Labels:       s.labels.export(),
		Threads:      make(map[string]ThreadState, len(s.threads)),
		Files:        make(map[string]FileRecord, len(s.files)),
	}
	for key, rec := range s.threads {
		st.Threads[key] = threadStateOf(s.series.keys, *rec)
	}
	s.exportIdentity(st)
	for p, f := range s.files {
		st.Files[p] = *f
	}
	return st
}

// Import loads persisted state into an empty store. It validates before it
// changes anything, so a damaged state is refused whole.
func (s *ThreadStore) Import(st *State) error {
	if st.Version != StateVersion {
		return fmt.Errorf("state version %d, this exporter reads %d", st.Version, StateVersion)
	}
	for key, ts := range st.Threads {
		if err := checkSeries(ts.Series, knownFamilies); err != nil {
			return fmt.Errorf("thread %q: %w", key, err)
		}
		if err := checkPins(ts.Pins); err != nil {
			return fmt.Errorf("thread %q: %w", key, err)
		}
		if err := checkSeries(ts.Retired, knownFamilies); err != nil {
			return fmt.Errorf("thread %q: retired: %w", key, err)
		}
	}
	for p, f := range st.Files {
		if _, ok := st.Threads[f.Key]; !ok {
			return fmt.Errorf("file %q refers to unknown thread %q", p, f.Key)
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.threads) > 0 || len(s.files) > 0 {
		return fmt.Errorf("state must be loaded into an empty store")
	}
	s.labels.restore(st.Labels)
	for key, ts := range st.Threads {
		repo := restoredLabel(ts.Repository)
		c := contributionIn(ts.Series, repo)
		for k, v := range c {
			s.totals[k] = sat.Add(s.totals[k], v)
		}
		rec := &threadRecord{contrib: s.series.compact(c), lastActivity: ts.LastActivity, repo: repo, repoSet: true}
		rec.setMore(threadExtra{win: s.restoreWindow(ts.Window, repo), billedAt: ts.BilledAt, days: dayBillsOf(ts.DayBills)})
		if s.restoreLedger(rec, ts, repo, true) {
			s.ledgerRepairs++
		}
		s.threads[key] = rec
		s.changedThreads[key] = struct{}{}
	}
	s.importIdentity(st)
	for p, f := range st.Files {
		f := f
		s.fileThreadsKeyLocked(&f)
		s.files[p] = &f
		s.changedFiles[p] = struct{}{}
	}
	s.lastActivity = st.LastActivity
	return nil
}
