package store

import (
	"sync"

	"github.com/amp-exporter/amp-exporter/internal/repomap"
	"github.com/amp-exporter/amp-exporter/internal/sat"
	"github.com/amp-exporter/amp-exporter/parser/agentmode"
	"github.com/amp-exporter/amp-exporter/parser/gitremote"
)

// The repository label. A thread's repository (its first tree's git
// remote, normalised by gitremote) is worked out once per thread, when the
// thread is first counted: the `repositories` rules map it, then the label
// cap folds it like any value from data. The value is pinned in the
// thread's record and persisted with it, so that a later change of the
// rules, of the cap or of the switch never moves what the thread counted
// (an item counts once, under the labels it first had). A thread without a
// remote has the empty value, which takes no place under the cap and is
// rendered as no label at all.

// RepositoryLabel is the label's name.
const RepositoryLabel = "repository"

// Repositories is the label's configuration in effect, shared by every
// store that counts threads: the switch, the rules, and what counts a
// thread whose remote could not be read.
type Repositories struct {
	mu     sync.RWMutex
	off    bool
	mapper *repomap.Mapper
	// onUnreadable is called once per thread whose remote gives no value
	// (gitremote's reason), when the thread is first counted.
	onUnreadable func(reason string)
}

// NewRepositories returns the label's configuration: on, no rules.
// onUnreadable may be nil.
func NewRepositories(onUnreadable func(reason string)) *Repositories {
	if onUnreadable == nil {
		onUnreadable = func(string) {}
	}
	return &Repositories{onUnreadable: onUnreadable}
}

// Set changes the switch and the rules for threads counted from now on.
func (r *Repositories) Set(on bool, m *repomap.Mapper) {
	r.mu.Lock()
	r.off, r.mapper = !on, m
	r.mu.Unlock()
}

// On reports whether the label is on.
func (r *Repositories) On() bool {
	if r == nil {
		return true
	}
	r.mu.RLock()
	defer r.mu.RUnlock()
	return !r.off
}

// value is the label value of a thread whose normalised remote is repo:
// "" while the label is off or the thread has none, else the rules' name
// folded by the cap.
func (r *Repositories) value(labels *LabelCap, repo string) string {
	if r == nil || repo == "" {
		return ""
	}
	r.mu.RLock()
	off, m := r.off, r.mapper
	r.mu.RUnlock()
	if off {
		return ""
	}
	if repo = m.Map(repo); repo == "" {
		return ""
	}
	return labels.value(RepositoryLabel, repo)
}

// unreadable counts a thread whose remote gave no value.
func (r *Repositories) unreadable(reason gitremote.Reason) {
	if r == nil || reason == gitremote.ReasonNone {
		return
	}
	r.onUnreadable(string(reason))
}

// repoFamily: the families whose series carry the repository label
// (SeriesKey.Repo), derived from the families table.
var repoFamily = map[Family]bool{}

// RepositoryFamily reports whether family f's series carry the repository
// label.
func RepositoryFamily(f Family) bool { return repoFamily[f] }

// keyIn is the series key of a persisted value of a thread pinned to repo.
func (sv SeriesValue) keyIn(repo string) SeriesKey {
	k := sv.key()
	if repoFamily[k.Fam] {
		k.Repo = repo
	}
	return k
}

// contributionIn is contributionOf for a thread pinned to repo.
func contributionIn(series []SeriesValue, repo string) contribution {
	c := make(contribution, len(series))
	for _, sv := range series {
		k := sv.keyIn(repo)
		c[k] = sat.Add(c[k], sv.Value)
	}
	return c
}

// WithoutRepository returns totals with the series of every repository
// merged under none: what is shown while the label is off.
func WithoutRepository(totals map[SeriesKey]int64) map[SeriesKey]int64 {
	out := make(map[SeriesKey]int64, len(totals))
	for k, v := range totals {
		k.Repo = ""
		out[k] = sat.Add(out[k], v)
	}
	return out
}

// Repositories is the repository label's configuration the store counts
// by (StoreOptions.Repositories), for a store that is to share it.
func (s *ThreadStore) Repositories() *Repositories { return s.repos }

// threadsKeyLocked is the number of the amp_threads series of agent mode
// mode and repository repo (FileRecord.tk). Callers hold the write lock.
func (s *ThreadStore) threadsKeyLocked(mode, repo string) uint32 {
	k := ThreadsKey{AgentMode: mode, Repository: repo}
	if i, ok := s.tkIndex[k]; ok {
		return i
	}
	if s.tkIndex == nil {
		s.tkIndex = map[ThreadsKey]uint32{}
	}
	i := uint32(len(s.tkeys))
	s.tkIndex[k] = i
	s.tkeys = append(s.tkeys, k)
	return i
}

// fileThreadsKeyLocked numbers a restored file's amp_threads series, by
// its thread's repository. Callers hold the write lock.
func (s *ThreadStore) fileThreadsKeyLocked(f *FileRecord) {
	repo := ""
	if rec := s.threads[f.Key]; rec != nil {
		repo = rec.repo
	}
	// A state saved before modes were read through the CLI's aliases
	// holds old names.
	f.AgentMode = agentmode.Canonical(f.AgentMode)
	f.tk = s.threadsKeyLocked(f.AgentMode, repo)
}
