package statelog

import (
	"encoding/binary"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

var now = time.Date(2026, 12, 1, 8, 0, 0, 0, time.UTC)

func open(t *testing.T, path string) (*Log, Recovery) {
	t.Helper()
	l, rec, err := Open(path, now)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return l, rec
}

func contents(t *testing.T, l *Log) map[string]string {
	t.Helper()
	out := map[string]string{}
	if err := l.Each(func(k string, v []byte) error {
		if _, dup := out[k]; dup {
			return fmt.Errorf("key %q twice", k)
		}
		out[k] = string(v)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return out
}

func commit(t *testing.T, l *Log, recs ...Record) int64 {
	t.Helper()
	n, err := l.Commit(recs)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func put(k, v string) Record { return Record{Key: k, Value: []byte(v)} }

func TestCommitReopenLastWriteWins(t *testing.T) {
	path := filepath.Join(t.TempDir(), "s", "state.log")
	l, _ := open(t, path)
	commit(t, l, put("a", "1"), put("b", "2"), put("e", ""))
	commit(t, l, put("a", "3"), Record{Key: "b"}, put("c", "4"))
	want := map[string]string{"a": "3", "c": "4", "e": ""}
	if got := contents(t, l); !maps.Equal(got, want) {
		t.Fatalf("before reopen: %v, want %v", got, want)
	}
	l.Close()
	l2, rec := open(t, path)
	if !reflect.DeepEqual(rec, Recovery{}) {
		t.Errorf("clean log needed recovery: %+v", rec)
	}
	if got := contents(t, l2); !maps.Equal(got, want) {
		t.Fatalf("after reopen: %v, want %v", got, want)
	}
}

// A save writes what it changes: one small record costs bytes of its own
// size, however many records the log holds.
func TestCommitWritesOnlyTheChange(t *testing.T) {
	l, _ := open(t, filepath.Join(t.TempDir(), "state.log"))
	var recs []Record
	for i := range 10000 {
		recs = append(recs, put(fmt.Sprintf("t\x00thread-%05d", i), strings.Repeat("x", 500)))
	}
	commit(t, l, recs...)
	n := commit(t, l, put("t\x00thread-00042", strings.Repeat("y", 500)))
	if n > 600 {
		t.Fatalf("one 500-byte record wrote %d bytes", n)
	}
}

// Every prefix of a commit's bytes — what a crash can leave — reads as the
// state before that commit.
func TestTornCommitReadsAsBefore(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "state.log")
	l, _ := open(t, path)
	commit(t, l, put("a", "1"), put("b", "2"))
	before := l.Size()
	commit(t, l, put("a", "changed"), Record{Key: "b"}, put("c", "new"))
	full, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	l.Close()
	for cut := before + 1; cut < int64(len(full)); cut++ {
		p := filepath.Join(dir, fmt.Sprintf("cut-%d.log", cut))
		if err := os.WriteFile(p, full[:cut], 0o644); err != nil {
			t.Fatal(err)
		}
		lc, rec := open(t, p)
		if got, want := contents(t, lc), map[string]string{"a": "1", "b": "2"}; !maps.Equal(got, want) {
			t.Fatalf("cut at %d: %v, want %v", cut, got, want)
		}
		if rec.TornBytes != cut-before || rec.SetAside != "" {
			t.Fatalf("cut at %d: recovery %+v", cut, rec)
		}
		// The log goes on from the cut.
		commit(t, lc, put("d", "after"))
		lc.Close()
		lc2, _ := open(t, p)
		if got := contents(t, lc2); got["d"] != "after" || got["a"] != "1" {
			t.Fatalf("cut at %d, after a new commit: %v", cut, got)
		}
	}
}

// Damage that is not at the end (a flipped byte) keeps a copy of the file,
// costs the record it hit, and the batches after it are read.
func TestDamageInTheMiddleIsSetAside(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "state.log")
	l, _ := open(t, path)
	commit(t, l, put("a", "1"))
	mid := l.Size()
	commit(t, l, put("b", "2"))
	commit(t, l, put("c", "3"))
	l.Close()
	b, _ := os.ReadFile(path)
	b[mid+batchHead+1] ^= 0xff
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	l2, rec := open(t, path)
	if rec.SetAside == "" {
		t.Fatalf("damaged file not kept: %+v", rec)
	}
	if kept, _ := os.ReadFile(rec.SetAside); string(kept) != string(b) {
		t.Fatal("set-aside copy differs from the damaged file")
	}
	if got := contents(t, l2); !maps.Equal(got, map[string]string{"a": "1", "c": "3"}) {
		t.Fatalf("got %v", got)
	}
	if len(rec.Damage) != 1 || rec.Damage[0].Offset != mid || rec.Damage[0].Lost != 1 {
		t.Fatalf("damage %+v, want one record lost at %d", rec.Damage, mid)
	}
	var ce *CorruptionError
	if err := rec.Err(path); !errors.As(err, &ce) || ce.Offset != mid {
		t.Fatalf("error %v, want a CorruptionError at %d", err, mid)
	}
	// Repaired: the next open finds nothing to report.
	l2.Close()
	l3, rec3 := open(t, path)
	if len(rec3.Damage) != 0 || rec3.SetAside != "" {
		t.Fatalf("damage reported twice: %+v", rec3)
	}
	if got := contents(t, l3); !maps.Equal(got, map[string]string{"a": "1", "c": "3"}) {
		t.Fatalf("after the repair: %v", got)
	}
}

func TestNewerFormatIsRefusedAndLeftAlone(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "state.log")
	h := header()
	binary.LittleEndian.PutUint32(h[8:12], FormatVersion+1)
	data := append(h, "whatever a newer version writes"...)
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	_, _, err := Open(path, now)
	if !errors.Is(err, ErrNewer) || !strings.Contains(err.Error(), "upgrade") {
		t.Fatalf("err = %v, want ErrNewer with advice", err)
	}
	if b, _ := os.ReadFile(path); string(b) != string(data) {
		t.Fatal("a newer version's file was changed")
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Fatalf("files appeared: %v", entries)
	}
}

func TestForeignFileIsSetAsideTwiceInOneSecond(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "state.log")
	var asides []string
	for _, content := range []string{"not a log", "also not a log"} {
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		l, rec, err := Open(path, now)
		if err != nil {
			t.Fatal(err)
		}
		if rec.Damaged == nil || rec.SetAside == "" || l.Len() != 0 {
			t.Fatalf("recovery %+v", rec)
		}
		l.Close()
		asides = append(asides, rec.SetAside)
	}
	for i, want := range []string{"not a log", "also not a log"} {
		if b, _ := os.ReadFile(asides[i]); string(b) != want {
			t.Errorf("copy %s holds %q, want %q", asides[i], b, want)
		}
	}
}

func TestCompactKeepsLiveRecordsAndCleansUp(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "state.log")
	if err := os.WriteFile(path+".tmp-crashed", []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	l, rec := open(t, path)
	if rec.TempRemoved != 1 {
		t.Fatalf("temporary file of a crash not removed: %+v", rec)
	}
	want := map[string]string{}
	for round := range 40 {
		var recs []Record
		for i := range 100 {
			k := fmt.Sprintf("k%03d", i)
			v := fmt.Sprintf("%d-%s", round, strings.Repeat("v", 1000))
			recs = append(recs, put(k, v))
			want[k] = v
		}
		recs = append(recs, Record{Key: fmt.Sprintf("k%03d", round)})
		delete(want, fmt.Sprintf("k%03d", round))
		commit(t, l, recs...)
	}
	if !l.NeedsCompaction() {
		t.Fatalf("size %d live %d: compaction not due", l.Size(), l.Live())
	}
	if _, err := l.Compact(); err != nil {
		t.Fatal(err)
	}
	if l.NeedsCompaction() || l.Size() > l.Live()+headerSize+8*10 {
		t.Fatalf("after compaction size %d live %d", l.Size(), l.Live())
	}
	if got := contents(t, l); !maps.Equal(got, want) {
		t.Fatal("compaction changed the contents")
	}
	commit(t, l, put("k099", "last"))
	want["k099"] = "last"
	l.Close()
	l2, _ := open(t, path)
	if got := contents(t, l2); !maps.Equal(got, want) {
		t.Fatal("contents differ after compaction and reopen")
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Fatalf("files left: %v", entries)
	}
}
