package state

import (
	"bytes"
	"encoding/json"
	"fmt"
	"time"

	"github.com/amp-exporter/amp-exporter/store"
)

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
	if ss := k.stores.SeriesStarts; ss != nil {
		if g := ss.Generation(); g != k.startsGen {
			b, err := json.Marshal(ss.Export())
			if err != nil {
				requeue()
				return fmt.Errorf("encode series start times: %w", err)
			}
			tail = append(tail, whole{keyStarts, b, g})
		}
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
		case keyStarts:
			k.startsGen = w.gen
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
