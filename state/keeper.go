// Package state keeps the counting state of every source in one
// append-only log under --storage.path (state/statelog), so that a
// restart or a kill -9 neither loses nor double counts. It owns the log's
// schema: the key spaces of its records, the order a save writes them in,
// and replay into the stores at start-up.
//
// A Keeper is opened (Open: the directory is locked and the state read
// into the empty stores), saved (Save, or Flush for a caller that must
// know its counts are on disk), and closed. Its methods are safe for
// concurrent use; the caller runs the ticker.
package state

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/amp-exporter/amp-exporter/state/dirlock"
	"github.com/amp-exporter/amp-exporter/state/statelog"
	"github.com/amp-exporter/amp-exporter/store"
)

// LogName is the one file that holds the state of every source.
const LogName = "state.log"

// Keys of the state log's records. A thread's and a file's records are
// opaque JSON documents (store.ThreadState, store.FileRecord), so
// fields added to them flow through.
const (
	keyMeta         = "meta"
	keyLabels       = "labels"
	keyStream       = "stream"
	keyAmy          = "amy"
	keyThreadPrefix = "t:"
	keyFilePrefix   = "f:"
	// The Amp server source's threads and their versions (its own store).
	keyAmpServerThreadPrefix = "s:"
	keyAmpServerFilePrefix   = "sf:"
	// The OTLP push's series start times (store.SeriesStarts); a log
	// without it restores with none, and every series then starts anew.
	keyStarts = "series_starts"
)

// stateMeta is the log's meta record, written last in the first commit: a
// log without it is one whose first commit did not finish.
type stateMeta struct {
	Version int `json:"version"`
	// Began is when the log was started, epoch ms: when these counters
	// began (the default end of `amp-exporter backfill`).
	Began int64 `json:"began_ms,omitempty"`
}

// CountersBegan is when the live counters kept under dir began (the state
// log's first commit), zero when there is no state or it does not say. It
// only reads the log, which the exporter may be writing meanwhile.
func CountersBegan(dir string) (time.Time, error) {
	path := filepath.Join(dir, LogName)
	if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
		return time.Time{}, nil
	}
	b, ok, err := statelog.Lookup(path, keyMeta)
	if err != nil || !ok {
		return time.Time{}, err
	}
	var meta stateMeta
	if err := json.Unmarshal(b, &meta); err != nil {
		return time.Time{}, fmt.Errorf("state log %q: meta record: %w", path, err)
	}
	if meta.Began <= 0 {
		return time.Time{}, nil
	}
	return time.UnixMilli(meta.Began), nil
}

// Stores are the stores whose state is kept.
type Stores struct {
	Threads   *store.ThreadStore
	AmpServer *store.ThreadStore // nil while the Amp server source is off
	Streams   *store.StreamStore
	Amy       *store.AmyStore
	Labels    *store.LabelCap
	// SeriesStarts are the OTLP push's start times; nil keeps none.
	SeriesStarts *store.SeriesStarts
}

// Metrics is what the keeper reports about the log
// (collector.ExporterMetrics implements it).
type Metrics interface {
	// StateFailed counts a failed load or save (op "load", "save").
	StateFailed(op string)
	// StateLoadDamage counts what a load found, by kind (the Damage*
	// constants).
	StateLoadDamage(kind string, n int)
	// StateSaved records a save that wrote bytes, and how long it took.
	StateSaved(bytes int64, d time.Duration)
	// StateCompacted records a compaction that wrote bytes.
	StateCompacted(bytes int64)
}

// Kinds of what a load can find (StateLoadDamage).
const (
	// DamageTorn: the end of the last save, cut off by a crash (expected
	// after a kill -9 or a power cut; not an error).
	DamageTorn = "torn_tail"
	// DamageBatch: a damaged batch before intact ones.
	DamageBatch = "batch"
	// DamageRecord: a record lost to damage.
	DamageRecord = "record"
	// DamageUndecodable: a record whose checksum holds but whose content
	// this version cannot decode.
	DamageUndecodable = "undecodable"
	// DamageNotALog: the file is not a state log at all.
	DamageNotALog = "not_a_log"
)

// Options configure a Keeper.
type Options struct {
	// Dir is the storage directory (--storage.path).
	Dir     string
	Stores  Stores
	Metrics Metrics
	Logger  *slog.Logger
	// Now is the clock that names set-aside copies (time.Now when nil).
	Now func() time.Time
}

// Keeper restores every source's state from one log at start, and
// appends what changed to it on every save.
type Keeper struct {
	dir     string
	stores  Stores
	metrics Metrics
	log     *slog.Logger
	now     func() time.Time

	// mu serializes saves and close.
	mu     sync.Mutex
	closed bool
	db     *statelog.Log
	// lock holds the directory for this process from restore to close.
	lock *dirlock.Lock
	// last holds the last written value of the whole-store records, so an
	// unchanged one is not written again.
	last                 map[string][]byte
	streamGen, amyGen    uint64
	startsGen            uint64
	haveMeta             bool
	written, compactions int64
	// damaged is set when the load lost records to damage: the file
	// records are then not restored, so every file is read again (its
	// thread's pins keep what was counted from counting twice).
	damaged bool
}

func newKeeper(o Options) *Keeper {
	now := o.Now
	if now == nil {
		now = time.Now
	}
	log := o.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Keeper{dir: o.Dir, stores: o.Stores, metrics: o.Metrics, log: log, now: now, last: map[string][]byte{}}
}

// Open takes the storage directory for this process and reads the saved
// state into the stores, which must be empty (see restore). On an error
// the directory is given back.
func Open(o Options) (*Keeper, error) {
	k := newKeeper(o)
	if err := k.restore(); err != nil {
		return nil, err
	}
	return k, nil
}

// Save appends what changed since the last save to the log, as one
// commit. A failed save leaves the changes to be saved with the next.
func (k *Keeper) Save() error {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.closed {
		return ErrClosed
	}
	return k.save()
}

// Flush saves now what changed and returns once it is on disk: what lets
// an acknowledgement mean "saved". The context bounds the wait for a save
// under way.
func (k *Keeper) Flush(ctx context.Context) error {
	done := make(chan error, 1)
	go func() { done <- k.Save() }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Close saves what changed one last time, closes the log and gives the
// directory back. Later calls (and saves) return ErrClosed.
func (k *Keeper) Close() error {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.closed {
		return ErrClosed
	}
	err := k.save()
	k.closed = true
	return errors.Join(err, k.close())
}

// ErrClosed is returned by a Keeper's methods after Close.
var ErrClosed = errors.New("the state keeper is closed")

// threadSpace is one thread store's part of the log: its thread and file
// records under their own key prefixes.
type threadSpace struct {
	threadPrefix, filePrefix string
	store                    *store.ThreadStore
}

// spaces are the thread stores kept, local files first. Records of the
// server source while it is off stay in the log untouched (see replay).
func (k *Keeper) spaces() []threadSpace {
	sp := []threadSpace{{keyThreadPrefix, keyFilePrefix, k.stores.Threads}}
	if k.stores.AmpServer != nil {
		sp = append(sp, threadSpace{keyAmpServerThreadPrefix, keyAmpServerFilePrefix, k.stores.AmpServer})
	}
	return sp
}

// spaceOf finds the space a thread or file record belongs to; ok is false
// for other records, and store is nil for a space that is off.
func spaceOf(key string, stores Stores) (sp threadSpace, isThread, ok bool) {
	switch {
	case strings.HasPrefix(key, keyThreadPrefix):
		return threadSpace{keyThreadPrefix, keyFilePrefix, stores.Threads}, true, true
	case strings.HasPrefix(key, keyFilePrefix):
		return threadSpace{keyThreadPrefix, keyFilePrefix, stores.Threads}, false, true
	case strings.HasPrefix(key, keyAmpServerThreadPrefix):
		return threadSpace{keyAmpServerThreadPrefix, keyAmpServerFilePrefix, stores.AmpServer}, true, true
	case strings.HasPrefix(key, keyAmpServerFilePrefix):
		return threadSpace{keyAmpServerThreadPrefix, keyAmpServerFilePrefix, stores.AmpServer}, false, true
	}
	return threadSpace{}, false, false
}

// ErrNewer is a state written by a newer version in a form this one
// cannot read: the exporter refuses to start rather than count from zero.
var ErrNewer = errors.New("the saved state was written by a newer amp-exporter")

// restore takes the directory for this process, then loads the state
// into the empty stores. A directory another exporter holds is refused at
// once (two writers would interleave their commits in one log). A damaged
// log is set aside, reported and counted; a newer one is refused. On an
// error the directory is given back.
func (k *Keeper) restore() (err error) {
	if k.lock, err = dirlock.Acquire(k.dir); err != nil {
		if errors.Is(err, dirlock.ErrLocked) {
			return fmt.Errorf("%w; give each amp-exporter its own --storage.path", err)
		}
		return err
	}
	defer func() {
		if err != nil {
			err = errors.Join(err, k.close())
		}
	}()
	return k.load()
}

// close closes the state log and gives the directory back. It may be
// called more than once.
func (k *Keeper) close() error {
	var err error
	if k.db != nil {
		err = k.db.Close()
		k.db = nil
	}
	if k.lock != nil {
		err = errors.Join(err, k.lock.Release())
		k.lock = nil
	}
	return err
}
