package state

import (
	"strings"
	"testing"

	"github.com/amp-exporter/amp-exporter/parser/thread"
	"github.com/amp-exporter/amp-exporter/store"
)

// A server thread's window (where its next read starts, and what its
// messages before it counted) is saved with the thread and restored, so
// that after a restart the thread is read as a window again, and counted
// as a whole read counts it.
func TestServerWindowSurvivesRestarts(t *testing.T) {
	dir := t.TempDir()
	a := newServerTestState(dir, true, nil)
	mustRestore(t, a)
	id, path := "T-srv-win", store.AmpServerPath("T-srv-win")
	msgs := []string{
		stateUser(0, "one"), stateAssistant(1, stateEndTurn, "m1", 10),
		stateUser(2, "two"), stateAssistant(3, stateEndTurn, "m1", 20),
		stateUser(4, "three"), stateAssistant(5, stateEndTurn, "m2", 30),
	}
	// A window holds the messages from index 4 on, the others as nulls.
	window := func(msgs []string) string {
		return stateDoc(id, append(strings.Split(strings.Repeat("null,", 3)+"null", ","), msgs[4:]...)...)
	}
	parse := func(doc string) *thread.Summary {
		th, err := thread.NewParser().ParseBytes([]byte(doc))
		if err != nil {
			t.Fatal(err)
		}
		return thread.Summarize(th)
	}
	w := store.Window{Start: 4, Anchor: 44, Count: 6}
	if _, err := a.stores.AmpServer.ApplyWindow(path, store.FileVersion{AmpServerV: 1}, parse(stateDoc(id, msgs...)), store.Window{},
		&store.NextWindow{Window: w, Sum: parse(window(msgs))}); err != nil {
		t.Fatal(err)
	}
	if err := a.keeper.save(); err != nil {
		t.Fatal(err)
	}
	want := serverFingerprint(t, a.stores.AmpServer)
	a.keeper.close()

	b := newServerTestState(dir, true, nil)
	mustRestore(t, b)
	if got := serverFingerprint(t, b.stores.AmpServer); got != want {
		t.Fatalf("server store after a restart:\n%s\nwant\n%s", got, want)
	}
	if got, ok := b.stores.AmpServer.Window(path); !ok || got != w {
		t.Fatalf("window after a restart %+v %v, want %+v", got, ok, w)
	}
	// The thread grows: its window, applied to the restored store, counts
	// what the whole thread applied to a fresh store counts.
	msgs = append(msgs, stateUser(6, "four"), stateAssistant(7, stateEndTurn, "m2", 40))
	if _, err := b.stores.AmpServer.ApplyWindow(path, store.FileVersion{AmpServerV: 2}, parse(window(msgs)), w, nil); err != nil {
		t.Fatal(err)
	}
	whole := store.NewThreadStore(store.StoreOptions{})
	whole.Apply(path, store.FileVersion{AmpServerV: 2}, parse(stateDoc(id, msgs...)))
	got, exp := b.stores.AmpServer.Snapshot().Totals(), whole.Snapshot().Totals()
	if len(got) == 0 || len(got) != len(exp) {
		t.Fatalf("totals %v, want %v", got, exp)
	}
	for k, v := range exp {
		if got[k] != v {
			t.Fatalf("%v: %d by window after a restart, %d whole", k, got[k], v)
		}
	}
}
