package workspacetest

import "testing"

// FuzzThreadID holds the id decoder to what the stand-in made: any
// string it resolves is the id of that thread, and nothing else
// resolves.
func FuzzThreadID(f *testing.F) {
	w := newWorkspace(Config{Seed: 1, Users: 3, Threads: 100, Days: 10})
	for _, s := range []string{w.threadID(0, 0), w.threadID(99, 1), w.threadID(100, 0), "T-", "", "T-00000000-0000-4000-8000-000000000000"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		i, k, ok := w.parseThreadID(s)
		if !ok {
			return
		}
		if w.threadID(i, k) != s || i < 0 || i >= 100 || k < 0 || k > w.thread(i, 0).subs {
			t.Errorf("%q resolves to thread %d/%d", s, i, k)
		}
	})
}

// FuzzCursor: a cursor decodes to what was encoded, and any string either
// fails or decodes to a cursor that encodes back to a cursor of the same
// row.
func FuzzCursor(f *testing.F) {
	f.Add(encodeCursor(pos{3, 1}, false))
	f.Add(encodeCursor(pos{199999, 2}, true))
	f.Add("")
	f.Add("YzE6MTox")
	f.Fuzz(func(t *testing.T, s string) {
		p, desc, ok := decodeCursor(s)
		if !ok {
			return
		}
		q, d2, ok := decodeCursor(encodeCursor(p, desc))
		if !ok || q != p || d2 != desc {
			t.Errorf("%q: %v %t → %v %t %t", s, p, desc, q, d2, ok)
		}
	})
}
