package store

import "sync"

// SourceAmpServer is the source label of threads read from the Amp server.
const SourceAmpServer = "server"

// Owners decides which source counts a thread when more than one reads it
// (design: "One thread, one count"): the first source to claim a thread id
// owns it for good. The choice is not stored here but in each source's
// counting state (a store that counted a thread holds its record), so it
// is saved together with the counts; Seed rebuilds it after a restart.
// Local thread files claim first because the server source waits for the
// first scan of the thread directories.
type Owners struct {
	mu    sync.Mutex
	owner map[string]string
}

// NewOwners returns an empty registry.
func NewOwners() *Owners { return &Owners{owner: map[string]string{}} }

// Claim gives id to source unless another source owns it already, and
// reports whether source owns it.
func (o *Owners) Claim(id, source string) bool {
	if id == "" {
		return true
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if cur, ok := o.owner[id]; ok {
		return cur == source
	}
	o.owner[id] = source
	return true
}

// Owner returns the source that owns id, or "".
func (o *Owners) Owner(id string) string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.owner[id]
}

// Seed records ids as owned by source where nobody owns them yet; call it
// after restoring state, local files first.
func (o *Owners) Seed(source string, ids []string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, id := range ids {
		if _, ok := o.owner[id]; !ok {
			o.owner[id] = source
		}
	}
}

// SetClaim makes the store count a thread only if claim(source) gives it
// the thread: a thread another source owns is neither counted nor shown in
// amp_threads by this store. Call it before the store is used.
func (s *ThreadStore) SetClaim(o *Owners, source string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.claim = func(key string) bool { return o.Claim(key, source) }
}

// claimed reports whether the store may count the thread key.
func (s *ThreadStore) claimed(key string) bool {
	s.mu.RLock()
	claim := s.claim
	s.mu.RUnlock()
	return claim == nil || claim(key)
}

// ThreadKeys lists the threads the store has counted (present or not).
func (s *ThreadStore) ThreadKeys() []string {
	s.mu.RLock()
	defer s.mu.RUnlock()
	out := make([]string, 0, len(s.threads))
	for k := range s.threads {
		out = append(out, k)
	}
	return out
}
