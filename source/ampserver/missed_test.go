package ampserver

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/amp-exporter/amp-exporter/internal/clock"
	"github.com/amp-exporter/amp-exporter/internal/testsupport/ampservertest"
	"github.com/amp-exporter/amp-exporter/store"
)

// Changes a sync must not miss: a rewrite before the window, a thread
// that grows under the `v` it was counted at, a thread listed twice, a
// tail out of order.

// plainThread is a thread of finished exchanges (a prompt and one answer
// each) whose answers' output tokens a test sets, with protocol ids.
type plainThread struct {
	id   string
	msgs []map[string]any
	at   int64 // epoch ms of the next message
}

func newPlainThread(id string, outputs ...int) *plainThread {
	th := &plainThread{id: id, at: t0.UnixMilli()}
	for _, out := range outputs {
		th.exchange(out)
	}
	return th
}

// exchange appends a prompt and its finished answer of out output tokens.
func (th *plainThread) exchange(out int) {
	n := len(th.msgs)
	th.msgs = append(th.msgs, map[string]any{"role": "user", "messageId": fmt.Sprintf("M-prompt%014d", n),
		"content": []any{map[string]any{"type": "text", "text": fmt.Sprintf("prompt %d", n)}},
		"meta":    map[string]any{"sentAt": th.at}})
	th.at += 3000
	th.msgs = append(th.msgs, map[string]any{"role": "assistant", "messageId": fmt.Sprintf("M-answer%014d", n+1),
		"content": []any{map[string]any{"type": "text", "text": "ok"}},
		"state":   map[string]any{"type": "complete", "stopReason": "end_turn"},
		"usage": map[string]any{"model": "claude-sonnet-4-5-20250929", "maxInputTokens": 200000,
			"inputTokens": 10, "outputTokens": out, "timestamp": time.UnixMilli(th.at).UTC().Format(time.RFC3339Nano)}})
	th.at += 60_000
}

// addOutput rewrites the answer of the i-th exchange: out more tokens.
func (th *plainThread) addOutput(i, out int) {
	u := th.msgs[2*i+1]["usage"].(map[string]any)
	u["outputTokens"] = u["outputTokens"].(int) + out
}

func (th *plainThread) put(t *testing.T, srv *ampservertest.Server) {
	t.Helper()
	b, err := json.Marshal(map[string]any{"v": 1, "id": th.id, "created": t0.UnixMilli(), "agentMode": "smart", "messages": th.msgs})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := srv.Put(b, th.at); err != nil {
		t.Fatal(err)
	}
}

// seriesSum adds up a thread's series of family fam (and token type l2,
// when not empty).
func seriesSum(s *store.ThreadStore, id string, fam store.Family, l2 string) int64 {
	var n int64
	for _, sv := range s.Export().Threads[id].Series {
		if sv.Family == string(fam) && (l2 == "" || sv.L2 == l2) {
			n += sv.Value
		}
	}
	return n
}

func outputTokens(s *store.ThreadStore, id string) int64 {
	return seriesSum(s, id, store.FamTokens, "output")
}

const missedID = "T-00000027-aaaa-7bbb-8ccc-000000000001"

// syncOnce runs one sync that must complete.
func syncOnce(t *testing.T, w *windowSyncer, what string) Stats {
	t.Helper()
	st, err := w.sync.Sync(context.Background())
	if err != nil || !st.Complete {
		t.Fatalf("%s: sync %+v: %v", what, st, err)
	}
	return st
}

// TestRewriteBeforeWindowReadAtFullListing: an answer far before the
// window gains 5,000 output tokens while an exchange is appended (one new
// `v`). The routine sync reads the window (5,403 output tokens, the
// rewrite unseen); the thread's `v` is then the counted one, yet the next
// full listing reads it whole (10,403, what the document holds), also
// when the exporter restarted in between (the first sync after a restart
// is a full listing). Before, the full listing skipped it for good.
func TestRewriteBeforeWindowReadAtFullListing(t *testing.T) {
	for _, restart := range []bool{false, true} {
		t.Run(fmt.Sprintf("restart=%v", restart), func(t *testing.T) {
			srv := ampservertest.New(testKey, "alice@example.com")
			defer srv.Close()
			clk := clock.NewFake(t0)
			outs := make([]int, 40)
			for i := range outs {
				outs[i] = 125 // 5,000 in all
			}
			th := newPlainThread(missedID, outs...)
			th.put(t, srv)
			w := newWindowSyncer(t, srv, clk, 0, nil)
			syncOnce(t, w, "first sync")
			if got := outputTokens(w.store, missedID); got != 5000 {
				t.Fatalf("first sync: %d output tokens, want 5000", got)
			}
			clk.Advance(time.Minute)
			th.addOutput(1, 5000)
			th.exchange(403)
			th.put(t, srv)
			syncOnce(t, w, "routine sync")
			if ws := w.sync.WindowStats(); ws.Windows != 1 || ws.Refused != 0 {
				t.Fatalf("the change was not read by window: %+v", ws)
			}
			if got := outputTokens(w.store, missedID); got != 5403 {
				t.Fatalf("after the window: %d output tokens, want 5403 (the rewrite before the window unseen)", got)
			}
			if restart {
				w = w.restarted(t, srv, clk, 0)
			} else {
				clk.Advance(6 * time.Hour)
			}
			st := syncOnce(t, w, "full listing")
			if got := outputTokens(w.store, missedID); got != 10403 {
				t.Fatalf("after the full listing: %d output tokens, the document holds 10403 (%+v)", got, st)
			}
			if !st.Full || st.Fetched != 1 {
				t.Fatalf("full listing %+v: want the thread read", st)
			}
			// Read whole once: then by window again, and an idle thread is
			// not read at the full listings that follow.
			clk.Advance(6 * time.Hour)
			if st := syncOnce(t, w, "idle full listing"); st.Fetched != 0 {
				t.Fatalf("a thread read whole since it last changed was read again: %+v", st)
			}
			clk.Advance(time.Minute)
			th.exchange(7)
			th.put(t, srv)
			before := w.sync.WindowStats().Windows
			syncOnce(t, w, "growth")
			if w.sync.WindowStats().Windows != before+1 || outputTokens(w.store, missedID) != 10410 {
				t.Fatalf("growth after the whole read: windows %+v, %d output tokens (want 10410)",
					w.sync.WindowStats(), outputTokens(w.store, missedID))
			}
		})
	}
}

// TestGrowthUnderSameVersionRead: a thread whose listing's messageCount
// and last interaction move while its `v` does not is read (5,203 output
// tokens, what the document holds), at the routine sync. Before, it was
// skipped at every sync and full listing (5,061).
func TestGrowthUnderSameVersionRead(t *testing.T) {
	srv := ampservertest.New(testKey, "alice@example.com")
	defer srv.Close()
	clk := clock.NewFake(t0)
	outs := make([]int, 40)
	for i := range outs {
		outs[i] = 125
	}
	outs[0] = 186 // 5,061 in all
	th := newPlainThread(missedID, outs...)
	th.put(t, srv)
	srv.HoldVersion(missedID, true)
	w := newWindowSyncer(t, srv, clk, 0, nil)
	syncOnce(t, w, "first sync")
	if got := outputTokens(w.store, missedID); got != 5061 {
		t.Fatalf("first sync: %d output tokens, want 5061", got)
	}
	rec, _ := w.store.File(store.AmpServerPath(missedID))
	clk.Advance(time.Minute)
	th.exchange(142)
	th.put(t, srv)
	st := syncOnce(t, w, "routine sync")
	if got := outputTokens(w.store, missedID); got != 5203 {
		t.Fatalf("after the routine sync: %d output tokens, the document holds 5203 (%+v)", got, st)
	}
	if st.Fetched != 1 {
		t.Fatalf("routine sync %+v: the thread grew (messageCount and last interaction moved), want it read", st)
	}
	now, _ := w.store.File(store.AmpServerPath(missedID))
	if now.Version.AmpServerV != rec.Version.AmpServerV {
		t.Fatalf("the stand-in bumped v (%d, was %d): not the case tested", now.Version.AmpServerV, rec.Version.AmpServerV)
	}
	clk.Advance(time.Minute)
	if st := syncOnce(t, w, "idle sync"); st.Fetched != 0 {
		t.Fatalf("read again with nothing changed: %+v", st)
	}
}

// TestListedTwiceNewestWins: a listing that shows a thread first at the
// `v` it was counted at and then at a newer one: the newer entry is the
// one weighed, and the change is read. Before, the stale entry won (at
// every sync and full listing).
func TestListedTwiceNewestWins(t *testing.T) {
	srv := ampservertest.New(testKey, "alice@example.com")
	defer srv.Close()
	clk := clock.NewFake(t0)
	th := newPlainThread(missedID, 100, 200, 300)
	th.put(t, srv)
	w := newWindowSyncer(t, srv, clk, 0, nil)
	syncOnce(t, w, "first sync")
	srv.ListStale(missedID, true) // listed as counted, then as it is
	want := int64(600)
	for _, full := range []bool{false, true} {
		clk.Advance(time.Minute)
		if full {
			clk.Advance(6 * time.Hour)
		}
		th.exchange(1000)
		want += 1000
		th.put(t, srv)
		st := syncOnce(t, w, "sync")
		if st.Listed != 1 || st.Fetched != 1 {
			t.Fatalf("full=%v: sync %+v: want the thread listed once and read", full, st)
		}
		if got := outputTokens(w.store, missedID); got != want {
			t.Fatalf("full=%v: %d output tokens, the document holds %d", full, got, want)
		}
		srv.ListStale(missedID, true)
	}
	// Listed twice, nothing changed: not read.
	clk.Advance(time.Minute)
	if st := syncOnce(t, w, "idle sync"); st.Fetched != 0 {
		t.Fatalf("read with nothing changed: %+v", st)
	}
}

// TestSwappedTailCountsAsWhole: a thread that gains its 44th exchange is
// read by window while the server's getThreadTail answers its last two
// messages swapped (the answer before its prompt). The window counts 44
// exchanges, as a whole read of the pages does. Before, the tail's first
// message was checked and the rest trusted: 43.
func TestSwappedTailCountsAsWhole(t *testing.T) {
	srv := ampservertest.New(testKey, "alice@example.com")
	defer srv.Close()
	clk := clock.NewFake(t0)
	outs := make([]int, 43)
	for i := range outs {
		outs[i] = 100
	}
	th := newPlainThread(missedID, outs...)
	th.put(t, srv)
	win := newWindowSyncer(t, srv, clk, 0, nil)
	whole := newWindowSyncer(t, srv, clk, -1, nil)
	exchanges := func(w *windowSyncer) int64 { return seriesSum(w.store, missedID, store.FamExchangeBucket, "") }
	syncOnce(t, win, "first sync")
	syncOnce(t, whole, "first sync")
	if got := exchanges(win); got != 43 {
		t.Fatalf("first sync: %d exchanges, want 43", got)
	}
	srv.SwapTail(missedID, true)
	clk.Advance(time.Minute)
	th.exchange(100)
	th.put(t, srv)
	syncOnce(t, win, "by window")
	syncOnce(t, whole, "whole")
	if ws := win.sync.WindowStats(); ws.Windows+ws.Refused != 1 {
		t.Fatalf("the thread was not read by window: %+v", ws)
	}
	if got, want := exchanges(win), exchanges(whole); got != want || want != 44 {
		t.Fatalf("by window %d exchanges, whole %d (want 44)", got, want)
	}
}
