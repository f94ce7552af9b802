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
// it. A thread the server no longer lists is left out, as a report
// without a cache leaves it out: the cache saves requests, never changes
// a figure. Each account of a server has its own threads in it, each
// kept under the settings that counted it.
type ServerCache struct {
	mu sync.Mutex
	// threads are the account's, once UseAccount named it; accounts
	// holds every account's as read from the file.
	threads  map[string]*cachedThread // by store.AmpServerPath(id)
	accounts map[string]*accountCache
	account  string // accountKey of the account, "" until named
	settings string // Settings.Fingerprint
	counted  map[string]backfill.ThreadGrowth
	count    func(path string, sum *thread.Summary) error
	dirty    bool
	fetched  int
}

// cacheFormat is the version of the cache file; a file of another is
// ignored (the next report reads every thread again).
const cacheFormat = 3 // 3: the commits and pull requests of each entry

// unreadVersion is the version of a thread cached without some of its
// items: no listing has a negative message count, so the syncer reads
// the thread again at the next report.
var unreadVersion = store.FileVersion{AmpServerCount: -1}

type cacheFile struct {
	Format int `json:"format"`
	// Accounts by accountKey: each account of the server has its own
	// threads (a thread shared with another account is counted by its
	// creator's).
	Accounts map[string]*accountCache `json:"accounts"`
}

// accountCache is one account's threads, counted under the settings
// whose fingerprint Settings is: under other settings (repository rules,
// label cap, prices) they are counted anew.
type accountCache struct {
	Settings string          `json:"settings"`
	Threads  []*cachedThread `json:"threads"`
}

// Settings are what shapes a cached thread's entries: its repository
// (the switch and rules), the label cap's folding of models, and its
// cost (the price table and the overrides).
type Settings struct {
	Prices         string `json:"prices"` // the table's source and version
	Overrides      any    `json:"overrides,omitempty"`
	Repository     bool   `json:"repository"`
	Rules          any    `json:"rules,omitempty"`
	MaxLabelValues int    `json:"max_label_values"`
}

// Fingerprint is a short hash of the settings.
func (s Settings) Fingerprint() string {
	b, err := json.Marshal(s)
	if err != nil {
		// Not a value JSON can hold: no cache matches it.
		return "unfingerprinted"
	}
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:12])
}

// accountKey names an account in the cache file by a hash of its id:
// neither the id nor the e-mail is written.
func accountKey(id string) string {
	h := sha256.Sum256([]byte("amp-exporter report account\x00" + id))
	return hex.EncodeToString(h[:12])
}

type cachedThread struct {
	ID      string            `json:"id"`
	Version store.FileVersion `json:"version"`
	Entries []cachedEntry     `json:"entries"`
}

// cachedEntry is one bucket and model of a thread: Start, Model and the
// eight figures of Usage in its order.
type cachedEntry struct {
	Start int64    `json:"t"`
	Model string   `json:"m"`
	Repo  string   `json:"r,omitempty"`
	U     [8]int64 `json:"u"`
}

// CacheFile is the file a cache of the server at url is kept in under
// dir: one per server, so that a report against a stand-in or another
// deployment never mixes their threads.
func CacheFile(dir, url string) string {
	h := sha256.Sum256([]byte(url))
	return filepath.Join(dir, "report-server-"+hex.EncodeToString(h[:6])+".json.gz")
}

// OpenServerCache reads the cache at path, for a report under settings
// (Settings.Fingerprint); a missing, unreadable or foreign file is an
// empty cache (err says why, for a log line: the report goes on, reading
// every thread). Which account's threads it holds is known once the
// server named the account (UseAccount): until then it holds none.
func OpenServerCache(path, settings string) (*ServerCache, error) {
	c := &ServerCache{threads: map[string]*cachedThread{}, accounts: map[string]*accountCache{},
		counted: map[string]backfill.ThreadGrowth{}, settings: settings}
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
	for k, a := range cf.Accounts {
		if a != nil {
			c.accounts[k] = a
		}
	}
	return c, nil
}

// UseAccount names the account the server answers for (getUserInfo's
// id): the cache then holds that account's threads, if they were counted
// under the same settings, else none (every thread is read). Call it
// before the sync consults the cache.
func (c *ServerCache) UseAccount(id string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	k := accountKey(id)
	if k == c.account {
		return
	}
	c.account = k
	c.threads = map[string]*cachedThread{}
	a := c.accounts[k]
	if a == nil || a.Settings != c.settings {
		// Threads counted under other settings are dropped at Save.
		c.dirty = c.dirty || a != nil
		return
	}
	for _, t := range a.Threads {
		if t != nil && t.ID != "" {
			c.threads[store.AmpServerPath(t.ID)] = t
		}
	}
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
	if c.account == "" {
		return nil
	}
	a := &accountCache{Settings: c.settings}
	for _, t := range c.threads {
		a.Threads = append(a.Threads, t)
	}
	sort.Slice(a.Threads, func(i, j int) bool { return a.Threads[i].ID < a.Threads[j].ID })
	// The other accounts' threads are kept as they were read.
	cf := cacheFile{Format: cacheFormat, Accounts: map[string]*accountCache{c.account: a}}
	for k, o := range c.accounts {
		if k != c.account {
			cf.Accounts[k] = o
		}
	}
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
	if t == nil {
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
		t.Entries = append(t.Entries, cachedEntry{e.Start, e.Model, e.Repo, [8]int64{u.Input, u.Output, u.CacheCreation, u.CacheRead, u.Credits, u.Cost, u.Commits, u.PullRequests}})
	}
	c.threads[path] = t
	c.dirty = true
	c.fetched++
	return true
}

// Remove forgets a thread the server no longer lists for the account
// (deleted, or found to be another user's): the report counts what the
// server has, as a report without a cache would.
func (c *ServerCache) Remove(path string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.threads[path] != nil {
		delete(c.threads, path)
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
	for p := range c.threads {
		out = append(out, p)
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
				Input: e.U[0], Output: e.U[1], CacheCreation: e.U[2], CacheRead: e.U[3], Credits: e.U[4], Cost: e.U[5],
				Commits: e.U[6], PullRequests: e.U[7]}})
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
