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
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
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
	keyServerThreadPrefix = "s:"
	keyServerFilePrefix   = "sf:"
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
	Threads *store.ThreadStore
	Server  *store.ThreadStore // nil while the Amp server source is off
	Streams *store.StreamStore
	Amy     *store.AmyStore
	Labels  *store.LabelCap
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
	if k.stores.Server != nil {
		sp = append(sp, threadSpace{keyServerThreadPrefix, keyServerFilePrefix, k.stores.Server})
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
	case strings.HasPrefix(key, keyServerThreadPrefix):
		return threadSpace{keyServerThreadPrefix, keyServerFilePrefix, stores.Server}, true, true
	case strings.HasPrefix(key, keyServerFilePrefix):
		return threadSpace{keyServerThreadPrefix, keyServerFilePrefix, stores.Server}, false, true
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

// load reads the state log into the stores.
func (k *Keeper) load() error {
	path := filepath.Join(k.dir, LogName)
	db, rec, err := statelog.Open(path, k.now())
	if err != nil {
		if errors.Is(err, statelog.ErrNewer) {
			return fmt.Errorf("%w: %w", ErrNewer, err)
		}
		return err
	}
	k.db = db
	if rec.TempRemoved > 0 {
		k.log.Info("removed temporary files of an interrupted state save", "count", rec.TempRemoved)
	}
	if rec.TornBytes > 0 {
		k.metrics.StateLoadDamage(DamageTorn, 1)
		k.log.Warn("the last state save was interrupted; it was cut off and its counts are read again from the files",
			"path", path, "bytes", rec.TornBytes)
	}
	if rec.Damaged != nil {
		k.metrics.StateFailed("load")
		k.metrics.StateLoadDamage(DamageNotALog, 1)
		k.log.Error("the state file is not a state log; it was set aside and counting starts fresh (counters will look reset to Prometheus)",
			"path", path, "set_aside_as", rec.SetAside, "err", rec.Damaged)
	}
	if len(rec.Damage) > 0 {
		// Damage before intact batches: never a torn write. What it hit is
		// lost; everything else is kept, and every file is read again.
		k.damaged = true
		k.metrics.StateFailed("load")
		k.metrics.StateLoadDamage(DamageBatch, len(rec.Damage))
		k.metrics.StateLoadDamage(DamageRecord, rec.LostRecords())
		offsets := make([]int64, 0, len(rec.Damage))
		kept := 0
		for _, d := range rec.Damage {
			offsets = append(offsets, d.Offset)
			kept += d.Kept
		}
		k.log.Error("saved state is damaged; a copy was set aside, the damaged records are left out and every file is read again",
			"path", path, "set_aside_as", rec.SetAside, "offsets", offsets, "records_lost", rec.LostRecords(),
			"records_kept_from_damaged_batches", kept, "err", rec.Err(path))
	}
	if !db.Has(keyMeta) && !k.damaged {
		// A new log, or one whose first commit was cut short: start it
		// over. (A log that lost its meta record to damage keeps the
		// rest: the next save writes meta again.)
		if db.Len() > 0 {
			k.db = nil
			if err := db.Close(); err != nil {
				return err
			}
			if err := os.Remove(path); err != nil {
				return fmt.Errorf("restart an unfinished first state save: %w", err)
			}
			if k.db, _, err = statelog.Open(path, k.now()); err != nil {
				return err
			}
		}
		k.log.Info("no saved state yet, starting fresh", "path", path)
		// The stream and Amy records are written by the first save
		// (their generation differs), and the meta record last; fail
		// early if the directory is not writable.
		k.streamGen, k.amyGen = k.stores.Streams.Generation()+1, k.stores.Amy.Generation()+1
		return k.save()
	}
	k.haveMeta = db.Has(keyMeta)
	start := time.Now()
	stats, err := k.replay()
	if err != nil {
		return err
	}
	if stats.bad > 0 {
		k.metrics.StateFailed("load")
		k.metrics.StateLoadDamage(DamageUndecodable, stats.bad)
		k.log.Error("some saved state records are damaged and were left out; their threads are read again from their files",
			"path", path, "records", stats.bad, "first_err", stats.firstErr)
	}
	if stats.unknown > 0 {
		k.log.Warn("the saved state holds data of a newer amp-exporter that this version does not know; it is kept in the file but not counted here",
			"path", path, "records", stats.unknown, "series", stats.droppedSeries)
	}
	k.streamGen, k.amyGen = k.stores.Streams.Generation(), k.stores.Amy.Generation()
	k.log.Info("state restored", "path", path, "threads", stats.threads, "files", stats.files,
		"bytes", db.Size(), "duration", time.Since(start).Round(time.Millisecond))
	return nil
}

type replayStats struct {
	threads, files, bad, unknown, droppedSeries int
	firstErr                                    error
}

// replay reads the log's live records into the stores.
func (k *Keeper) replay() (replayStats, error) {
	var st replayStats
	var meta stateMeta
	type file struct {
		store *store.ThreadStore
		path  string
		rec   store.FileRecord
	}
	var files []file
	// st is shared with the decoding workers: changed under mu (below).
	var mu sync.Mutex
	fail := func(key string, err error) {
		st.bad++
		if st.firstErr == nil {
			st.firstErr = fmt.Errorf("record %q: %w", redactKey(key), err)
		}
	}
	var newer error
	// The threads the server source counted, while it is off.
	var serverOwned []string
	// Thread records, nearly all of the state, are decoded on every core.
	type threadRec struct {
		store  *store.ThreadStore
		key, v string
		raw    []byte
	}
	threads := make(chan threadRec, 256)
	var wg sync.WaitGroup
	for range runtime.GOMAXPROCS(0) {
		wg.Go(func() {
			for r := range threads {
				var ts store.ThreadState
				err := json.Unmarshal(r.raw, &ts)
				var dropped int
				if err == nil {
					dropped, err = r.store.ImportThread(r.v, ts)
				}
				mu.Lock()
				if err != nil {
					fail(r.key, err)
				} else {
					st.threads++
					st.droppedSeries += dropped
					if dropped > 0 {
						st.unknown++
					}
				}
				mu.Unlock()
			}
		})
	}
	err := k.db.Each(func(key string, v []byte) error {
		if sp, isThread, ok := spaceOf(key, k.stores); ok {
			switch {
			case sp.store == nil:
				// The server source is off: its records wait in the log.
				if isThread {
					serverOwned = append(serverOwned, strings.TrimPrefix(key, sp.threadPrefix))
				}
			case isThread:
				threads <- threadRec{sp.store, key, strings.TrimPrefix(key, sp.threadPrefix), bytes.Clone(v)}
			default:
				var f store.FileRecord
				mu.Lock()
				defer mu.Unlock()
				if err := json.Unmarshal(v, &f); err != nil {
					fail(key, err)
					return nil
				}
				files = append(files, file{sp.store, strings.TrimPrefix(key, sp.filePrefix), f})
			}
			return nil
		}
		mu.Lock()
		defer mu.Unlock()
		switch {
		case key == keyMeta:
			if err := json.Unmarshal(v, &meta); err != nil {
				return fmt.Errorf("state log meta record: %w", err)
			}
		case key == keyLabels:
			var admitted map[string][]string
			if err := json.Unmarshal(v, &admitted); err != nil {
				fail(key, err)
				return nil
			}
			k.stores.Labels.ImportAdmitted(admitted)
			k.last[key] = bytes.Clone(v)
		case key == keyStream:
			var s store.StreamState
			if err := json.Unmarshal(v, &s); err != nil {
				fail(key, err)
				return nil
			}
			if s.Version > store.StateVersion {
				newer = fmt.Errorf("%w: stream state version %d, this version reads up to %d", ErrNewer, s.Version, store.StateVersion)
				return nil
			}
			if n := s.KeepKnown(); n > 0 {
				st.unknown++
				st.droppedSeries += n
			}
			if err := k.stores.Streams.Import(&s); err != nil {
				fail(key, err)
				return nil
			}
			k.last[key] = bytes.Clone(v)
		case key == keyAmy:
			var a store.AmyState
			if err := json.Unmarshal(v, &a); err != nil {
				fail(key, err)
				return nil
			}
			if a.Version > store.StateVersion {
				newer = fmt.Errorf("%w: amy state version %d, this version reads up to %d", ErrNewer, a.Version, store.StateVersion)
				return nil
			}
			if n := a.KeepKnown(); n > 0 {
				st.unknown++
				st.droppedSeries += n
			}
			if err := k.stores.Amy.Import(&a); err != nil {
				fail(key, err)
				return nil
			}
			k.last[key] = bytes.Clone(v)
		default:
			st.unknown++ // a newer version's record: left in the log
		}
		return nil
	})
	close(threads)
	wg.Wait()
	if err != nil {
		return st, err
	}
	if meta.Version > store.StateVersion {
		return st, fmt.Errorf("%w: state version %d, this version reads up to %d; upgrade amp-exporter, or move %s away to start counting afresh",
			ErrNewer, meta.Version, store.StateVersion, k.dir)
	}
	if newer != nil {
		return st, fmt.Errorf("%w; upgrade amp-exporter, or move %s away to start counting afresh", newer, k.dir)
	}
	if k.damaged || st.bad > 0 {
		// A thread's record may be lost (or older than its file's): with
		// no file records every file is read again, and the pins of the
		// threads restored keep what was counted from counting twice.
		files = nil
	}
	for _, f := range files {
		if err := f.store.ImportFile(f.path, f.rec); err != nil {
			fail(keyFilePrefix+f.path, err)
			continue
		}
		st.files++
	}
	if len(serverOwned) > 0 {
		// One thread, one count, and the choice never flips: a thread the
		// server source counted is not counted from a local file while the
		// source is off (both stores' counts would add up once it is on
		// again). Local threads keep theirs, as when it is on.
		owners := store.NewOwners()
		owners.Seed(store.SourceThreads, k.stores.Threads.ThreadKeys())
		owners.Seed(store.SourceServer, serverOwned)
		k.stores.Threads.SetClaim(owners, store.SourceThreads)
	}
	return st, nil
}

// redactKey keeps paths and thread ids out of logs: only the record's kind.
func redactKey(key string) string {
	if i := strings.Index(key, ":"); i >= 0 {
		return key[:i+1] + "…"
	}
	return key
}

// save appends what changed since the last save, as one commit. The
// records go in the order a crash in the middle of the commit must find
// them: the admitted labels (exported after the thread delta, so they hold
// every value it uses), then threads, then files (a file's version never
// reaches the disk before what it added), then the stream and Amy records,
// and the meta record last in the first commit (its presence says the
// first commit is whole). Thread records are encoded one at a time as the
// commit is written, so a save holds about one batch in memory.
func (k *Keeper) save() error {
	start := time.Now()
	spaces := k.spaces()
	deltas := make([]*store.ThreadDelta, len(spaces))
	for i, sp := range spaces {
		deltas[i] = sp.store.ExportDelta()
	}
	requeue := func() {
		for i, sp := range spaces {
			sp.store.Requeue(deltas[i])
		}
	}
	labels, err := json.Marshal(k.stores.Labels.ExportAdmitted())
	if err != nil {
		requeue()
		return fmt.Errorf("encode labels: %w", err)
	}
	type whole struct {
		key string
		v   []byte
		gen uint64
	}
	var wholes []whole
	if !bytes.Equal(labels, k.last[keyLabels]) {
		wholes = append(wholes, whole{keyLabels, labels, 0})
	}
	var tail []whole
	if g := k.stores.Streams.Generation(); g != k.streamGen {
		b, err := json.Marshal(k.stores.Streams.Export())
		if err != nil {
			requeue()
			return fmt.Errorf("encode stream state: %w", err)
		}
		tail = append(tail, whole{keyStream, b, g})
	}
	if g := k.stores.Amy.Generation(); g != k.amyGen {
		b, err := json.Marshal(k.stores.Amy.Export())
		if err != nil {
			requeue()
			return fmt.Errorf("encode Amy state: %w", err)
		}
		tail = append(tail, whole{keyAmy, b, g})
	}
	if !k.haveMeta {
		b, _ := json.Marshal(stateMeta{Version: store.StateVersion, Began: k.now().UnixMilli()})
		tail = append(tail, whole{keyMeta, b, 0})
	}
	empty := true
	for _, d := range deltas {
		empty = empty && d.Empty()
	}
	if empty && len(wholes) == 0 && len(tail) == 0 {
		return nil
	}
	tx := k.db.Begin()
	err = func() error {
		for _, w := range wholes {
			if err := tx.Put(w.key, w.v); err != nil {
				return err
			}
		}
		// Every space's threads before any space's files: a file's
		// version never reaches the disk before what it added.
		for i, sp := range spaces {
			err := deltas[i].EachThread(func(key string, ts store.ThreadState) error {
				b, err := json.Marshal(ts)
				if err != nil {
					return fmt.Errorf("encode thread state: %w", err)
				}
				return tx.Put(sp.threadPrefix+key, b)
			})
			if err != nil {
				return err
			}
		}
		for i, sp := range spaces {
			for _, p := range deltas[i].FilePaths() {
				f := deltas[i].Files[p]
				var b []byte // nil: the file is gone
				if f != nil {
					var err error
					if b, err = json.Marshal(f); err != nil {
						return fmt.Errorf("encode file state: %w", err)
					}
				}
				if err := tx.Put(sp.filePrefix+p, b); err != nil {
					return err
				}
			}
		}
		for _, w := range tail {
			if err := tx.Put(w.key, w.v); err != nil {
				return err
			}
		}
		n, err := tx.Commit()
		k.written += n
		if err == nil {
			k.metrics.StateSaved(n, time.Since(start))
		}
		return err
	}()
	if err != nil {
		tx.Abort()
		requeue()
		k.metrics.StateFailed("save")
		return err
	}
	for _, w := range append(wholes, tail...) {
		switch w.key {
		case keyStream:
			k.streamGen = w.gen
		case keyAmy:
			k.amyGen = w.gen
		case keyMeta:
			k.haveMeta = true
		}
		k.last[w.key] = w.v
	}
	if k.db.NeedsCompaction() {
		n, err := k.db.Compact()
		if err != nil {
			k.metrics.StateFailed("save")
			k.log.Error("cannot compact the state log; it keeps growing until this succeeds", "err", err)
		} else {
			k.written += n
			k.compactions++
			k.metrics.StateCompacted(n)
		}
	}
	return nil
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
