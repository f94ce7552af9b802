package statelog

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
)

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
