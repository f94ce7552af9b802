package state

import (
	"bytes"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"testing"

	"github.com/amp-exporter/amp-exporter/parser/thread"
	"github.com/amp-exporter/amp-exporter/store"
)

// The Amp server source's store is kept in the same log as the local
// threads, under its own key prefixes ("s:", "sf:"). These tests hold the
// log to it: saved and restored with the source on, left untouched (not
// damaged, not unknown, kept through saves and compaction) while it is
// off, and each thread's pins and retired part round-trip in both spaces.

// newServerTestState is newTestState with the server source on (server)
// or off, logging into logs.
func newServerTestState(dir string, server bool, logs *bytes.Buffer) *testState {
	s := newTestState(dir)
	if server {
		s.stores.AmpServer = store.NewThreadStore(store.StoreOptions{Labels: s.stores.Labels})
	}
	log := slog.New(slog.DiscardHandler)
	if logs != nil {
		log = slog.New(slog.NewTextHandler(logs, nil))
	}
	s.keeper = newKeeper(Options{Dir: dir, Stores: s.stores, Metrics: s.metrics, Logger: log})
	return s
}

func serverFingerprint(t *testing.T, s *store.ThreadStore) string {
	t.Helper()
	b, err := json.Marshal(s.Export())
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func stateDoc(id string, msgs ...string) string {
	return fmt.Sprintf(`{"v":1,"id":%q,"agentMode":"smart","messages":[%s]}`, id, strings.Join(msgs, ","))
}

func stateUser(id int, text string) string {
	return fmt.Sprintf(`{"role":"user","messageId":%d,"meta":{"sentAt":1770000000000},"content":[{"type":"text","text":%q}]}`, id, text)
}

// stateAssistant is an assistant message that called a tool, in state st.
func stateAssistant(id int, st, model string, out int) string {
	return fmt.Sprintf(`{"role":"assistant","messageId":%d,"content":[{"type":"tool_use","id":"tu%d","name":"Bash","complete":true,"input":{}}],"state":%s,"usage":{"model":%q,"inputTokens":10,"outputTokens":%d,"maxInputTokens":1000,"totalInputTokens":10}}`,
		id, id, st, model, out)
}

const (
	stateToolUse   = `{"type":"complete","stopReason":"tool_use"}`
	stateCancelled = `{"type":"cancelled"}`
	stateEndTurn   = `{"type":"complete","stopReason":"end_turn"}`
)

func applyDoc(t *testing.T, s *store.ThreadStore, path string, v int64, doc string) {
	t.Helper()
	th, err := thread.NewParser().ParseBytes([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	s.Apply(path, store.FileVersion{Size: int64(len(doc)), AmpServerV: v}, thread.Summarize(th))
}

func TestServerSpaceSurvivesRestarts(t *testing.T) {
	dir := t.TempDir()
	a := newServerTestState(dir, true, nil)
	mustRestore(t, a)
	for i := range 3 {
		id := fmt.Sprintf("T-srv-%d", i)
		applyDoc(t, a.stores.AmpServer, store.AmpServerPath(id), int64(i+1),
			stateDoc(id, stateUser(0, "go"), stateAssistant(1, stateEndTurn, "m1", 100*(i+1))))
	}
	applyDoc(t, a.stores.Threads, "/threads/T-local.json", 0, stateDoc("T-local", stateUser(0, "go"), stateAssistant(1, stateEndTurn, "m1", 7)))
	if err := a.keeper.save(); err != nil {
		t.Fatal(err)
	}
	// What Amp bills arrives after the thread was counted (and saved).
	if !a.stores.AmpServer.ApplyBilled("T-srv-1", map[string]float64{"total": 0.25}) {
		t.Fatal("billed cost not applied")
	}
	a.stores.AmpServer.Remove(store.AmpServerPath("T-srv-2")) // gone from the server
	if err := a.keeper.save(); err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{keyAmpServerThreadPrefix + "T-srv-0", keyAmpServerFilePrefix + store.AmpServerPath("T-srv-0"), keyAmpServerThreadPrefix + "T-srv-2"} {
		if !a.keeper.db.Has(key) {
			t.Errorf("no record %q in the log", key)
		}
	}
	if a.keeper.db.Has(keyAmpServerFilePrefix + store.AmpServerPath("T-srv-2")) {
		t.Error("the record of a thread gone from the server is still live")
	}
	if a.keeper.db.Has(keyThreadPrefix+"T-srv-0") || a.keeper.db.Has(keyAmpServerThreadPrefix+"T-local") {
		t.Error("a thread is in the other space's records")
	}
	want, wantLocal := serverFingerprint(t, a.stores.AmpServer), serverFingerprint(t, a.stores.Threads)
	if !strings.Contains(want, `"billed_usd"`) {
		t.Fatalf("no billed cost in the server store: %s", want)
	}
	a.keeper.close()

	b := newServerTestState(dir, true, nil)
	mustRestore(t, b)
	if got := serverFingerprint(t, b.stores.AmpServer); got != want {
		t.Errorf("server store after a restart:\n%s\nwant\n%s", got, want)
	}
	if got := serverFingerprint(t, b.stores.Threads); got != wantLocal {
		t.Errorf("local store after a restart:\n%s\nwant\n%s", got, wantLocal)
	}
	if f, ok := b.stores.AmpServer.File(store.AmpServerPath("T-srv-1")); !ok || f.Version.AmpServerV != 2 {
		t.Errorf("server thread version not restored: %+v %v", f, ok)
	}
	for _, st := range []*store.ThreadStore{b.stores.Threads, b.stores.AmpServer} {
		if d := st.ExportDelta(); !d.Empty() {
			t.Errorf("a restore left %d threads and %d files to save again", d.ThreadCount(), len(d.Files))
		}
	}
}

func TestServerRecordsWaitWhileTheSourceIsOff(t *testing.T) {
	dir := t.TempDir()
	a := newServerTestState(dir, true, nil)
	mustRestore(t, a)
	for i := range 20 {
		id := fmt.Sprintf("T-srv-%d", i)
		applyDoc(t, a.stores.AmpServer, store.AmpServerPath(id), 1, stateDoc(id, stateUser(0, "go"), stateAssistant(1, stateEndTurn, "m1", 100)))
	}
	if err := a.keeper.save(); err != nil {
		t.Fatal(err)
	}
	want := serverFingerprint(t, a.stores.AmpServer)
	a.keeper.close()

	// The source off: its records are neither damaged nor a newer
	// version's, and stay through saves and compaction.
	var logs bytes.Buffer
	b := newServerTestState(dir, false, &logs)
	mustRestore(t, b)
	if n := b.loadErrors(t); n != 0 {
		t.Errorf("the server's records counted as damaged (%g)", n)
	}
	if strings.Contains(logs.String(), "level=WARN") || strings.Contains(logs.String(), "level=ERROR") {
		t.Errorf("restoring with the server source off warned:\n%s", logs.String())
	}
	for round := range 30 {
		doc := stateDoc("T-local", stateUser(0, "go"), stateAssistant(1, stateEndTurn, "m1", 10+round))
		applyDoc(t, b.stores.Threads, "/threads/T-local.json", int64(round), doc)
		if err := b.keeper.save(); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := b.keeper.db.Compact(); err != nil {
		t.Fatal(err)
	}
	if !b.keeper.db.Has(keyAmpServerThreadPrefix+"T-srv-7") || !b.keeper.db.Has(keyAmpServerFilePrefix+store.AmpServerPath("T-srv-7")) {
		t.Fatal("the server's records were dropped while the source was off")
	}
	b.keeper.close()

	// On again: restored as they were.
	c := newServerTestState(dir, true, nil)
	mustRestore(t, c)
	if got := serverFingerprint(t, c.stores.AmpServer); got != want {
		t.Errorf("server store after a restart with the source off and on again:\n%s\nwant\n%s", got, want)
	}
	if _, ok := c.stores.Threads.File("/threads/T-local.json"); !ok {
		t.Error("the local thread saved meanwhile is lost")
	}
}

// A thread's pins (the labels each item was first counted under) and its
// retired part (what items gone from it counted) go through the log: after
// a restart, a rewrite that changes an item's labels counts it once, in
// either space, exactly as in a store that never restarted.
func TestPinsRoundTripThroughTheLog(t *testing.T) {
	for _, server := range []bool{false, true} {
		t.Run(fmt.Sprintf("server=%v", server), func(t *testing.T) {
			dir := t.TempDir()
			space := func(s *testState) *store.ThreadStore {
				if server {
					return s.stores.AmpServer
				}
				return s.stores.Threads
			}
			path, prefix := "/threads/T-1.json", keyThreadPrefix
			if server {
				path, prefix = store.AmpServerPath("T-1"), keyAmpServerThreadPrefix
			}
			// Three exchanges, then the thread truncated to one (an edited
			// prompt): the two lost count on, in the retired part.
			full := stateDoc("T-1", stateUser(0, "a"), stateAssistant(1, stateToolUse, "m1", 100),
				stateUser(2, "b"), stateAssistant(3, stateEndTurn, "m1", 50), stateUser(4, "c"), stateAssistant(5, stateEndTurn, "m2", 60))
			truncated := stateDoc("T-1", stateUser(0, "a"), stateAssistant(1, stateToolUse, "m1", 100))
			// Then the tool interrupted: the message's stop reason and
			// model change; it stays one message under tool_use and m1.
			rewritten := stateDoc("T-1", stateUser(0, "a"), stateAssistant(1, stateCancelled, "m3", 120))

			a := newServerTestState(dir, true, nil)
			mustRestore(t, a)
			applyDoc(t, space(a), path, 1, full)
			applyDoc(t, space(a), path, 2, truncated)
			if err := a.keeper.save(); err != nil {
				t.Fatal(err)
			}
			var ts store.ThreadState
			if err := a.keeper.db.Each(func(key string, v []byte) error {
				if key == prefix+"T-1" {
					return json.Unmarshal(v, &ts)
				}
				return nil
			}); err != nil {
				t.Fatal(err)
			}
			if ts.Pins == nil || len(ts.Retired) == 0 {
				t.Fatalf("the saved record has no pins or no retired part: %+v", ts)
			}
			a.keeper.close()

			b := newServerTestState(dir, true, nil)
			mustRestore(t, b)
			if got, want := serverFingerprint(t, space(b)), serverFingerprint(t, space(a)); got != want {
				t.Fatalf("restored:\n%s\nwant\n%s", got, want)
			}
			// The same rewrite in the store that never restarted and in the
			// restored one.
			applyDoc(t, space(a), path, 3, rewritten)
			applyDoc(t, space(b), path, 3, rewritten)
			got, want := serverFingerprint(t, space(b)), serverFingerprint(t, space(a))
			if got != want {
				t.Errorf("after a rewrite, restored:\n%s\nnever restarted:\n%s", got, want)
			}
			var finished int64
			var st store.State
			if err := json.Unmarshal([]byte(got), &st); err != nil {
				t.Fatal(err)
			}
			for _, sv := range st.Threads["T-1"].Series {
				if sv.Family == "finished" {
					finished += sv.Value
				}
			}
			if finished != 3 {
				t.Errorf("%d finished assistant messages counted, want 3 (one per message)", finished)
			}
		})
	}
}

// One thread, one count, and the choice never flips: a thread the server
// source counted is not counted again from a local file found while the
// source is off, so that turning it on again (both stores restored) does
// not count the thread twice. A local thread stays local.
func TestServerThreadFoundLocallyWhileTheSourceIsOffCountsOnce(t *testing.T) {
	dir := t.TempDir()
	doc := stateDoc("T-x", stateUser(0, "go"), stateAssistant(1, stateEndTurn, "m1", 100))
	a := newServerTestState(dir, true, nil)
	mustRestore(t, a)
	applyDoc(t, a.stores.AmpServer, store.AmpServerPath("T-x"), 1, doc)
	if err := a.keeper.save(); err != nil {
		t.Fatal(err)
	}
	a.keeper.close()

	b := newServerTestState(dir, false, nil)
	mustRestore(t, b)
	applyDoc(t, b.stores.Threads, "/threads/T-x.json", 0, doc)
	applyDoc(t, b.stores.Threads, "/threads/T-local.json", 0, stateDoc("T-local", stateUser(0, "go"), stateAssistant(1, stateEndTurn, "m1", 7)))
	if err := b.keeper.save(); err != nil {
		t.Fatal(err)
	}
	b.keeper.close()

	c := newServerTestState(dir, true, nil)
	mustRestore(t, c)
	var out int64
	for _, st := range []*store.ThreadStore{c.stores.Threads, c.stores.AmpServer} {
		for key, ts := range st.Export().Threads {
			for _, sv := range ts.Series {
				if sv.Family == "tokens" && sv.L2 == "output" {
					out += sv.Value
					t.Logf("%s: %d output tokens", key, sv.Value)
				}
			}
		}
	}
	if out != 107 {
		t.Errorf("%d output tokens counted over both stores, want 107 (T-x once, T-local)", out)
	}
}
