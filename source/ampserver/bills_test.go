package ampserver

import (
	"encoding/json"
	"math"
	"slices"
	"testing"
	"time"

	"github.com/amp-exporter/amp-exporter/parser/thread"
	"github.com/amp-exporter/amp-exporter/store"
)

// billedByKind sums a store's amp_billed_cost_usd_total by kind.
func billedByKind(s *store.ThreadStore) map[string]float64 {
	out := map[string]float64{}
	for k, v := range s.Snapshot().Totals() {
		if k.Fam == store.FamBilled {
			out[k.L1] += store.Unfixed(store.FamBilled, v)
		}
	}
	return out
}

func sameBills(a, b map[string]float64) bool {
	for _, kind := range store.BilledKinds {
		if math.Abs(a[kind]-b[kind]) > 1e-9 {
			return false
		}
	}
	return true
}

// Counting rule 12 (docs/counting.md): a thread that is also a local file
// is counted from the file, once, but its bill, which only the server
// knows, is counted too. With 40 server threads, one of them also a local
// file, amp_billed_cost_usd_total was short by exactly that thread's bill
// in every kind: its bill was never asked for.
func TestBillOfALocalThreadCounted(t *testing.T) {
	h := newHarness(t, 40, SyncConfig{Billed: true, FullInterval: 6 * time.Hour})
	ids := h.srv.IDs()
	want := map[string]float64{}
	bill := func(id string, i int, scale float64) {
		free, paid, sub := scale*0.0083*float64(1+i%5), scale*0.041*float64(1+i%3), scale*0.033*float64(1+i%4)
		h.srv.SetCost(id, map[string]any{"title": "t", "totalCostUSD": free + paid + sub,
			"costBreakdown": map[string]any{"freeUSD": free, "paidUSD": paid, "subscriptionUSD": sub}})
	}
	for i, id := range ids {
		bill(id, i, 1)
	}
	local := ids[7]
	// The local file is read first (the server source waits for the first
	// scan of the thread directories).
	files := store.NewThreadStore(store.StoreOptions{})
	files.SetClaim(h.owners, store.SourceThreads)
	th, err := thread.NewParser().ParseBytes(h.srv.Document(local))
	if err != nil {
		t.Fatal(err)
	}
	if !files.Apply("/threads/"+local+".json", store.FileVersion{Size: 1}, thread.Summarize(th)) {
		t.Fatal("the local file was not counted")
	}
	tokensOf := func(s *store.ThreadStore) int64 {
		var n int64
		for k, v := range s.Snapshot().Totals() {
			if k.Fam == store.FamTokens {
				n += v
			}
		}
		return n
	}
	localTokens := tokensOf(files)

	h.syncOK()
	// Every thread's bill, once.
	for i := range ids {
		want["free"] += 0.0083 * float64(1+i%5)
		want["paid"] += 0.041 * float64(1+i%3)
		want["subscription"] += 0.033 * float64(1+i%4)
	}
	got := billedByKind(h.store)
	t.Logf("billed with one of 40 threads also a local file: free %.4f paid %.4f subscription %.4f (want %.4f %.4f %.4f)",
		got["free"], got["paid"], got["subscription"], want["free"], want["paid"], want["subscription"])
	if !sameBills(got, want) {
		t.Fatalf("billed %v, want every thread's bill once: %v", got, want)
	}
	// Its tokens stay counted once, from the file.
	if slices.Contains(h.store.ThreadKeys(), local) || h.srv.Fetched()[local] != 0 {
		t.Fatal("the server source counted a thread a local file counts")
	}
	if tokensOf(files) != localTokens {
		t.Fatal("the local thread's tokens moved")
	}
	if h.owners.Owner(local) != store.SourceThreads {
		t.Fatalf("owner %q", h.owners.Owner(local))
	}

	// Idle: the bill is not asked for again.
	h.requests()
	h.clk.Advance(time.Minute)
	h.syncOK()
	if r := h.requests(); r[MethodThreadDisplayCostInfo] != 0 {
		t.Fatalf("an idle sync read %d bills", r[MethodThreadDisplayCostInfo])
	}

	// The local thread changes on the server: its bill grows and is read
	// again, the growth counted once.
	h.srv.AppendMessage(local, h.lastMessage(local), t0.Add(2*time.Minute).UnixMilli())
	bill(local, 7, 2)
	want["free"] += 0.0083 * 3
	want["paid"] += 0.041 * 2
	want["subscription"] += 0.033 * 4
	h.clk.Advance(time.Minute)
	h.syncOK()
	if got := billedByKind(h.store); !sameBills(got, want) {
		t.Fatalf("after the local thread's bill grew: billed %v, want %v", got, want)
	}
	if slices.Contains(h.store.ThreadKeys(), local) || h.srv.Fetched()[local] != 0 {
		t.Fatal("the server source counted the local thread after it changed")
	}

	// A restart from the saved state: nothing more is billed, and the
	// bill is not read again while the thread does not change.
	raw, err := json.Marshal(h.store.Export())
	if err != nil {
		t.Fatal(err)
	}
	var st store.State
	if err := json.Unmarshal(raw, &st); err != nil {
		t.Fatal(err)
	}
	h.owners = store.NewOwners()
	h.owners.Seed(store.SourceThreads, files.ThreadKeys())
	restored := newServerStore(h.owners, h.clk)
	if err := restored.Import(&st); err != nil {
		t.Fatal(err)
	}
	h.owners.Seed(store.SourceAmpServer, restored.ThreadKeys())
	if h.owners.Owner(local) != store.SourceThreads {
		t.Fatalf("after the restart the local thread's owner is %q", h.owners.Owner(local))
	}
	h.store = restored
	h.sync = h.newSyncer(restored)
	h.requests()
	h.clk.Advance(time.Minute)
	h.syncOK()
	if got := billedByKind(h.store); !sameBills(got, want) {
		t.Fatalf("after a restart: billed %v, want %v", got, want)
	}
	// One bill at most: the entitlement window of the newest thread,
	// asked for once after a restart.
	if r := h.requests(); r[MethodThreadDisplayCostInfo] > 1 {
		t.Fatalf("a sync after the restart read %d bills", r[MethodThreadDisplayCostInfo])
	}
}
