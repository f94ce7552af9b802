package statelog

import (
	"bytes"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestRepairTable damages one field of a log of three commits at a time,
// in the manner of a write-ahead log's repair tests: each row names the
// byte flipped, the records that must survive, and whether it is damage
// (reported with its offset, set aside, repaired) or a torn tail (cut).
func TestRepairTable(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "state.log")
	l, _ := open(t, path)
	commit(t, l, put("meta", `{"version":1}`), put("a", "first"))
	b1 := l.Size()
	commit(t, l, put("b", strings.Repeat("b", 100)), put("c", strings.Repeat("c", 100)), put("d", strings.Repeat("d", 100)))
	b2 := l.Size()
	commit(t, l, put("e", "last"))
	l.Close()
	clean, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	all := map[string]string{"meta": `{"version":1}`, "a": "first", "b": strings.Repeat("b", 100), "c": strings.Repeat("c", 100),
		"d": strings.Repeat("d", 100), "e": "last"}
	without := func(keys ...string) map[string]string {
		m := maps.Clone(all)
		for _, k := range keys {
			delete(m, k)
		}
		return m
	}
	// Records of batch 1 (b1): key length at +16, "b" at +17, its value
	// length at +18, its value from +19; "c" starts at +16+107.
	rec := func(i int) int64 { return b1 + batchHead + int64(i)*(1+1+1+100+crcSize) }
	for _, tc := range []struct {
		name  string
		at    int64
		want  map[string]string
		torn  bool
		lost  int
		check int64 // the offset the damage is reported at
	}{
		{"marker of batch 1", b1, all, false, 0, b1},
		{"length of batch 1", b1 + 4, all, false, 0, b1},
		{"payload checksum of batch 1", b1 + 8, all, false, 0, b1},
		{"head checksum of batch 1", b1 + 12, all, false, 0, b1},
		{"key length of the first record of batch 1", rec(0), without("b", "c", "d"), false, 1, b1},
		{"key of a record", rec(1) + 1, without("c"), false, 1, b1},
		{"value length of a record", rec(1) + 2, without("c", "d"), false, 1, b1},
		{"value of a record", rec(2) + 50, without("d"), false, 1, b1},
		{"checksum of a record", rec(2) + 103, without("d"), false, 1, b1},
		{"meta value in batch 0", headerSize + batchHead + 6 + 3, without("meta"), false, 1, headerSize},
		{"last batch's payload", b2 + batchHead + 2, without("e"), true, 0, 0},
		{"last batch's length", b2 + 4, without("e"), true, 0, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := t.TempDir()
			p := filepath.Join(d, "state.log")
			damaged := slices.Clone(clean)
			damaged[tc.at] ^= 0x04
			if err := os.WriteFile(p, damaged, 0o644); err != nil {
				t.Fatal(err)
			}
			l, rec := open(t, p)
			if got := contents(t, l); !maps.Equal(got, tc.want) {
				t.Errorf("kept %v\nwant %v", got, tc.want)
			}
			if tc.torn {
				if rec.TornBytes == 0 || len(rec.Damage) != 0 || rec.SetAside != "" {
					t.Errorf("recovery %+v, want a torn tail cut", rec)
				}
				return
			}
			if len(rec.Damage) != 1 || rec.Damage[0].Offset != tc.check || rec.LostRecords() != tc.lost || rec.TornBytes != 0 {
				t.Errorf("recovery %+v, want damage at %d costing %d records", rec, tc.check, tc.lost)
			}
			if kept, _ := os.ReadFile(rec.SetAside); string(kept) != string(damaged) {
				t.Error("no copy of the damaged file as found")
			}
			// Repaired: a new commit, then a reopen, reads clean.
			commit(t, l, put("f", "after"))
			l.Close()
			l2, rec2 := open(t, p)
			if len(rec2.Damage) != 0 || rec2.TornBytes != 0 || contents(t, l2)["f"] != "after" {
				t.Errorf("after the repair: %+v %v", rec2, contents(t, l2))
			}
		})
	}
}

// writeV1 writes a format 1 log: 8-byte batch heads (length, CRC-32C),
// records without checksums.
func writeV1(t *testing.T, path string, batches ...[]Record) []int64 {
	t.Helper()
	h := header()
	binary.LittleEndian.PutUint32(h[8:12], 1)
	out := h
	var starts []int64
	for _, b := range batches {
		var payload []byte
		for _, r := range b {
			payload = binary.AppendUvarint(payload, uint64(len(r.Key)))
			payload = append(payload, r.Key...)
			if r.Value == nil {
				payload = binary.AppendUvarint(payload, 0)
				continue
			}
			payload = binary.AppendUvarint(payload, uint64(len(r.Value))+1)
			payload = append(payload, r.Value...)
		}
		starts = append(starts, int64(len(out)))
		out = binary.LittleEndian.AppendUint32(out, uint32(len(payload)))
		out = binary.LittleEndian.AppendUint32(out, crc32.Checksum(payload, crcTable))
		out = append(out, payload...)
	}
	if err := os.WriteFile(path, out, 0o644); err != nil {
		t.Fatal(err)
	}
	return starts
}

// A format 1 log is read and rewritten in format 2; a torn tail of it is
// cut as before, and damage before its end is set aside.
func TestFormat1IsReadAndRewritten(t *testing.T) {
	batches := [][]Record{{put("meta", "m"), put("a", "1"), put("b", "2")}, {put("a", "3"), {Key: "b"}, put("c", "")}, {put("d", "4")}}
	want := map[string]string{"meta": "m", "a": "3", "c": "", "d": "4"}
	t.Run("clean", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "state.log")
		writeV1(t, path, batches...)
		l, rec := open(t, path)
		if rec.Upgraded != 1 || len(rec.Damage) != 0 || rec.SetAside != "" {
			t.Fatalf("recovery %+v", rec)
		}
		if got := contents(t, l); !maps.Equal(got, want) {
			t.Fatalf("got %v, want %v", got, want)
		}
		commit(t, l, put("e", "5"))
		l.Close()
		b, _ := os.ReadFile(path)
		if v := binary.LittleEndian.Uint32(b[8:12]); v != FormatVersion {
			t.Fatalf("format %d after the rewrite", v)
		}
		l2, rec2 := open(t, path)
		if rec2.Upgraded != 0 || contents(t, l2)["e"] != "5" || contents(t, l2)["a"] != "3" {
			t.Fatalf("after a reopen: %+v %v", rec2, contents(t, l2))
		}
	})
	t.Run("torn tail", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "state.log")
		writeV1(t, path, batches...)
		b, _ := os.ReadFile(path)
		if err := os.WriteFile(path, b[:len(b)-2], 0o644); err != nil {
			t.Fatal(err)
		}
		l, rec := open(t, path)
		if rec.TornBytes == 0 || rec.SetAside != "" || len(rec.Damage) != 0 {
			t.Fatalf("recovery %+v", rec)
		}
		if got := contents(t, l); got["d"] != "" || got["a"] != "3" {
			t.Fatalf("got %v", got)
		}
	})
	t.Run("damage before the end", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "state.log")
		starts := writeV1(t, path, batches...)
		b, _ := os.ReadFile(path)
		b[starts[1]+10] ^= 1
		if err := os.WriteFile(path, b, 0o644); err != nil {
			t.Fatal(err)
		}
		l, rec := open(t, path)
		if rec.SetAside == "" || len(rec.Damage) != 1 || rec.Damage[0].Offset != starts[1] {
			t.Fatalf("recovery %+v", rec)
		}
		if got := contents(t, l); !maps.Equal(got, map[string]string{"meta": "m", "a": "1", "b": "2"}) {
			t.Fatalf("got %v", got)
		}
	})
}

// FuzzOpen: whatever the bytes (header included), Open neither panics nor
// fails (but for a header naming a newer format, which it leaves alone),
// and what it leaves opens clean (nothing to repair twice).
//
// Files are not synced here: an fsync per repair made an execution take
// tens of milliseconds, and the fuzzer spent its whole run minimizing the
// first new input (a handful of executions in 30 s).
func FuzzOpen(f *testing.F) {
	fsync0, syncDir0 := fsync, syncDir
	fsync, syncDir = func(*os.File) error { return nil }, func(string) {}
	f.Cleanup(func() { fsync, syncDir = fsync0, syncDir0 })
	dir := f.TempDir()
	path := filepath.Join(dir, "seed.log")
	l, _, err := Open(path, now)
	if err != nil {
		f.Fatal(err)
	}
	for i := range 3 {
		if _, err := l.Commit([]Record{put("k"+strings.Repeat("x", i), strings.Repeat("v", 40*i)), {Key: "gone"}}); err != nil {
			f.Fatal(err)
		}
	}
	l.Close()
	seed, _ := os.ReadFile(path)
	f.Add(seed)
	f.Fuzz(func(t *testing.T, file []byte) {
		p := filepath.Join(t.TempDir(), "state.log")
		if err := os.WriteFile(p, file, 0o644); err != nil {
			t.Fatal(err)
		}
		l, _, err := Open(p, now)
		if errors.Is(err, ErrNewer) {
			if b, _ := os.ReadFile(p); !bytes.Equal(b, file) {
				t.Fatal("a log of a newer format was changed")
			}
			return
		}
		if err != nil {
			t.Fatal(err)
		}
		if err := l.Each(func(string, []byte) error { return nil }); err != nil {
			t.Fatal(err)
		}
		l.Close()
		l2, rec, err := Open(p, now)
		if err != nil {
			t.Fatal(err)
		}
		defer l2.Close()
		if len(rec.Damage) != 0 || rec.TornBytes != 0 {
			t.Fatalf("repaired log needs repair again: %+v", rec)
		}
	})
}
