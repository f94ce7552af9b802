package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"time"

	"github.com/amp-exporter/amp-exporter/collector"
	"github.com/amp-exporter/amp-exporter/internal/dirlock"
	"github.com/amp-exporter/amp-exporter/internal/statefile"
	"github.com/amp-exporter/amp-exporter/internal/statelog"
	"github.com/amp-exporter/amp-exporter/source/streams"
	"github.com/amp-exporter/amp-exporter/store"
)

// stateSaveInterval bounds what a crash can lose: counts made since the
// last save are re-read from the files that still exist on restart, so only
// the contributions of threads deleted in that window (and stream lines
// ingested over HTTP in it) could be lost. A save writes only what changed,
// so it can be frequent.
const stateSaveInterval = time.Second

// stateLogName is the one file that holds the state of every source.
const stateLogName = "state.log"

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

// legacyStateFiles are the three JSON files of earlier versions, migrated
// into the log on first start.
var legacyStateFiles = []string{"threads-state.json", "stream-state.json", "amy-state.json"}

// stateMeta is the log's meta record, written last in the first commit: a
// log without it is one whose first commit (a migration) did not finish.
type stateMeta struct {
	Version int `json:"version"`
}

// stateStores are the stores whose state is kept.
type stateStores struct {
	threads *store.ThreadStore
	server  *store.ThreadStore // nil while the Amp server source is off
	streams *store.StreamStore
	amy     *store.AmyStore
	labels  *store.LabelCap
}

// stateKeeper restores every source's state from one log at start, and
// appends what changed to it every second, and once more at shutdown.
type stateKeeper struct {
	dir     string
	stores  stateStores
	metrics *collector.ExporterMetrics
	log     *slog.Logger
	now     func() time.Time
	// interval is how often changed state is saved.
	interval time.Duration
	// flushes asks run for a save now; stopped is closed when run ends.
	flushes chan chan error
	stopped chan struct{}

	db *statelog.Log
	// lock holds the directory for this process from restore to close.
	lock *dirlock.Lock
	// last holds the last written value of the whole-store records, so an
	// unchanged one is not written again.
	last                 map[string][]byte
	streamGen, amyGen    uint64
	haveMeta             bool
	migrated             []string // legacy files to rename once the first save is on disk
	written, compactions int64
}

func newStateKeeper(dir string, stores stateStores, m *collector.ExporterMetrics, log *slog.Logger) *stateKeeper {
	return &stateKeeper{dir: dir, stores: stores, metrics: m, log: log, now: time.Now, interval: stateSaveInterval,
		last: map[string][]byte{}, flushes: make(chan chan error), stopped: make(chan struct{})}
}

// threadSpace is one thread store's part of the log: its thread and file
// records under their own key prefixes.
type threadSpace struct {
	threadPrefix, filePrefix string
	store                    *store.ThreadStore
}

// spaces are the thread stores kept, local files first. Records of the
// server source while it is off stay in the log untouched (see replay).
func (k *stateKeeper) spaces() []threadSpace {
	sp := []threadSpace{{keyThreadPrefix, keyFilePrefix, k.stores.threads}}
	if k.stores.server != nil {
		sp = append(sp, threadSpace{keyServerThreadPrefix, keyServerFilePrefix, k.stores.server})
	}
	return sp
}

// spaceOf finds the space a thread or file record belongs to; ok is false
// for other records, and store is nil for a space that is off.
func spaceOf(key string, stores stateStores) (sp threadSpace, isThread, ok bool) {
	switch {
	case strings.HasPrefix(key, keyThreadPrefix):
		return threadSpace{keyThreadPrefix, keyFilePrefix, stores.threads}, true, true
	case strings.HasPrefix(key, keyFilePrefix):
		return threadSpace{keyThreadPrefix, keyFilePrefix, stores.threads}, false, true
	case strings.HasPrefix(key, keyServerThreadPrefix):
		return threadSpace{keyServerThreadPrefix, keyServerFilePrefix, stores.server}, true, true
	case strings.HasPrefix(key, keyServerFilePrefix):
		return threadSpace{keyServerThreadPrefix, keyServerFilePrefix, stores.server}, false, true
	}
	return threadSpace{}, false, false
}

// errStateNewer is a state written by a newer version in a form this one
// cannot read: the exporter refuses to start rather than count from zero.
var errStateNewer = errors.New("the saved state was written by a newer amp-exporter")

// restore takes the directory for this process, then loads the state
// into the empty stores. A directory another exporter holds is refused at
// once (two writers would interleave their commits in one log). A damaged
// log is set aside, reported and counted; a newer one is refused. On an
// error the directory is given back.
func (k *stateKeeper) restore() (err error) {
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

// load reads the state log (or migrates the legacy files) into the stores.
func (k *stateKeeper) load() error {
	path := filepath.Join(k.dir, stateLogName)
	db, rec, err := statelog.Open(path, k.now())
	if err != nil {
		if errors.Is(err, statelog.ErrNewer) {
			return fmt.Errorf("%w: %w", errStateNewer, err)
		}
		return err
	}
	k.db = db
	if rec.TempRemoved > 0 {
		k.log.Info("removed temporary files of an interrupted state save", "count", rec.TempRemoved)
	}
	if rec.TornBytes > 0 {
		k.log.Warn("the last state save was interrupted; it was cut off and its counts are read again from the files",
			"path", path, "bytes", rec.TornBytes)
	}
	if rec.SetAside != "" {
		k.metrics.StateFailed("load")
		k.log.Error("saved state is damaged; a copy was set aside and what could be read is kept",
			"path", path, "set_aside_as", rec.SetAside, "err", rec.Damaged)
	}
	for _, name := range legacyStateFiles {
		if n, err := statefile.CleanTemp(filepath.Join(k.dir, name)); err != nil {
			return err
		} else if n > 0 {
			k.log.Info("removed temporary files of an interrupted state save", "count", n, "file", name)
		}
	}
	if !db.Has(keyMeta) {
		// A new log, or a migration cut short: start it over from the
		// legacy files (if any).
		if db.Len() > 0 {
			k.db = nil
			if err := db.Close(); err != nil {
				return err
			}
			if err := os.Remove(path); err != nil {
				return fmt.Errorf("restart an unfinished state migration: %w", err)
			}
			if k.db, _, err = statelog.Open(path, k.now()); err != nil {
				return err
			}
		}
		if err := k.migrate(); err != nil {
			return err
		}
		// The first save writes everything and the meta record last; fail
		// early if the directory is not writable.
		return k.save()
	}
	k.haveMeta = true
	start := time.Now()
	stats, err := k.replay()
	if err != nil {
		return err
	}
	if stats.bad > 0 {
		k.metrics.StateFailed("load")
		k.log.Error("some saved state records are damaged and were left out; their threads are read again from their files",
			"path", path, "records", stats.bad, "first_err", stats.firstErr)
	}
	if stats.unknown > 0 {
		k.log.Warn("the saved state holds data of a newer amp-exporter that this version does not know; it is kept in the file but not counted here",
			"path", path, "records", stats.unknown, "series", stats.droppedSeries)
	}
	k.streamGen, k.amyGen = k.stores.streams.Generation(), k.stores.amy.Generation()
	k.log.Info("state restored", "path", path, "threads", stats.threads, "files", stats.files,
		"bytes", db.Size(), "duration", time.Since(start).Round(time.Millisecond))
	return nil
}

type replayStats struct {
	threads, files, bad, unknown, droppedSeries int
	firstErr                                    error
}

// replay reads the log's live records into the stores.
func (k *stateKeeper) replay() (replayStats, error) {
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
			k.stores.labels.ImportAdmitted(admitted)
			k.last[key] = bytes.Clone(v)
		case key == keyStream:
			var s store.StreamState
			if err := json.Unmarshal(v, &s); err != nil {
				fail(key, err)
				return nil
			}
			if s.Version > store.StateVersion {
				newer = fmt.Errorf("%w: stream state version %d, this version reads up to %d", errStateNewer, s.Version, store.StateVersion)
				return nil
			}
			if n := s.KeepKnown(); n > 0 {
				st.unknown++
				st.droppedSeries += n
			}
			if err := k.stores.streams.Import(&s); err != nil {
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
				newer = fmt.Errorf("%w: amy state version %d, this version reads up to %d", errStateNewer, a.Version, store.StateVersion)
				return nil
			}
			if n := a.KeepKnown(); n > 0 {
				st.unknown++
				st.droppedSeries += n
			}
			if err := k.stores.amy.Import(&a); err != nil {
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
			errStateNewer, meta.Version, store.StateVersion, k.dir)
	}
	if newer != nil {
		return st, fmt.Errorf("%w; upgrade amp-exporter, or move %s away to start counting afresh", newer, k.dir)
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
		owners.Seed(store.SourceThreads, k.stores.threads.ThreadKeys())
		owners.Seed(store.SourceServer, serverOwned)
		k.stores.threads.SetClaim(owners, store.SourceThreads)
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

// migrate loads the JSON state files of earlier versions into the stores;
// the first save then writes all of it to the log.
func (k *stateKeeper) migrate() error {
	loads := []func(path string) (bool, error){
		func(path string) (bool, error) { return loadLegacy(path, k.stores.threads.Import) },
		func(path string) (bool, error) { return loadLegacy(path, k.stores.streams.Import) },
		func(path string) (bool, error) { return loadLegacy(path, k.stores.amy.Import) },
	}
	any := false
	for i, name := range legacyStateFiles {
		path := filepath.Join(k.dir, name)
		found, err := loads[i](path)
		switch {
		case errors.Is(err, errStateNewer):
			return err
		case errors.Is(err, statefile.ErrDamaged):
			k.metrics.StateFailed("load")
			aside, aerr := statefile.SetAside(path, k.now())
			if aerr != nil {
				return errors.Join(err, aerr)
			}
			k.log.Error("saved state is damaged; it was set aside and counting starts fresh (counters will look reset to Prometheus)",
				"path", path, "set_aside_as", aside, "err", err)
		case err != nil:
			return err
		case found:
			any = true
			k.migrated = append(k.migrated, path)
		}
	}
	if any {
		k.log.Info("migrating the state files of an earlier version into one state log", "files", len(k.migrated))
	} else {
		k.log.Info("no saved state yet, starting fresh", "path", filepath.Join(k.dir, stateLogName))
	}
	// Everything just imported is marked changed in the thread store; the
	// stream and Amy records are written when their generation differs.
	k.streamGen, k.amyGen = k.stores.streams.Generation()+1, k.stores.amy.Generation()+1
	return nil
}

// versioned reads the version field of a legacy state file.
type versioned struct {
	Version int `json:"version"`
}

// loadLegacy decodes a legacy state file of type S and imports it. A file
// of a newer version is refused (errStateNewer); one that does not decode
// or import is damaged.
func loadLegacy[S any](path string, importState func(*S) error) (bool, error) {
	var v versioned
	found, err := statefile.LoadKnown(path, &v)
	if !found || err != nil {
		return found, err
	}
	if v.Version > store.StateVersion {
		return true, fmt.Errorf("%w: %s has version %d, this version reads up to %d; upgrade amp-exporter, or move it away to start counting afresh",
			errStateNewer, path, v.Version, store.StateVersion)
	}
	var st S
	if _, err := statefile.LoadKnown(path, &st); err != nil {
		return true, err
	}
	if err := importState(&st); err != nil {
		return true, errors.Join(statefile.ErrDamaged, err)
	}
	return true, nil
}

// save appends what changed since the last save, as one commit. The
// records go in the order a crash in the middle of the commit must find
// them: the admitted labels (exported after the thread delta, so they hold
// every value it uses), then threads, then files (a file's version never
// reaches the disk before what it added), then the stream and Amy records,
// and the meta record last in the first commit (its presence says the
// first commit is whole). Thread records are encoded one at a time as the
// commit is written, so a save holds about one batch in memory.
func (k *stateKeeper) save() error {
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
	labels, err := json.Marshal(k.stores.labels.ExportAdmitted())
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
	if g := k.stores.streams.Generation(); g != k.streamGen {
		b, err := json.Marshal(k.stores.streams.Export())
		if err != nil {
			requeue()
			return fmt.Errorf("encode stream state: %w", err)
		}
		tail = append(tail, whole{keyStream, b, g})
	}
	if g := k.stores.amy.Generation(); g != k.amyGen {
		b, err := json.Marshal(k.stores.amy.Export())
		if err != nil {
			requeue()
			return fmt.Errorf("encode Amy state: %w", err)
		}
		tail = append(tail, whole{keyAmy, b, g})
	}
	if !k.haveMeta {
		b, _ := json.Marshal(stateMeta{Version: store.StateVersion})
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
			for p, f := range deltas[i].Files {
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
	k.finishMigration()
	if k.db.NeedsCompaction() {
		n, err := k.db.Compact()
		if err != nil {
			k.metrics.StateFailed("save")
			k.log.Error("cannot compact the state log; it keeps growing until this succeeds", "err", err)
		} else {
			k.written += n
			k.compactions++
		}
	}
	return nil
}

// finishMigration renames the legacy files once their content is in the
// log, so an older version started by mistake does not resume from stale
// totals (rename them back to go back to the version they came from).
func (k *stateKeeper) finishMigration() {
	for _, p := range k.migrated {
		if err := os.Rename(p, p+".migrated"); err != nil {
			k.log.Warn("cannot rename a migrated state file", "path", p, "err", err)
		}
	}
	k.migrated = nil
}

func (k *stateKeeper) run(ctx context.Context) error {
	interval := k.interval
	if interval <= 0 {
		interval = stateSaveInterval
	}
	t := time.NewTicker(interval)
	defer t.Stop()
	defer close(k.stopped)
	for {
		select {
		case done := <-k.flushes:
			err := k.save()
			if err != nil {
				k.log.Error("cannot save state", "dir", k.dir, "err", err)
			}
			done <- err
		case <-ctx.Done():
			if err := k.save(); err != nil {
				k.log.Error("cannot save state at shutdown", "dir", k.dir, "err", err)
			}
			if err := k.close(); err != nil {
				k.log.Error("cannot close the state log", "dir", k.dir, "err", err)
			}
			return nil
		case <-t.C:
			if err := k.save(); err != nil {
				k.log.Error("cannot save state", "dir", k.dir, "err", err)
			}
		}
	}
}

// Flush saves now what changed, and returns when it is on disk. It is
// what lets an acknowledgement mean "saved": see durableIngest.
func (k *stateKeeper) Flush(ctx context.Context) error {
	done := make(chan error, 1)
	select {
	case k.flushes <- done:
	case <-k.stopped:
		return errKeeperStopped
	case <-ctx.Done():
		return ctx.Err()
	}
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

var errKeeperStopped = errors.New("the state keeper has stopped")

// durableIngest answers an ingest request 200 only once what it counted is
// saved, so that a client that got a success never has to send the lines
// again (which would count them twice) and a crash after the answer loses
// nothing. The answer is held back (it is small) until the save is done.
// When the save fails (a full disk, or the keeper already stopped), the
// answer is 503 and says so: the lines are counted in memory and are
// saved with the next save that succeeds, so they must not be sent again.
func durableIngest(next http.Handler, k flusher, log *slog.Logger) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec := &heldResponse{header: http.Header{}}
		next.ServeHTTP(rec, r)
		if rec.status == 0 {
			rec.status = http.StatusOK
		}
		if rec.status < 300 {
			if err := k.Flush(r.Context()); err != nil {
				log.Error("ingested lines are counted but not yet saved", "err", err)
				unsaved(rec, err)
			}
		}
		for name, v := range rec.header {
			w.Header()[name] = v
		}
		w.WriteHeader(rec.status)
		_, _ = w.Write(rec.body.Bytes())
	})
}

// flusher saves what changed and returns once it is on disk (the state
// keeper).
type flusher interface {
	Flush(ctx context.Context) error
}

// unsaved turns a held success into 503, keeping the ingest result (what
// was counted) and saying what happened (the error itself, which may name
// the storage path, is only logged).
func unsaved(rec *heldResponse, err error) {
	var res streams.IngestResult
	_ = json.Unmarshal(rec.body.Bytes(), &res) // the handler's own JSON; zero counts otherwise
	msg := "the lines were counted but could not be saved (the exporter's log says why)"
	if errors.Is(err, errKeeperStopped) {
		msg = "the lines were counted, but the exporter is shutting down and its final save has already run"
	}
	res.Error = msg + "; they are saved with the next save that succeeds: do not send them again"
	b, _ := json.Marshal(res)
	rec.status = http.StatusServiceUnavailable
	rec.header.Set("Content-Type", "application/json")
	rec.body.Reset()
	rec.body.Write(b)
	rec.body.WriteByte('\n')
}

// heldResponse keeps a handler's answer until it may be sent.
type heldResponse struct {
	header http.Header
	status int
	body   bytes.Buffer
}

func (h *heldResponse) Header() http.Header { return h.header }

func (h *heldResponse) WriteHeader(status int) {
	if h.status == 0 {
		h.status = status
	}
}

func (h *heldResponse) Write(b []byte) (int, error) {
	if h.status == 0 {
		h.status = http.StatusOK
	}
	return h.body.Write(b)
}

// close closes the state log and gives the directory back. It may be
// called more than once.
func (k *stateKeeper) close() error {
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
