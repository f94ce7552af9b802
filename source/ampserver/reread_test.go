package ampserver

import (
	"encoding/json"
	"maps"
	"testing"
	"time"

	"github.com/amp-exporter/amp-exporter/store"
)

// requests returns the stand-in's requests since the last call.
func (h *harness) requests() map[string]int {
	r := h.srv.Requests()
	h.srv.Reset()
	return r
}

// editLast changes a thread's last message in place (its usage grows: an
// answer streaming), keeping its message count and last interaction.
func (h *harness) editLast(id string, lastMs int64) {
	h.t.Helper()
	var doc map[string]json.RawMessage
	if err := json.Unmarshal(h.srv.Document(id), &doc); err != nil {
		h.t.Fatal(err)
	}
	var msgs []map[string]any
	if err := json.Unmarshal(doc["messages"], &msgs); err != nil {
		h.t.Fatal(err)
	}
	last := msgs[len(msgs)-1]
	last["role"] = "assistant"
	last["usage"] = map[string]any{"model": "claude-sonnet-4-5-20250929", "inputTokens": 777, "outputTokens": 7, "maxInputTokens": 200000}
	doc["messages"], _ = json.Marshal(msgs)
	b, _ := json.Marshal(doc)
	if _, err := h.srv.Put(b, lastMs); err != nil {
		h.t.Fatal(err)
	}
}

// TestRoutineSyncOneListing: a routine sync with nothing changed is one
// listing request, also when a thread is listed without `v` (it was read
// at every sync); such a thread is read again when its message count or
// last interaction moves, or at the next full listing.
func TestRoutineSyncOneListing(t *testing.T) {
	h := newHarness(t, 6, SyncConfig{Billed: true, FullInterval: 6 * time.Hour})
	ids := h.srv.IDs()
	vless := ids[2]
	h.srv.OmitVersion(vless)
	h.syncOK()
	h.requests()
	for range 3 {
		h.clk.Advance(time.Minute)
		h.syncOK()
		if got := h.requests(); !maps.Equal(got, map[string]int{MethodListThreads: 1}) {
			t.Fatalf("routine sync with nothing changed: %v, want one listing", got)
		}
	}
	// Changed without a new message count or interaction: not seen until
	// the full listing.
	rec, _ := h.store.File(store.AmpServerPath(vless))
	h.editLast(vless, rec.Version.AmpServerLast)
	h.clk.Advance(time.Minute)
	if st := h.syncOK(); st.Fetched != 0 {
		t.Fatalf("a thread without v read though its listing did not move: %+v", st)
	}
	h.clk.Advance(6 * time.Hour)
	if st := h.syncOK(); st.Fetched != 1 || !st.Full {
		t.Fatalf("full listing %+v: want the thread without v read", st)
	}
	input := false // the edited answer's 777 input tokens are counted
	for _, sv := range countedThreads(h.store)[vless].Series {
		input = input || sv.Family == string(store.FamTokens) && sv.L2 == "input" && sv.Value == 777
	}
	if !input {
		t.Fatalf("thread without v after the full listing: the edit is not counted: %v", countedThreads(h.store)[vless].Series)
	}
	// A new message moves its count: read at the next routine sync.
	h.clk.Advance(time.Minute)
	h.srv.AppendMessage(vless, h.lastMessage(vless), 0)
	if st := h.syncOK(); st.Fetched != 1 {
		t.Fatalf("a thread without v whose message count moved: %+v", st)
	}
}

// TestBillRereadAtFullListing: Amp re-prices a thread without a new `v`;
// its bill is read again at the next full listing when the thread was
// active lately (not at routine syncs, and not for threads long quiet).
func TestBillRereadAtFullListing(t *testing.T) {
	h := newHarness(t, 3, SyncConfig{Billed: true, FullInterval: 6 * time.Hour, BillRecheck: 72 * time.Hour})
	ids := h.srv.IDs()
	active, quiet := ids[0], ids[1]
	h.srv.Touch(active, t0.UnixMilli())
	h.srv.Touch(quiet, t0.Add(-30*24*time.Hour).UnixMilli())
	h.srv.SetCost(active, map[string]any{"totalCostUSD": 1.0})
	h.srv.SetCost(quiet, map[string]any{"totalCostUSD": 1.0})
	h.syncOK()
	billed := func(id string) float64 {
		for _, sv := range h.store.Export().Threads[id].Series {
			if sv.Family == string(store.FamBilled) {
				return store.Unfixed(store.FamBilled, sv.Value)
			}
		}
		return 0
	}
	if billed(active) != 1 || billed(quiet) != 1 {
		t.Fatalf("first sync bills %v %v", billed(active), billed(quiet))
	}
	h.srv.SetCost(active, map[string]any{"totalCostUSD": 2.5})
	h.srv.SetCost(quiet, map[string]any{"totalCostUSD": 2.5})
	h.clk.Advance(time.Minute)
	h.requests()
	h.syncOK()
	if got := h.requests(); got[MethodThreadDisplayCostInfo] != 0 || billed(active) != 1 {
		t.Fatalf("routine sync read bills: %v", got)
	}
	h.clk.Advance(6 * time.Hour)
	h.syncOK()
	if got := h.requests(); got[MethodThreadDisplayCostInfo] != 1 {
		t.Fatalf("full listing read %d bills, want the active thread's", got[MethodThreadDisplayCostInfo])
	}
	if billed(active) != 2.5 || billed(quiet) != 1 {
		t.Fatalf("bills after the full listing: active %v (want 2.5), quiet %v (want 1)", billed(active), billed(quiet))
	}
}
