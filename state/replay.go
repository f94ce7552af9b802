package state

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"time"

	"github.com/amp-exporter/amp-exporter/state/statelog"
	"github.com/amp-exporter/amp-exporter/store"
)

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
	if k.stores.SeriesStarts != nil {
		k.startsGen = k.stores.SeriesStarts.Generation()
	}
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
		return k.replayWhole(key, v, &meta, &st, &newer, fail)
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
		owners.Seed(store.SourceAmpServer, serverOwned)
		k.stores.Threads.SetClaim(owners, store.SourceThreads)
	}
	return st, nil
}

// replayWhole reads one of the records that hold a whole store (labels,
// stream, Amy) or the meta record into meta; a record of a newer version
// sets newer, one this version does not know counts as unknown. Callers
// hold the lock st is guarded by.
func (k *Keeper) replayWhole(key string, v []byte, meta *stateMeta, st *replayStats, newer *error, fail func(string, error)) error {
	switch {
	case key == keyMeta:
		if err := json.Unmarshal(v, meta); err != nil {
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
			*newer = fmt.Errorf("%w: stream state version %d, this version reads up to %d", ErrNewer, s.Version, store.StateVersion)
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
			*newer = fmt.Errorf("%w: amy state version %d, this version reads up to %d", ErrNewer, a.Version, store.StateVersion)
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
	case key == keyStarts:
		if k.stores.SeriesStarts == nil {
			k.last[key] = bytes.Clone(v) // kept as it is until the push is configured
			return nil
		}
		var s store.SeriesStartsState
		if err := json.Unmarshal(v, &s); err != nil {
			fail(key, err)
			return nil
		}
		if s.Version > store.StateVersion {
			*newer = fmt.Errorf("%w: series start times version %d, this version reads up to %d", ErrNewer, s.Version, store.StateVersion)
			return nil
		}
		k.stores.SeriesStarts.Import(s)
		k.last[key] = bytes.Clone(v)
	default:
		st.unknown++ // a newer version's record: left in the log
	}
	return nil
}

// redactKey keeps paths and thread ids out of logs: only the record's kind.
func redactKey(key string) string {
	if i := strings.Index(key, ":"); i >= 0 {
		return key[:i+1] + "…"
	}
	return key
}
