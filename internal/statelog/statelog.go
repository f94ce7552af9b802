// Package statelog keeps the exporter's counting state as an append-only
// log of keyed records, so that a save writes what changed and nothing
// else.
//
// A log file starts with a 16-byte header (magic, format version) and is
// followed by batches. A batch is its payload's length and CRC-32C, then
// the payload: records of a key and a value (or a deletion). The last
// record of a key wins. A batch is all or nothing: a crash in the middle
// of a write leaves a torn last batch, which Open cuts off, so the log
// always reads as the state after some whole number of commits.
//
// When more than half of the file is superseded records, Compact rewrites
// the live records to a temporary file and renames it over the log.
package statelog

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"time"

	"github.com/amp-exporter/amp-exporter/internal/statefile"
)

// FormatVersion is the layout of the log this package writes and the
// highest it reads.
const FormatVersion = 1

const (
	magic      = "AMPSTLOG"
	headerSize = 16
	batchHead  = 8
	// maxBatch bounds one batch's payload when writing, so a large commit
	// is never built whole in memory; maxRead bounds what a reader accepts.
	maxBatch = 1 << 20
	maxRead  = 256 << 20
	// Compaction starts when superseded bytes exceed both the live ones
	// and this floor.
	compactFloor = 1 << 20
)

var crcTable = crc32.MakeTable(crc32.Castagnoli)

// ErrNewer is returned by Open for a log written by a newer version of the
// exporter, in a layout this one does not know. The file is left alone.
var ErrNewer = errors.New("state was written by a newer amp-exporter")

// Record is one key's new value; a nil Value deletes the key.
type Record struct {
	Key   string
	Value []byte
}

type entry struct {
	off int64 // of the record's encoding in the file
	n   int64 // its length
}

// Log is an open state log. It is not safe for concurrent use: one
// goroutine (the state keeper) owns it.
type Log struct {
	path  string
	f     *os.File
	size  int64
	live  int64
	index map[string]entry
	buf   []byte
}

// Recovery reports what Open had to repair.
type Recovery struct {
	// TornBytes were cut off the end: a write that a crash interrupted.
	TornBytes int64
	// SetAside names a copy of the whole file, kept because a damaged
	// batch was followed by more data (not a torn write); the log then
	// continues from the last good batch before it.
	SetAside string
	// Damaged is set when the file was not a state log at all; it was set
	// aside (SetAside) and the log starts empty.
	Damaged error
	// TempRemoved counts temporary files of an interrupted compaction that
	// were removed.
	TempRemoved int
}

// Open opens the log at path, creating it when there is none, and cuts
// off a torn last batch.
func Open(path string, now time.Time) (*Log, Recovery, error) {
	var rec Recovery
	n, err := statefile.CleanTemp(path)
	rec.TempRemoved = n
	if err != nil {
		return nil, rec, err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, rec, fmt.Errorf("create state directory: %w", err)
	}
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if errors.Is(err, fs.ErrNotExist) {
		if err := writeFile(path, nil); err != nil {
			return nil, rec, err
		}
		f, err = os.OpenFile(path, os.O_RDWR, 0)
	}
	if err != nil {
		return nil, rec, fmt.Errorf("open state log: %w", err)
	}
	l := &Log{path: path, f: f, index: map[string]entry{}}
	good, size, herr := l.scan()
	switch {
	case errors.Is(herr, ErrNewer):
		f.Close()
		return nil, rec, herr
	case herr != nil:
		// Not a state log: keep it for inspection and start empty.
		f.Close()
		aside, err := statefile.SetAside(path, now)
		if err != nil {
			return nil, rec, errors.Join(herr, err)
		}
		rec.SetAside, rec.Damaged = aside, herr
		if err := writeFile(path, nil); err != nil {
			return nil, rec, err
		}
		if l.f, err = os.OpenFile(path, os.O_RDWR, 0); err != nil {
			return nil, rec, fmt.Errorf("open state log: %w", err)
		}
		l.index, l.live, good, size = map[string]entry{}, 0, headerSize, headerSize
	}
	if good < size {
		if l.tornAt(good, size) {
			rec.TornBytes = size - good
		} else {
			aside, err := copyAside(path, now)
			if err != nil {
				l.f.Close()
				return nil, rec, err
			}
			rec.SetAside = aside
		}
		if err := l.f.Truncate(good); err != nil {
			l.f.Close()
			return nil, rec, fmt.Errorf("cut off the damaged end of the state log: %w", err)
		}
		if err := l.f.Sync(); err != nil {
			l.f.Close()
			return nil, rec, fmt.Errorf("sync state log: %w", err)
		}
	}
	l.size = good
	return l, rec, nil
}

// tornAt reports whether the bad batch at off is the last thing in the
// file, as a write interrupted by a crash leaves it.
func (l *Log) tornAt(off, size int64) bool {
	var h [batchHead]byte
	if size-off < batchHead {
		return true
	}
	if _, err := l.f.ReadAt(h[:], off); err != nil {
		return true
	}
	n := int64(binary.LittleEndian.Uint32(h[:4]))
	return off+batchHead+n >= size
}

// scan reads the whole file, building the index. It returns the offset
// after the last good batch and the file's size; an error means the file
// is not a state log this version can read.
func (l *Log) scan() (good, size int64, err error) {
	st, err := l.f.Stat()
	if err != nil {
		return 0, 0, fmt.Errorf("stat state log: %w", err)
	}
	size = st.Size()
	r := bufio.NewReaderSize(io.NewSectionReader(l.f, 0, size), 1<<16)
	var h [headerSize]byte
	if _, err := io.ReadFull(r, h[:]); err != nil {
		if size == 0 {
			// Created but the header never made it: a crash at creation.
			return headerSize, headerSize, l.writeHeaderAt()
		}
		return 0, size, fmt.Errorf("state log %q: header: %w", l.path, err)
	}
	if string(h[:8]) != magic {
		return 0, size, fmt.Errorf("state log %q: not a state log", l.path)
	}
	if v := binary.LittleEndian.Uint32(h[8:12]); v > FormatVersion {
		return 0, size, fmt.Errorf("%w: %q has format %d, this version reads up to %d; upgrade amp-exporter or move the file away to start counting afresh",
			ErrNewer, l.path, v, FormatVersion)
	}
	good = headerSize
	for good < size {
		payload, ok := l.readBatch(r, size-good)
		if !ok {
			break
		}
		off := good + batchHead
		for p := payload; len(p) > 0; {
			key, val, n, ok := decodeRecord(p)
			if !ok {
				return good, size, nil // CRC passed but the records do not parse: treat as damage
			}
			l.put(key, val != nil, entry{off: off, n: int64(n)})
			off += int64(n)
			p = p[n:]
		}
		good = off
	}
	return good, size, nil
}

func (l *Log) writeHeaderAt() error {
	if _, err := l.f.WriteAt(header(), 0); err != nil {
		return fmt.Errorf("write state log header: %w", err)
	}
	return l.f.Sync()
}

// readBatch reads one batch and checks it; ok is false for a torn or
// damaged one.
func (l *Log) readBatch(r io.Reader, left int64) ([]byte, bool) {
	var h [batchHead]byte
	if left < batchHead {
		return nil, false
	}
	if _, err := io.ReadFull(r, h[:]); err != nil {
		return nil, false
	}
	n := int64(binary.LittleEndian.Uint32(h[:4]))
	if n == 0 || n > maxRead || n > left-batchHead {
		return nil, false
	}
	if int64(cap(l.buf)) < n {
		l.buf = make([]byte, n)
	}
	payload := l.buf[:n]
	if _, err := io.ReadFull(r, payload); err != nil {
		return nil, false
	}
	if crc32.Checksum(payload, crcTable) != binary.LittleEndian.Uint32(h[4:]) {
		return nil, false
	}
	return payload, true
}

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

// Len is the number of live keys.
func (l *Log) Len() int { return len(l.index) }

// Size is the file's size in bytes; Live the bytes of its live records.
func (l *Log) Size() int64 { return l.size }

// Live is the size of the live records' encodings.
func (l *Log) Live() int64 { return l.live }

// Has reports whether key has a value.
func (l *Log) Has(key string) bool { _, ok := l.index[key]; return ok }

// Each calls fn with every live record, in file order. The value is only
// valid during the call.
func (l *Log) Each(fn func(key string, value []byte) error) error {
	r := bufio.NewReaderSize(io.NewSectionReader(l.f, headerSize, l.size-headerSize), 1<<16)
	for off := int64(headerSize); off < l.size; {
		payload, ok := l.readBatch(r, l.size-off)
		if !ok {
			return fmt.Errorf("state log %q changed while it was read", l.path)
		}
		roff := off + batchHead
		for p := payload; len(p) > 0; {
			key, val, n, _ := decodeRecord(p)
			if e, ok := l.index[key]; ok && e.off == roff && val != nil {
				if err := fn(key, val); err != nil {
					return err
				}
			}
			roff += int64(n)
			p = p[n:]
		}
		off = roff
	}
	return nil
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
	enc := encodeRecord(nil, Record{Key: key, Value: value})
	if len(t.batch) > 0 && len(t.batch)+len(enc) > maxBatch {
		if err := t.flush(); err != nil {
			return err
		}
	}
	if t.batch == nil {
		t.batch = make([]byte, batchHead, batchHead+len(enc)+4096) // grows up to about maxBatch
	}
	t.placed = append(t.placed, placed{key, value != nil, entry{off: t.off + int64(len(t.batch)), n: int64(len(enc))}})
	t.batch = append(t.batch, enc...)
	return nil
}

func (t *Tx) flush() error {
	if len(t.batch) <= batchHead {
		return nil
	}
	payload := t.batch[batchHead:]
	binary.LittleEndian.PutUint32(t.batch[:4], uint32(len(payload)))
	binary.LittleEndian.PutUint32(t.batch[4:batchHead], crc32.Checksum(payload, crcTable))
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
	if err := t.l.f.Sync(); err != nil {
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
	var batch []byte
	var rec []byte
	flush := func() error {
		if len(batch) == 0 {
			return nil
		}
		var h [batchHead]byte
		binary.LittleEndian.PutUint32(h[:4], uint32(len(batch)))
		binary.LittleEndian.PutUint32(h[4:], crc32.Checksum(batch, crcTable))
		if _, err := w.Write(h[:]); err != nil {
			return err
		}
		if _, err := w.Write(batch); err != nil {
			return err
		}
		off += batchHead + int64(len(batch))
		batch = batch[:0]
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
		if len(batch) > 0 && len(batch)+len(rec) > maxBatch {
			if err := flush(); err != nil {
				tmp.Close()
				return 0, fmt.Errorf("write compacted state log: %w", err)
			}
		}
		index[k] = entry{off: off + batchHead + int64(len(batch)), n: e.n}
		batch = append(batch, rec...)
	}
	if err := errors.Join(flush(), w.Flush()); err != nil {
		tmp.Close()
		return 0, fmt.Errorf("write compacted state log: %w", err)
	}
	if err := tmp.Sync(); err != nil {
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
	l.index, l.size = index, off
	return off, nil
}

// Lookup reads the value of one key from the log at path without changing
// the file (another process may be writing it): a torn or damaged end is
// read as the end. ok is false when the key has no value.
func Lookup(path, key string) (value []byte, ok bool, err error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, false, fmt.Errorf("open state log: %w", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, false, fmt.Errorf("stat state log: %w", err)
	}
	l := &Log{path: path, f: f}
	size := st.Size()
	r := bufio.NewReaderSize(io.NewSectionReader(f, 0, size), 1<<16)
	var h [headerSize]byte
	if _, err := io.ReadFull(r, h[:]); err != nil || string(h[:8]) != magic {
		return nil, false, fmt.Errorf("state log %q: not a state log", path)
	}
	if v := binary.LittleEndian.Uint32(h[8:12]); v > FormatVersion {
		return nil, false, fmt.Errorf("%w: %q has format %d", ErrNewer, path, v)
	}
	for off := int64(headerSize); off < size; {
		payload, good := l.readBatch(r, size-off)
		if !good {
			break
		}
		for p := payload; len(p) > 0; {
			k, val, n, good := decodeRecord(p)
			if !good {
				return value, ok, nil
			}
			if k == key {
				value, ok = bytes.Clone(val), val != nil
			}
			p = p[n:]
		}
		off += batchHead + int64(len(payload))
	}
	return value, ok, nil
}

// Close closes the file.
func (l *Log) Close() error { return l.f.Close() }

func header() []byte {
	h := make([]byte, headerSize)
	copy(h, magic)
	binary.LittleEndian.PutUint32(h[8:12], FormatVersion)
	return h
}

// writeFile creates path atomically with a header and the records.
func writeFile(path string, recs []Record) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), filepath.Base(path)+".tmp-*")
	if err != nil {
		return fmt.Errorf("create state log: %w", err)
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(header()); err != nil {
		tmp.Close()
		return fmt.Errorf("write state log: %w", err)
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return fmt.Errorf("sync state log: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("close state log: %w", err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("create state log: %w", err)
	}
	syncDir(filepath.Dir(path))
	return nil
}

func syncDir(dir string) {
	if d, err := os.Open(dir); err == nil {
		_ = d.Sync() // best effort: not every file system syncs directories
		d.Close()
	}
}

func copyAside(path string, now time.Time) (string, error) {
	dst, err := statefile.AsideName(path, now)
	if err != nil {
		return "", err
	}
	src, err := os.Open(path)
	if err != nil {
		return "", fmt.Errorf("copy damaged state log: %w", err)
	}
	defer src.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return "", fmt.Errorf("copy damaged state log: %w", err)
	}
	if _, err := io.Copy(out, src); err != nil {
		out.Close()
		return "", fmt.Errorf("copy damaged state log: %w", err)
	}
	if err := out.Close(); err != nil {
		return "", fmt.Errorf("copy damaged state log: %w", err)
	}
	return dst, nil
}

// encodeRecord appends a record: uvarint key length, key, uvarint value
// length + 1 (0 for a deletion), value.
func encodeRecord(dst []byte, r Record) []byte {
	dst = binary.AppendUvarint(dst, uint64(len(r.Key)))
	dst = append(dst, r.Key...)
	if r.Value == nil {
		return binary.AppendUvarint(dst, 0)
	}
	dst = binary.AppendUvarint(dst, uint64(len(r.Value))+1)
	return append(dst, r.Value...)
}

// decodeRecord reads one record; val is nil for a deletion (and non-nil,
// possibly empty, otherwise).
func decodeRecord(p []byte) (key string, val []byte, n int, ok bool) {
	kl, a := binary.Uvarint(p)
	if a <= 0 || kl > uint64(len(p)-a) {
		return "", nil, 0, false
	}
	key = string(p[a : a+int(kl)])
	n = a + int(kl)
	vl, b := binary.Uvarint(p[n:])
	if b <= 0 {
		return "", nil, 0, false
	}
	n += b
	if vl == 0 {
		return key, nil, n, true
	}
	vl--
	if vl > uint64(len(p)-n) {
		return "", nil, 0, false
	}
	val = p[n : n+int(vl) : n+int(vl)]
	return key, val, n + int(vl), true
}
