package report

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"sync"

	"github.com/amp-exporter/amp-exporter/backfill"
	"github.com/amp-exporter/amp-exporter/parser/thread"
	"github.com/amp-exporter/amp-exporter/store"
)

// ServerCache keeps what the Amp server's threads counted, with the
// version each was read at, between two reports: it is the store the
// server source's syncer fills (the methods of ampserver.Store), so a
// thread the listing shows unchanged is not downloaded again; a report
// then costs one listing when nothing changed. A thread that changed is
// read again and counted anew, whole, as the exporter's first scan counts
// it. A thread deleted on the server keeps what it counted (tokens spent
// stay spent), as the exporter's counters do.
type ServerCache struct {
	mu      sync.Mutex
	threads map[string]*cachedThread // by store.AmpServerPath(id)
	counted map[string]backfill.ThreadGrowth
	count   func(path string, sum *thread.Summary) error
	dirty   bool
	fetched int
}

// cacheFormat is the version of the cache file; a file of another is
// ignored (the next report reads every thread again).
const cacheFormat = 1

// unreadVersion is the version of a thread cached without some of its
// items: no listing has a negative message count, so the syncer reads
// the thread again at the next report.
var unreadVersion = store.FileVersion{AmpServerCount: -1}

type cacheFile struct {
	Format  int             `json:"format"`
	Threads []*cachedThread `json:"threads"`
}

type cachedThread struct {
	ID      string            `json:"id"`
	Version store.FileVersion `json:"version"`
	// Gone: the server no longer lists it; what it counted stays.
	Gone    bool          `json:"gone,omitempty"`
	Entries []cachedEntry `json:"entries"`
}

// cachedEntry is one bucket and model of a thread: Start, Model and the
// six figures of Usage in its order.
type cachedEntry struct {
	Start int64    `json:"t"`
	Model string   `json:"m"`
	Repo  string   `json:"r,omitempty"`
	U     [6]int64 `json:"u"`
}

// CacheFile is the file a cache of the server at url is kept in under
// dir: one per server, so that a report against a stand-in or another
// deployment never mixes their threads.
func CacheFile(dir, url string) string {
	h := sha256.Sum256([]byte(url))
	return filepath.Join(dir, "report-server-"+hex.EncodeToString(h[:6])+".json.gz")
}

// OpenServerCache reads the cache at path; a missing, unreadable or
// foreign file is an empty cache (err says why, for a log line: the
// report goes on, reading every thread).
func OpenServerCache(path string) (*ServerCache, error) {
	c := &ServerCache{threads: map[string]*cachedThread{}, counted: map[string]backfill.ThreadGrowth{}}
	if path == "" {
		return c, nil
	}
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return c, nil
	}
	if err != nil {
		return c, fmt.Errorf("report cache: %w", err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		return c, fmt.Errorf("report cache %s: %w", path, err)
	}
	var cf cacheFile
	dec := json.NewDecoder(io.LimitReader(zr, 4<<30))
	if err := dec.Decode(&cf); err != nil {
		return c, fmt.Errorf("report cache %s: %w", path, err)
	}
	// gzip checks its CRC-32 and length only at the end of the stream:
	// read to it, or a flipped bit that still decodes as JSON would be
	// taken for the real figures. Anything after the one value (but the
	// newline Save writes) is damage too.
	if err := cacheTail(dec, zr); err != nil {
		return c, fmt.Errorf("report cache %s: damaged: %w", path, err)
	}
	if cf.Format != cacheFormat {
		return c, fmt.Errorf("report cache %s: format %d, not %d: read anew", path, cf.Format, cacheFormat)
	}
	for _, t := range cf.Threads {
		if t != nil && t.ID != "" {
			c.threads[store.AmpServerPath(t.ID)] = t
		}
	}
	return c, nil
}

// cacheTail reads what follows the decoded value to the end of the gzip
// stream: only white space may be there, and the stream must end with a
// good checksum.
func cacheTail(dec *json.Decoder, zr *gzip.Reader) error {
	rest, err := io.ReadAll(io.MultiReader(dec.Buffered(), zr))
	if err != nil {
		return err
	}
	if len(bytes.TrimSpace(rest)) != 0 {
		return fmt.Errorf("%d bytes after the cache", len(bytes.TrimSpace(rest)))
	}
	return nil
}

// Save writes the cache to path, atomically (a temporary file renamed
// over it), readable by the user alone: it holds what their threads
// spent. Nothing is written when nothing changed.
func (c *ServerCache) Save(path string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if path == "" || !c.dirty {
		return nil
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return fmt.Errorf("report cache: %w", err)
	}
	cf := cacheFile{Format: cacheFormat}
	for _, t := range c.threads {
		cf.Threads = append(cf.Threads, t)
	}
	sort.Slice(cf.Threads, func(i, j int) bool { return cf.Threads[i].ID < cf.Threads[j].ID })
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*.tmp")
	if err != nil {
		return fmt.Errorf("report cache: %w", err)
	}
	zw := gzip.NewWriter(f)
	err = json.NewEncoder(zw).Encode(cf)
	if cerr := zw.Close(); err == nil {
		err = cerr
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(f.Name(), path)
	}
	if err != nil {
		os.Remove(f.Name())
		return fmt.Errorf("report cache: %w", err)
	}
	c.dirty = false
	return nil
}

// received is the backfill's PerThread hook for the server's threads.
func (c *ServerCache) received(tg backfill.ThreadGrowth) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.counted[tg.Path] = tg
}

// File reports the version a thread was counted at.
func (c *ServerCache) File(path string) (store.FileRecord, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	t := c.threads[path]
	if t == nil || t.Gone {
		return store.FileRecord{}, false
	}
	return store.FileRecord{Key: path, Version: t.Version}, true
}

// Apply counts a thread read from the server, replacing what an older
// version of it counted.
func (c *ServerCache) Apply(path string, v store.FileVersion, sum *thread.Summary) bool {
	if err := c.count(path, sum); err != nil {
		return false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	tg, ok := c.counted[path]
	if !ok {
		return false
	}
	delete(c.counted, path)
	id := sum.ID
	if id == "" {
		id = path[len(store.AmpServerPathPrefix):]
	}
	l := NewLedger()
	l.AddThread(tg)
	if tg.Later > 0 {
		// Items stamped after the report's now were left out: kept at
		// its version, the thread would never be read again (the server
		// lists it unchanged) and the next report would miss them. No
		// listing matches this version, so the next report reads it.
		v = unreadVersion
	}
	t := &cachedThread{ID: id, Version: v}
	for _, e := range l.Entries() {
		u := e.Usage
		t.Entries = append(t.Entries, cachedEntry{e.Start, e.Model, e.Repo, [6]int64{u.Input, u.Output, u.CacheCreation, u.CacheRead, u.Credits, u.Cost}})
	}
	c.threads[path] = t
	c.dirty = true
	c.fetched++
	return true
}

// Remove marks a thread the server no longer has: what it counted stays.
func (c *ServerCache) Remove(path string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if t := c.threads[path]; t != nil && !t.Gone {
		t.Gone = true
		c.dirty = true
	}
}

// ApplyBilled does nothing: the report does not ask for bills.
func (c *ServerCache) ApplyBilled(string, map[string]float64) bool { return false }

// AmpServerPaths lists the threads counted and still on the server.
func (c *ServerCache) AmpServerPaths() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]string, 0, len(c.threads))
	for p, t := range c.threads {
		if !t.Gone {
			out = append(out, p)
		}
	}
	sort.Strings(out)
	return out
}

// AddTo adds every cached thread to the ledger, but those another source
// owns (a thread file with the same id counts it).
func (c *ServerCache) AddTo(l *Ledger, owners *store.Owners) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, t := range c.threads {
		if owners != nil && !owners.Claim(t.ID, store.SourceAmpServer) {
			continue
		}
		for _, e := range t.Entries {
			l.Add(Entry{Start: e.Start, Session: t.ID, Model: e.Model, Repo: e.Repo, Usage: Usage{
				Input: e.U[0], Output: e.U[1], CacheCreation: e.U[2], CacheRead: e.U[3], Credits: e.U[4], Cost: e.U[5]}})
		}
	}
}

// Threads is the number of threads in the cache, and how many of them
// this report read from the server.
func (c *ServerCache) Threads() (cached, fetched int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.threads), c.fetched
}
