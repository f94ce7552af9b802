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
	"errors"
	"fmt"
	"os"
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

// Close closes the file.
func (l *Log) Close() error { return l.f.Close() }
