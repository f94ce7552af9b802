package statelog

import (
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestRepairTableMore goes on from TestRepairTable with damage of other
// shapes: to the file's header, twice in one file, damage before a torn
// tail, zeros a power loss left after the last batch, and a file cut in
// the middle of a batch head. Each row says what must survive, whether the
// file is set aside (damage) and whether a tail is cut (torn).
func TestRepairTableMore(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "state.log")
	l, _ := open(t, path)
	commit(t, l, put("meta", `{"version":1}`), put("a", "first"))
	b1 := l.Size()
	commit(t, l, put("b", strings.Repeat("b", 100)), put("c", strings.Repeat("c", 100)))
	b2 := l.Size()
	commit(t, l, put("d", strings.Repeat("d", 100)), put("e", strings.Repeat("e", 100)))
	b3 := l.Size()
	commit(t, l, put("f", "last"))
	end := l.Size()
	l.Close()
	clean, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	all := map[string]string{"meta": `{"version":1}`, "a": "first", "b": strings.Repeat("b", 100), "c": strings.Repeat("c", 100),
		"d": strings.Repeat("d", 100), "e": strings.Repeat("e", 100), "f": "last"}
	without := func(keys ...string) map[string]string {
		m := maps.Clone(all)
		for _, k := range keys {
			delete(m, k)
		}
		return m
	}
	// The value of the first record of a batch of 100-byte values.
	val := func(b int64) int64 { return b + batchHead + 3 + 50 }
	flip := func(at ...int64) func([]byte) []byte {
		return func(b []byte) []byte {
			for _, a := range at {
				b[a] ^= 0x04
			}
			return b
		}
	}
	for _, tc := range []struct {
		name   string
		damage func([]byte) []byte
		want   map[string]string
		// aside: damage reported (at offset check) and the file set aside;
		// torn: a tail cut.
		aside bool
		check int64
		torn  bool
	}{
		{"magic of the header", flip(3), all, true, 0, false},
		{"version of the header (2 becomes 0)", func(b []byte) []byte { b[8] ^= 0x02; return b }, all, true, 0, false},
		{"two records in two batches", flip(val(b1), val(b2)), without("b", "d"), true, b1, false},
		{"lengths of two batches", flip(b1+4, b2+4), all, true, b1, false},
		{"a record, and the last batch cut short", func(b []byte) []byte { return flip(val(b2))(b)[:end-2] }, without("d", "f"), true, b2, true},
		{"a head, and the last batch cut in its head", func(b []byte) []byte { return flip(b1 + 4)(b)[:b3+10] }, without("f"), true, b1, true},
		{"zeros after the last batch (power loss)", func(b []byte) []byte { return append(b, make([]byte, 8192)...) }, all, false, 0, true},
		{"the last batch zeroed (power loss)", func(b []byte) []byte { clear(b[b3:]); return b }, without("f"), false, 0, true},
		{"cut in the middle of the last batch's head", func(b []byte) []byte { return b[:b3+7] }, without("f"), false, 0, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "state.log")
			damaged := tc.damage(slices.Clone(clean))
			if err := os.WriteFile(p, damaged, 0o644); err != nil {
				t.Fatal(err)
			}
			l, rec := open(t, p)
			if got := contents(t, l); !maps.Equal(got, tc.want) {
				t.Errorf("kept %v\nwant %v", got, tc.want)
			}
			if tc.torn != (rec.TornBytes > 0) {
				t.Errorf("torn bytes %d, want a tail cut: %v", rec.TornBytes, tc.torn)
			}
			if !tc.aside {
				if len(rec.Damage) != 0 || rec.SetAside != "" || rec.Damaged != nil {
					t.Errorf("recovery %+v, want no damage", rec)
				}
				return
			}
			if rec.Damaged != nil || len(rec.Damage) == 0 || rec.Damage[0].Offset != tc.check {
				t.Errorf("recovery %+v, want damage at %d", rec, tc.check)
			}
			if kept, _ := os.ReadFile(rec.SetAside); rec.SetAside == "" || string(kept) != string(damaged) {
				t.Error("no copy of the damaged file as found")
			}
			commit(t, l, put("g", "after"))
			l.Close()
			l2, rec2 := open(t, p)
			want := maps.Clone(tc.want)
			want["g"] = "after"
			if got := contents(t, l2); len(rec2.Damage) != 0 || rec2.TornBytes != 0 || rec2.SetAside != "" || !maps.Equal(got, want) {
				t.Errorf("after the repair: %+v %v", rec2, got)
			}
		})
	}
}
