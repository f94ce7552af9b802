// Package statelog keeps the exporter's counting state as an append-only
// log of keyed records, so that a save writes what changed and nothing
// else.
//
// A log file starts with a 16-byte header (magic, format version) and is
// followed by batches. A batch (format 2) is a 16-byte head — a marker,
// the payload's length, the payload's CRC-32C and a CRC-32C of the head's
// first twelve bytes — then the payload: records of a key and a value (or
// a deletion), each followed by its own CRC-32C. The last record of a key
// wins.
//
// Damage is contained. A batch whose payload does not check is read
// record by record, and every record whose own checksum holds is kept;
// after one that does not, the next is found by its checksum, not by the
// lengths that may be what was hit. A damaged head is found past by
// looking for the next marker whose head checks. So a flipped bit costs
// the record it lands in, whichever of its fields, never what follows. Damage
// that nothing intact follows is a write a crash interrupted (a torn
// tail): Open cuts it off, so the log reads as the state after some whole
// number of batches. Damage before intact batches is reported (Recovery,
// CorruptionError with the offset), a copy of the file is set aside before
// anything is changed, and the log is rewritten without the damage.
//
// Format 2 is the only one: no release wrote another. A file whose
// header names an older format is not a state log this version reads (it
// is set aside as one that is not a log at all).
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
	"strings"
	"time"
)

// FormatVersion is the layout of the log this package writes and the
// highest it reads.
const FormatVersion = 2

const (
	magic      = "AMPSTLOG"
	headerSize = 16
	// batchHead is the size of a batch's head.
	batchHead = 16
	// crcSize is a record's trailing checksum.
	crcSize = 4
	// maxBatch bounds one batch's payload when writing: a large commit is
	// never built whole in memory, and a batch whose head is lost costs at
	// most this much. maxRead bounds what a reader accepts.
	maxBatch = 64 << 10
	maxRead  = 256 << 20
	// Compaction starts when superseded bytes exceed both the live ones
	// and this floor.
	compactFloor = 1 << 20
)

// batchMarker starts every batch head, so a reader can find the next
// batch after damage.
var batchMarker = [4]byte{0xA7, 'B', 'A', 'T'}

var crcTable = crc32.MakeTable(crc32.Castagnoli)

// ErrNewer is returned by Open for a log written by a newer version of the
// exporter, in a layout this one does not know. The file is left alone.
var ErrNewer = errors.New("state was written by a newer amp-exporter")

// CorruptionError is damage found in a log: the file, the offset of the
// first damaged byte run, and what was wrong there.
type CorruptionError struct {
	Path   string
	Offset int64
	Err    error
}

func (e *CorruptionError) Error() string {
	return fmt.Sprintf("state log %q damaged at offset %d: %v", e.Path, e.Offset, e.Err)
}

func (e *CorruptionError) Unwrap() error { return e.Err }

// Damage is one damaged stretch of a log, before intact batches.
type Damage struct {
	Offset int64 // first byte of the damaged batch (or of unreadable bytes)
	Length int64 // up to the next intact batch
	// Kept are records of the stretch whose own checksum held and that
	// were kept. Lost counts the runs of records that were not: a damaged
	// record (with any damaged ones right after it), or unreadable bytes
	// between batches.
	Kept, Lost int
	Err        error
}

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
	// Damage lists damaged stretches followed by intact batches: not torn
	// writes. The intact records around them are kept.
	Damage []Damage
	// SetAside names a copy of the whole file as it was found, kept
	// because it was damaged (Damage) or not a state log at all (Damaged).
	SetAside string
	// Damaged is set when the file was not a state log at all; it was set
	// aside (SetAside) and the log starts empty.
	Damaged error
	// TempRemoved counts temporary files of an interrupted compaction that
	// were removed.
	TempRemoved int
}

// Err is the first damage as a CorruptionError (nil when there was none).
func (r Recovery) Err(path string) error {
	if len(r.Damage) == 0 {
		return nil
	}
	return &CorruptionError{Path: path, Offset: r.Damage[0].Offset, Err: r.Damage[0].Err}
}

// LostRecords counts the records (or unreadable runs) damage cost.
func (r Recovery) LostRecords() int {
	n := 0
	for _, d := range r.Damage {
		n += d.Lost
	}
	return n
}

// Open opens the log at path, creating it when there is none, cuts off a
// torn last batch, and repairs damage before it (see the package comment).
func Open(path string, now time.Time) (*Log, Recovery, error) {
	var rec Recovery
	n, err := cleanTemp(path)
	rec.TempRemoved = n
	if err != nil {
		return nil, rec, err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, rec, fmt.Errorf("create state directory: %w", err)
	}
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if errors.Is(err, fs.ErrNotExist) {
		if err := writeFile(path); err != nil {
			return nil, rec, err
		}
		f, err = os.OpenFile(path, os.O_RDWR, 0)
	}
	if err != nil {
		return nil, rec, fmt.Errorf("open state log: %w", err)
	}
	l := &Log{path: path, f: f, index: map[string]entry{}}
	good, size, damage, herr := l.scan()
	switch {
	case errors.Is(herr, ErrNewer):
		f.Close()
		return nil, rec, herr
	case herr != nil:
		// Not a state log: keep it for inspection and start empty.
		f.Close()
		aside, err := setAside(path, now)
		if err != nil {
			return nil, rec, errors.Join(herr, err)
		}
		rec.SetAside, rec.Damaged = aside, herr
		if err := writeFile(path); err != nil {
			return nil, rec, err
		}
		if l.f, err = os.OpenFile(path, os.O_RDWR, 0); err != nil {
			return nil, rec, fmt.Errorf("open state log: %w", err)
		}
		l.index, l.live, good, size, damage = map[string]entry{}, 0, headerSize, headerSize, nil
	}
	rec.Damage = damage
	if len(damage) > 0 {
		// Damage before intact data: kept as found, before anything is cut.
		aside, err := copyAside(path, now)
		if err != nil {
			l.f.Close()
			return nil, rec, err
		}
		rec.SetAside = aside
	}
	if good < size {
		rec.TornBytes = size - good // after damage too: nothing intact follows it
	}
	if good < size {
		if err := l.f.Truncate(good); err != nil {
			l.f.Close()
			return nil, rec, fmt.Errorf("cut off the damaged end of the state log: %w", err)
		}
		if err := fsync(l.f); err != nil {
			l.f.Close()
			return nil, rec, fmt.Errorf("sync state log: %w", err)
		}
	}
	l.size = good
	if len(damage) > 0 {
		// Rewrite the live records: the damage is gone.
		if _, err := l.Compact(); err != nil {
			l.f.Close()
			return nil, rec, fmt.Errorf("rewrite the state log: %w", err)
		}
	}
	return l, rec, nil
}

// scan reads the whole file, building the index. It returns the offset
// after the last intact batch, the file's size and the damage found before
// intact batches; an error means the file is not a state log this version
// can read.
func (l *Log) scan() (good, size int64, damage []Damage, err error) {
	st, err := l.f.Stat()
	if err != nil {
		return 0, 0, nil, fmt.Errorf("stat state log: %w", err)
	}
	size = st.Size()
	var h [headerSize]byte
	if _, err := l.f.ReadAt(h[:], 0); err != nil {
		if size == 0 {
			// Created but the header never made it: a crash at creation.
			return headerSize, headerSize, nil, l.writeHeaderAt()
		}
		return 0, size, nil, fmt.Errorf("state log %q: header: %w", l.path, err)
	}
	v := binary.LittleEndian.Uint32(h[8:12])
	if string(h[:8]) != magic || v < FormatVersion {
		// A damaged header in front of batches still costs only itself:
		// an intact batch head after it says the file is a state log.
		fit, _, err := l.nextHead(headerSize, size)
		if err != nil {
			return 0, size, nil, err
		}
		if fit < 0 {
			if string(h[:8]) != magic {
				return 0, size, nil, fmt.Errorf("state log %q: not a state log", l.path)
			}
			return 0, size, nil, fmt.Errorf("state log %q: format %d", l.path, v)
		}
		v = FormatVersion
		damage = []Damage{{Offset: 0, Length: headerSize, Err: errors.New("file header does not check")}}
	}
	if v > FormatVersion {
		return 0, size, nil, fmt.Errorf("%w: %q has format %d, this version reads up to %d; upgrade amp-exporter or move the file away to start counting afresh",
			ErrNewer, l.path, v, FormatVersion)
	}
	good, d := l.scanBatches(size)
	return good, size, append(damage, d...), nil
}

// scanBatches reads intact batches in order; at a batch that does not
// check, the next intact head is looked for, and what lies between is read
// record by record. Damage that no intact batch follows is the torn tail.
func (l *Log) scanBatches(size int64) (good int64, damage []Damage) {
	r := bufio.NewReaderSize(io.NewSectionReader(l.f, headerSize, size-headerSize), 1<<16)
	off := int64(headerSize)
	good = off
	for off < size {
		payload, n, ok := l.readBatch(r, size-off)
		// A batch whose checksum holds but whose records do not parse
		// (not a flipped bit) is damage like any other.
		if ok && l.applyPayload(payload, off+batchHead) == nil {
			off += batchHead + n
			good = off
			continue
		}
		next, torn, err := l.nextHead(off+1, size)
		if err == nil && next < 0 && torn >= 0 {
			// Only a batch a crash cut short follows: the damage before
			// it is damage all the same, and that batch the torn tail.
			next = torn
		}
		if err != nil || next < 0 {
			// Nothing intact after it: the tail a crash left.
			return good, damage
		}
		damage = append(damage, l.salvage(off, next))
		off, good = next, next
		r.Reset(io.NewSectionReader(l.f, off, size-off))
	}
	return good, damage
}

// readBatch reads one batch head and payload and checks them; ok is false
// for a torn or damaged one. n is the payload's length.
func (l *Log) readBatch(r io.Reader, left int64) (payload []byte, n int64, ok bool) {
	var h [batchHead]byte
	if left < batchHead {
		return nil, 0, false
	}
	if _, err := io.ReadFull(r, h[:]); err != nil {
		return nil, 0, false
	}
	n, ok = checkHead(h[:])
	if !ok || n > left-batchHead {
		return nil, 0, false
	}
	payload = l.grow(n)
	if _, err := io.ReadFull(r, payload); err != nil {
		return nil, 0, false
	}
	if crc32.Checksum(payload, crcTable) != binary.LittleEndian.Uint32(h[8:12]) {
		return nil, 0, false
	}
	return payload, n, true
}

func (l *Log) grow(n int64) []byte {
	if int64(cap(l.buf)) < n {
		l.buf = make([]byte, n)
	}
	return l.buf[:n]
}

// checkHead checks a batch head and returns its payload length.
func checkHead(h []byte) (int64, bool) {
	if !bytes.Equal(h[:4], batchMarker[:]) || crc32.Checksum(h[:12], crcTable) != binary.LittleEndian.Uint32(h[12:16]) {
		return 0, false
	}
	n := int64(binary.LittleEndian.Uint32(h[4:8]))
	return n, n > 0 && n <= maxRead
}

// nextHead finds the first offset at or after from where an intact batch
// head starts whose payload fits in the file (fit), and the first where
// one starts whose payload runs past the end (torn: a batch a crash cut
// short); -1 when there is none.
func (l *Log) nextHead(from, size int64) (fit, torn int64, err error) {
	torn = -1
	buf := make([]byte, 1<<16)
	for base := from; base+batchHead <= size; {
		n, err := l.f.ReadAt(buf[:min(int64(len(buf)), size-base)], base)
		if n < batchHead {
			if err != nil && !errors.Is(err, io.EOF) {
				return -1, -1, fmt.Errorf("read state log: %w", err)
			}
			return -1, torn, nil
		}
		b := buf[:n]
		for i := 0; ; i++ {
			j := bytes.Index(b[i:], batchMarker[:])
			if j < 0 || i+j+batchHead > len(b) {
				break
			}
			i += j
			if plen, ok := checkHead(b[i : i+batchHead]); ok {
				if base+int64(i)+batchHead+plen <= size {
					return base + int64(i), torn, nil
				}
				if torn < 0 {
					torn = base + int64(i)
				}
			}
		}
		// The next chunk overlaps this one by a head less a byte, so a
		// head across the boundary is seen whole.
		base += int64(len(b) - batchHead + 1)
	}
	return -1, torn, nil
}

// salvage reads the damaged stretch [off, next) for what can be kept: the
// whole payload when only the head was hit (the payload's checksum still
// holds over the bytes up to the next batch), else every record, walked
// from the payload's start, whose own checksum holds (nextRecord finds
// the record after one that does not).
func (l *Log) salvage(off, next int64) Damage {
	d := Damage{Offset: off, Length: next - off}
	if next-off <= batchHead {
		d.Lost, d.Err = 1, errors.New("unreadable bytes between batches")
		return d
	}
	b := make([]byte, next-off)
	if _, err := l.f.ReadAt(b, off); err != nil {
		d.Lost, d.Err = 1, fmt.Errorf("read: %w", err)
		return d
	}
	payload := b[batchHead:]
	hn, headOK := checkHead(b[:batchHead])
	junk := false
	if headOK && hn < int64(len(payload)) {
		payload, junk = payload[:hn], true
	}
	if crc32.Checksum(payload, crcTable) == binary.LittleEndian.Uint32(b[8:12]) && l.applyPayload(payload, off+batchHead) == nil {
		d.Kept = countRecords(payload)
		if junk {
			d.Lost, d.Err = 1, errors.New("unreadable bytes after a batch")
		} else {
			d.Err = errors.New("batch head does not check")
		}
		return d
	}
	if headOK {
		d.Err = errors.New("batch payload does not check")
	} else {
		d.Err = errors.New("batch head and payload do not check")
	}
	if junk {
		d.Lost++
	}
	roff := off + batchHead
	inRun := false // after a record that did not check
	for p := payload; len(p) > 0; {
		key, val, n, ok := decodeRecord(p, true)
		if !ok && !inRun && len(p) > batchHead {
			// Where the last record that checked ends, the head of a
			// batch whose own head was damaged too (the search for an
			// intact one went past it): its records follow.
			if _, _, _, next := decodeRecord(p[batchHead:], true); next {
				roff += batchHead
				p = p[batchHead:]
				continue
			}
		}
		if !ok {
			// Its lengths may be what was hit, so they do not say where
			// the next record starts: its checksum does.
			d.Lost++
			inRun = true
			if n = nextRecord(p); n < 0 {
				break
			}
		} else {
			inRun = false
			l.put(key, val != nil, entry{off: roff, n: int64(n)})
			d.Kept++
		}
		roff += int64(n)
		p = p[n:]
	}
	return d
}

// nextRecord returns where, after the damaged record that starts p, the
// next record whose checksum holds starts (-1 when none does). The bytes
// are tried one at a time: what a damaged record costs is then that
// record, whichever of its fields was hit, and not what a walk guided by
// damaged lengths would happen to skip. A false start would need a
// checksum to hold by chance (2^-32 a try).
func nextRecord(p []byte) int {
	for i := 1; i < len(p); i++ {
		if _, _, _, ok := decodeRecord(p[i:], true); ok {
			return i
		}
	}
	return -1
}

func crcOK(p []byte, n int) bool {
	return n >= crcSize && n <= len(p) && crc32.Checksum(p[:n-crcSize], crcTable) == binary.LittleEndian.Uint32(p[n-crcSize:n])
}

func countRecords(p []byte) int {
	n := 0
	for len(p) > 0 {
		_, _, k, ok := decodeRecord(p, false)
		if !ok {
			break
		}
		p = p[k:]
		n++
	}
	return n
}

// applyPayload indexes the records of a checked batch whose payload starts
// at off.
func (l *Log) applyPayload(payload []byte, off int64) error {
	type rec struct {
		key     string
		present bool
		e       entry
	}
	var recs []rec
	for p := payload; len(p) > 0; {
		key, val, n, ok := decodeRecord(p, false)
		if !ok {
			return errors.New("records do not parse")
		}
		recs = append(recs, rec{key, val != nil, entry{off: off, n: int64(n)}})
		off += int64(n)
		p = p[n:]
	}
	for _, r := range recs {
		l.put(r.key, r.present, r.e)
	}
	return nil
}

func (l *Log) writeHeaderAt() error {
	if _, err := l.f.WriteAt(header(), 0); err != nil {
		return fmt.Errorf("write state log header: %w", err)
	}
	return fsync(l.f)
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

// Size is the file's size in bytes.
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
		payload, n, ok := l.readBatch(r, l.size-off)
		if !ok {
			return fmt.Errorf("state log %q changed while it was read", l.path)
		}
		roff := off + batchHead
		for p := payload; len(p) > 0; {
			key, val, k, _ := decodeRecord(p, false)
			if e, ok := l.index[key]; ok && e.off == roff && val != nil {
				if err := fn(key, val); err != nil {
					return err
				}
			}
			roff += int64(k)
			p = p[k:]
		}
		off += batchHead + n
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

// putHead fills in a batch head for payload.
func putHead(h []byte, payload []byte) {
	copy(h[:4], batchMarker[:])
	binary.LittleEndian.PutUint32(h[4:8], uint32(len(payload)))
	binary.LittleEndian.PutUint32(h[8:12], crc32.Checksum(payload, crcTable))
	binary.LittleEndian.PutUint32(h[12:16], crc32.Checksum(h[:12], crcTable))
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

// Lookup reads the value of one key from the log at path without changing
// the file (another process may be writing it): what does not read as
// whole batches (a torn or damaged end) is left out, as Open would cut it.
// ok is false when the key has no value.
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
	if st.Size() == 0 {
		return nil, false, nil // created, its header not written yet
	}
	l := &Log{path: path, f: f, index: map[string]entry{}}
	if _, _, _, err := l.scan(); err != nil {
		return nil, false, err
	}
	e, found := l.index[key]
	if !found {
		return nil, false, nil
	}
	b := make([]byte, e.n)
	if _, err := f.ReadAt(b, e.off); err != nil {
		return nil, false, fmt.Errorf("read state log %q: %w", path, err)
	}
	_, val, _, found := decodeRecord(b, false)
	if !found || val == nil {
		return nil, false, fmt.Errorf("state log %q changed while it was read", path)
	}
	return bytes.Clone(val), true, nil
}

// Close closes the file.
func (l *Log) Close() error { return l.f.Close() }

func header() []byte {
	h := make([]byte, headerSize)
	copy(h, magic)
	binary.LittleEndian.PutUint32(h[8:12], FormatVersion)
	return h
}

// writeFile creates path atomically with a header.
func writeFile(path string) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), filepath.Base(path)+".tmp-*")
	if err != nil {
		return fmt.Errorf("create state log: %w", err)
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(header()); err != nil {
		tmp.Close()
		return fmt.Errorf("write state log: %w", err)
	}
	if err := fsync(tmp); err != nil {
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

// fsync syncs a file to its storage, and syncDir a directory (best
// effort: not every file system syncs directories). They are variables so
// that the fuzz target, which opens thousands of logs a second, can do
// without them (it tests what is read, not what survives a power cut), and
// a test can see their order.
var (
	fsync   = (*os.File).Sync
	syncDir = func(dir string) {
		if d, err := os.Open(dir); err == nil {
			_ = d.Sync()
			d.Close()
		}
	}
)

func copyAside(path string, now time.Time) (string, error) {
	dst, err := asideName(path, now)
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
	_, err = io.Copy(out, src)
	if err == nil {
		err = fsync(out)
	}
	if err = errors.Join(err, out.Close()); err != nil {
		os.Remove(dst) // no half copy left behind (the next start copies again)
		return "", fmt.Errorf("copy damaged state log: %w", err)
	}
	// The copy's name must be on disk before the log is cut or replaced.
	syncDir(filepath.Dir(dst))
	return dst, nil
}

func recordSize(key string, value []byte) int {
	n := uvarintLen(uint64(len(key))) + len(key) + crcSize
	if value == nil {
		return n + 1
	}
	return n + uvarintLen(uint64(len(value))+1) + len(value)
}

func uvarintLen(x uint64) int {
	n := 1
	for x >= 0x80 {
		x >>= 7
		n++
	}
	return n
}

// encodeRecord appends a record: uvarint key length, key, uvarint value
// length + 1 (0 for a deletion), value, and the CRC-32C of all of it.
func encodeRecord(dst []byte, r Record) []byte {
	start := len(dst)
	dst = binary.AppendUvarint(dst, uint64(len(r.Key)))
	dst = append(dst, r.Key...)
	if r.Value == nil {
		dst = binary.AppendUvarint(dst, 0)
	} else {
		dst = binary.AppendUvarint(dst, uint64(len(r.Value))+1)
		dst = append(dst, r.Value...)
	}
	return binary.LittleEndian.AppendUint32(dst, crc32.Checksum(dst[start:], crcTable))
}

// decodeRecord reads one record (with its checksum, checked when check is
// set); val is nil for a deletion (and non-nil, possibly empty, otherwise).
// n is the record's length whenever its lengths fit in p, even when ok is
// false because the checksum does not hold; n is 0 when they do not.
func decodeRecord(p []byte, check bool) (key string, val []byte, n int, ok bool) {
	kl, a := binary.Uvarint(p)
	if a <= 0 || kl > uint64(len(p)-a) {
		return "", nil, 0, false
	}
	k := p[a : a+int(kl)]
	n = a + int(kl)
	vl, b := binary.Uvarint(p[n:])
	if b <= 0 {
		return "", nil, 0, false
	}
	n += b
	if vl > 0 {
		if vl-1 > uint64(len(p)-n) {
			return "", nil, 0, false
		}
		val = p[n : n+int(vl-1) : n+int(vl-1)] // non-nil, possibly empty
		n += int(vl - 1)
	}
	if len(p)-n < crcSize {
		return "", nil, 0, false
	}
	n += crcSize
	if check && !crcOK(p, n) {
		return "", nil, n, false
	}
	return string(k), val, n, true
}

// setAside renames a file that is not a state log out of the way, keeping
// it for inspection, and returns its new name. Two calls within the same
// second never overwrite each other's copy.
func setAside(path string, now time.Time) (string, error) {
	dst, err := asideName(path, now)
	if err != nil {
		return "", err
	}
	if err := os.Rename(path, dst); err != nil {
		return "", fmt.Errorf("set aside damaged state file: %w", err)
	}
	return dst, nil
}

// asideName returns a name for a set-aside copy of path that no file has
// yet: path.damaged-<UTC time>, with -2, -3, … appended when that exists.
func asideName(path string, now time.Time) (string, error) {
	base := fmt.Sprintf("%s.damaged-%s", path, now.UTC().Format("20060102T150405Z"))
	for i := 1; i < 10000; i++ {
		dst := base
		if i > 1 {
			dst = fmt.Sprintf("%s-%d", base, i)
		}
		if _, err := os.Lstat(dst); errors.Is(err, fs.ErrNotExist) {
			return dst, nil
		} else if err != nil {
			return "", fmt.Errorf("set aside damaged state file: %w", err)
		}
	}
	return "", fmt.Errorf("set aside damaged state file: too many copies of %q", path)
}

// cleanTemp removes the temporary files (path.tmp-*) a crash in the middle
// of a compaction or a creation left behind, and returns how many it
// removed.
func cleanTemp(path string) (int, error) {
	entries, err := os.ReadDir(filepath.Dir(path))
	if errors.Is(err, fs.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("look for temporary state files: %w", err)
	}
	prefix := filepath.Base(path) + ".tmp-"
	n := 0
	for _, e := range entries {
		if e.IsDir() || !strings.HasPrefix(e.Name(), prefix) {
			continue
		}
		if err := os.Remove(filepath.Join(filepath.Dir(path), e.Name())); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return n, fmt.Errorf("remove temporary state file: %w", err)
		}
		n++
	}
	return n, nil
}
