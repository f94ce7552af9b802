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
	"time"
)

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
