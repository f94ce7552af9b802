package statelog

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
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
		{"key length of the first record of batch 1", rec(0), without("b"), false, 1, b1},
		{"key of a record", rec(1) + 1, without("c"), false, 1, b1},
		{"value length of a record", rec(1) + 2, without("c"), false, 1, b1},
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

// TestDamagedLengthCostsItsRecordOnly flips every bit of every length
// field (a record's key length and value length) of a batch of records
// like the exporter's, one at a time: each flip must cost that record and
// nothing else of its batch. A reader that trusted the damaged lengths
// walked on through the rest of the batch, and what it lost depended on
// where the walk happened to land again (the flaky damage test of the
// state package).
func TestDamagedLengthCostsItsRecordOnly(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "state.log")
	l, _ := open(t, path)
	all := map[string]string{}
	var recs []Record
	for i := range 8 {
		// JSON values of 40 bytes to a few KiB: one- and two-byte lengths.
		k := fmt.Sprintf("t:T-%08x-thread", i*2654435761)
		v := fmt.Sprintf(`{"series":[%s{"f":"messages","v":%d}]}`, strings.Repeat(`{"f":"tokens","a":"claude-sonnet-4-5","b":"input","v":1234},`, i*i%40), i)
		all[k] = v
		recs = append(recs, put(k, v))
	}
	commit(t, l, recs...)
	commit(t, l, put("stream", "after")) // so damage is not a torn tail
	all["stream"] = "after"
	l.Close()
	clean, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	// The records of the first batch, and where their lengths are.
	type field struct {
		key     string
		off, to int64 // the length's bytes
	}
	var fields []field
	end := int64(headerSize+batchHead) + int64(binary.LittleEndian.Uint32(clean[headerSize+4:]))
	for p := int64(headerSize + batchHead); p < end; {
		kl, a := binary.Uvarint(clean[p:])
		key := string(clean[p+int64(a) : p+int64(a)+int64(kl)])
		vOff := p + int64(a) + int64(kl)
		vl, b := binary.Uvarint(clean[vOff:])
		fields = append(fields, field{key, p, p + int64(a)}, field{key, vOff, vOff + int64(b)})
		p = vOff + int64(b) + int64(vl-1) + crcSize
	}
	if len(fields) != 2*len(recs) {
		t.Fatalf("found %d length fields, want %d", len(fields), 2*len(recs))
	}
	// What the hundreds of repairs below leave is read, not what would
	// survive a power cut: unsynced, as in FuzzOpen (the syncs were nine
	// tenths of the test's time).
	fsync0, syncDir0 := fsync, syncDir
	fsync, syncDir = func(*os.File) error { return nil }, func(string) {}
	t.Cleanup(func() { fsync, syncDir = fsync0, syncDir0 })
	p := filepath.Join(t.TempDir(), "state.log")
	for _, f := range fields {
		for at := f.off; at < f.to; at++ {
			for bit := range 8 {
				damaged := slices.Clone(clean)
				damaged[at] ^= 1 << bit
				if err := os.WriteFile(p, damaged, 0o644); err != nil {
					t.Fatal(err)
				}
				l, rec, err := Open(p, now)
				if err != nil {
					t.Fatal(err)
				}
				want := maps.Clone(all)
				delete(want, f.key)
				if got := contents(t, l); !maps.Equal(got, want) {
					var lost []string
					for k := range want {
						if _, ok := got[k]; !ok {
							lost = append(lost, k)
						}
					}
					t.Errorf("bit %d of byte %d (a length of %s): lost %d other records %v", bit, at, f.key, len(lost), lost)
				} else if rec.LostRecords() != 1 {
					t.Errorf("bit %d of byte %d: %d lost records reported, want 1", bit, at, rec.LostRecords())
				}
				l.Close()
				os.Remove(rec.SetAside)
			}
		}
	}
}
