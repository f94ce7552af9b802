package statelog

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
)

// NeedsCompaction reports whether superseded records take more room than
// live ones (and more than a floor).
func (l *Log) NeedsCompaction() bool {
	garbage := l.size - headerSize - l.live
	return garbage > compactFloor && garbage > l.live
}

// Compact rewrites the live records to a new file that replaces the log,
// and returns the bytes written. A crash during it leaves the old log and
// a temporary file that the next Open removes.
func (l *Log) Compact() (int64, error) {
	tmp, err := os.CreateTemp(filepath.Dir(l.path), filepath.Base(l.path)+".tmp-*")
	if err != nil {
		return 0, fmt.Errorf("create compacted state log: %w", err)
	}
	defer os.Remove(tmp.Name()) // no-op after the rename
	w := bufio.NewWriterSize(tmp, 1<<16)
	if _, err := w.Write(header()); err != nil {
		tmp.Close()
		return 0, fmt.Errorf("write compacted state log: %w", err)
	}
	// Live records in file order, copied as they are encoded.
	keys := make([]string, 0, len(l.index))
	for k := range l.index {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return l.index[keys[i]].off < l.index[keys[j]].off })
	index := make(map[string]entry, len(keys))
	off := int64(headerSize)
	batch := make([]byte, batchHead, batchHead+maxBatch)
	var rec []byte
	var live int64
	flush := func() error {
		if len(batch) == batchHead {
			return nil
		}
		putHead(batch[:batchHead], batch[batchHead:])
		if _, err := w.Write(batch); err != nil {
			return err
		}
		off += int64(len(batch))
		batch = batch[:batchHead]
		return nil
	}
	for _, k := range keys {
		e := l.index[k]
		if int64(cap(rec)) < e.n {
			rec = make([]byte, e.n)
		}
		rec = rec[:e.n]
		if _, err := l.f.ReadAt(rec, e.off); err != nil {
			tmp.Close()
			return 0, fmt.Errorf("read state log: %w", err)
		}
		if len(batch) > batchHead && len(batch)+len(rec) > batchHead+maxBatch {
			if err := flush(); err != nil {
				tmp.Close()
				return 0, fmt.Errorf("write compacted state log: %w", err)
			}
		}
		index[k] = entry{off: off + int64(len(batch)), n: int64(len(rec))}
		live += int64(len(rec))
		batch = append(batch, rec...)
	}
	if err := errors.Join(flush(), w.Flush()); err != nil {
		tmp.Close()
		return 0, fmt.Errorf("write compacted state log: %w", err)
	}
	if err := fsync(tmp); err != nil {
		tmp.Close()
		return 0, fmt.Errorf("sync compacted state log: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return 0, fmt.Errorf("close compacted state log: %w", err)
	}
	// Close before the rename: Windows does not replace an open file.
	if err := l.f.Close(); err != nil {
		return 0, fmt.Errorf("close state log: %w", err)
	}
	renameErr := os.Rename(tmp.Name(), l.path)
	f, err := os.OpenFile(l.path, os.O_RDWR, 0)
	if err != nil {
		return 0, errors.Join(renameErr, fmt.Errorf("reopen state log: %w", err))
	}
	l.f = f
	if renameErr != nil {
		return 0, fmt.Errorf("replace state log: %w", renameErr)
	}
	syncDir(filepath.Dir(l.path))
	l.index, l.size, l.live = index, off, live
	return off, nil
}
