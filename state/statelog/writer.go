package statelog

import (
	"errors"
	"fmt"
)

func (l *Log) put(key string, present bool, e entry) {
	if old, ok := l.index[key]; ok {
		l.live -= old.n
		delete(l.index, key)
	}
	if present {
		l.index[key] = e
		l.live += e.n
	}
}

// Commit appends the records as one or more batches and syncs the file;
// see Tx.
func (l *Log) Commit(recs []Record) (int64, error) {
	tx := l.Begin()
	for _, r := range recs {
		if err := tx.Put(r.Key, r.Value); err != nil {
			return 0, err
		}
	}
	return tx.Commit()
}

// Tx is a commit being written. Records are written in batches as they
// fill (so a large commit is never held in memory), and the file is synced
// once, by Commit. A batch is applied on reading whole or not at all; a
// commit larger than a batch is split between records, in order, so a
// crash may keep a prefix of it: callers put records that must reach the
// disk together next to each other, and those that say another is there
// after it.
type Tx struct {
	l      *Log
	start  int64
	off    int64
	batch  []byte
	placed []placed
	err    error
}

type placed struct {
	key     string
	present bool
	e       entry
}

// Begin starts a commit. Only one can be under way.
func (l *Log) Begin() *Tx {
	return &Tx{l: l, start: l.size, off: l.size}
}

// Put adds a record; a nil value deletes the key. After an error the
// commit is abandoned (nothing of it is kept).
func (t *Tx) Put(key string, value []byte) error {
	if t.err != nil {
		return t.err
	}
	size := recordSize(key, value)
	if len(t.batch) > batchHead && len(t.batch)+size > batchHead+maxBatch {
		if err := t.flush(); err != nil {
			return err
		}
	}
	if t.batch == nil {
		t.batch = make([]byte, batchHead, batchHead+size+4096) // grows up to about maxBatch
	}
	t.placed = append(t.placed, placed{key, value != nil, entry{off: t.off + int64(len(t.batch)), n: int64(size)}})
	t.batch = encodeRecord(t.batch, Record{Key: key, Value: value})
	return nil
}

func (t *Tx) flush() error {
	if len(t.batch) <= batchHead {
		return nil
	}
	putHead(t.batch[:batchHead], t.batch[batchHead:])
	if _, err := t.l.f.WriteAt(t.batch, t.off); err != nil {
		t.fail(fmt.Errorf("append to state log: %w", err))
		return t.err
	}
	t.off += int64(len(t.batch))
	t.batch = t.batch[:batchHead]
	return nil
}

func (t *Tx) fail(err error) {
	t.err = err
	t.l.undo(t.start)
}

// Commit writes what is left, syncs the file, and returns the bytes the
// commit wrote. On error nothing of the commit is kept, and it can be
// retried.
func (t *Tx) Commit() (int64, error) {
	if t.err != nil {
		return 0, t.err
	}
	if err := t.flush(); err != nil {
		return 0, err
	}
	if t.off == t.start {
		return 0, nil
	}
	if err := fsync(t.l.f); err != nil {
		t.fail(fmt.Errorf("sync state log: %w", err))
		return 0, t.err
	}
	for _, p := range t.placed {
		t.l.put(p.key, p.present, p.e)
	}
	t.l.size = t.off
	return t.off - t.start, nil
}

// Abort abandons the commit: what it wrote is cut off.
func (t *Tx) Abort() {
	if t.err == nil && t.off > t.start {
		t.fail(errors.New("commit abandoned"))
	}
	t.err = errors.New("commit abandoned")
}

// undo cuts off a commit that failed half way.
func (l *Log) undo(size int64) {
	_ = l.f.Truncate(size)
}
