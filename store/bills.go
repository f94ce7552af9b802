package store

// The bill of a thread another source counts. A thread that is also a
// local file (or a stream-json run counted from its stream) is counted
// from there, once (counting rule 12), but what Amp bills for it
// (threadDisplayCostInfo) only the server knows. The server's store keeps
// that bill under a key of its own, beside the threads it counts: the
// record holds the billed family only, is in no file (so not in
// amp_threads), and its key is no thread id, so seeding the owners from
// the store's keys never gives the thread to the server.

// billPrefix prefixes the key of the bill of a thread another source
// counts.
const billPrefix = "bill:"

// billKey is where the bill of thread id is kept while another source
// counts the thread.
func billKey(id string) string { return billPrefix + id }

// BilledAt returns how the server listed thread id when its bill was last
// read for a thread another source counts, and whether it was.
func (s *ThreadStore) BilledAt(id string) (FileVersion, bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	rec := s.threads[billKey(id)]
	if rec == nil || rec.more().billedAt == nil {
		return FileVersion{}, false
	}
	return *rec.more().billedAt, true
}

// ApplyOthersBill records the bill of thread id, which another source
// counts, read when the server listed the thread as at (the thread's bill
// is read again when that changes). Like ApplyBilled it only ever adds
// what the bill grew by. repo is the thread's repository as the server
// lists it (gitremote's host/path, "" for none): the bill is pinned to its
// label value when first kept, as a thread is when first counted.
func (s *ThreadStore) ApplyOthersBill(id string, usd map[string]float64, at FileVersion, repo string) bool {
	value := s.repos.value(s.labels, repo)
	s.mu.Lock()
	defer s.mu.Unlock()
	key := billKey(id)
	rec := s.threads[key]
	if rec == nil {
		rec = &threadRecord{}
		s.threads[key] = rec
	}
	if !rec.repoSet {
		rec.repo, rec.repoSet = value, true
		s.changedThreads[key] = struct{}{}
	}
	if was := rec.more().billedAt; was == nil || *was != at {
		rec.change(func(x *threadExtra) { x.billedAt = &at }) // replaced, never changed in place (threadRecord)
		s.changedThreads[key] = struct{}{}
		s.generation++
	}
	return s.applyBilledLocked(id, usd)
}

// billRecords returns the records that hold thread id's bill: the
// thread's own (when this store counts it) and the one kept while another
// source counted it, and the one the bill grows in (the thread's own when
// there is one). Both exist only when the thread changed hands (a local
// file's record lost with a damaged state): the bill is then their sum,
// so it is still counted once.
func (s *ThreadStore) billRecords(id string) (recs []*threadRecord, into *threadRecord, key string) {
	if rec := s.threads[id]; rec != nil {
		recs, into, key = append(recs, rec), rec, id
	}
	if rec := s.threads[billKey(id)]; rec != nil {
		recs = append(recs, rec)
		if into == nil {
			into, key = rec, billKey(id)
		}
	}
	return recs, into, key
}
