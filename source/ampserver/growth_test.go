package ampserver

import (
	"context"
	"encoding/json"
	"math/rand/v2"
	"reflect"
	"testing"
	"time"

	"github.com/amp-exporter/amp-exporter/internal/clock"
	"github.com/amp-exporter/amp-exporter/internal/testsupport/ampservertest"
	"github.com/amp-exporter/amp-exporter/internal/testsupport/testsize"
	"github.com/amp-exporter/amp-exporter/internal/testsupport/threadgen"
)

// growingThread serves one generated thread of about size bytes; grow
// appends one exchange to it (a prompt, answers calling tools, their
// results, with protocol ids), as a user working in it does between two
// syncs.
type growingThread struct {
	srv *ampservertest.Server
	id  string
	r   *rand.Rand
	sim simThread
}

func newGrowingThread(tb testing.TB, size int64) *growingThread {
	tb.Helper()
	srv := ampservertest.New(testKey, "alice@example.com")
	g := threadgen.New(threadgen.Options{Threads: 1, TotalBytes: size, Seed: 18})
	if err := srv.PutGenerated(g, 0, 1); err != nil {
		tb.Fatal(err)
	}
	return &growingThread{srv: srv, id: srv.IDs()[0], r: rand.New(rand.NewPCG(18, 5)), sim: simThread{protocol: true}}
}

// grow appends one exchange whose tool results carry out KB of output.
func (g *growingThread) grow(at int64, out int) {
	g.sim.msgs = g.sim.msgs[:0]
	g.sim.exchange(g.r, at)
	for _, m := range g.sim.msgs {
		if m["role"] == "user" && m["meta"] == nil {
			text := make([]byte, out<<10)
			for i := range text {
				text[i] = "abcdefghij klmnopqrstuvwxyz\n"[g.r.IntN(28)]
			}
			m["content"].([]any)[0].(map[string]any)["run"] = map[string]any{"status": "done", "result": map[string]any{"output": string(text)}}
		}
		b, _ := json.Marshal(m)
		g.srv.AppendMessage(g.id, b, at)
	}
}

// TestGrowingThreadByWindow: a 5 MB thread that grows by one exchange per
// sync costs at most 2% of its size on the wire per sync, and counts what a
// whole read counts after every growth, after a truncation (an early prompt
// edited and resent: read whole, then by window again) and after a restart
// from the saved state. The short size grows it 3 times before the
// truncation, the long 10.
func TestGrowingThreadByWindow(t *testing.T) {
	g := newGrowingThread(t, 5e6)
	defer g.srv.Close()
	clk := clock.NewFake(t0)
	win := newWindowSyncer(t, g.srv, clk, 0, nil)
	whole := newWindowSyncer(t, g.srv, clk, -1, nil)
	size := int64(len(g.srv.Document(g.id)))
	syncBoth := func(what string) (wire int64) {
		t.Helper()
		g.srv.Reset()
		if st, err := win.sync.Sync(context.Background()); err != nil || st.Fetched != 1 {
			t.Fatalf("%s: sync by window %+v: %v", what, st, err)
		}
		wire = g.srv.BytesServed()
		if st, err := whole.sync.Sync(context.Background()); err != nil || st.Fetched != 1 {
			t.Fatalf("%s: whole sync %+v: %v", what, st, err)
		}
		if got, want := counted(win.store), counted(whole.store); !reflect.DeepEqual(got, want) {
			t.Fatalf("%s: by window and whole differ:\n%s", what, dump(got, want))
		}
		return wire
	}
	syncBoth("first sync")
	var growths int64 = 3 // the short size; the long 10
	if testsize.Long() {
		growths = 10
	}
	for i := range growths {
		clk.Advance(time.Minute)
		g.grow(clk.Now().UnixMilli(), 4)
		if wire := syncBoth("growth"); wire > size/50 {
			t.Fatalf("growth %d: %d bytes on the wire for a thread of %d (more than 2%%)", i, wire, size)
		}
	}
	if ws := win.sync.WindowStats(); ws.Windows != growths || ws.Refused != 0 {
		t.Fatalf("window stats %+v, want %d windows", ws, growths)
	}
	// An early prompt edited and resent: the thread is cut there.
	var doc struct {
		Messages []json.RawMessage `json:"messages"`
	}
	if err := json.Unmarshal(g.srv.Document(g.id), &doc); err != nil {
		t.Fatal(err)
	}
	var head map[string]json.RawMessage
	_ = json.Unmarshal(g.srv.Document(g.id), &head)
	head["messages"], _ = json.Marshal(doc.Messages[:len(doc.Messages)/3])
	cut, _ := json.Marshal(head)
	clk.Advance(time.Minute)
	if _, err := g.srv.Put(cut, clk.Now().UnixMilli()); err != nil {
		t.Fatal(err)
	}
	g.grow(clk.Now().UnixMilli(), 4)
	syncBoth("truncation")
	if ws := win.sync.WindowStats(); ws.Refused != 1 {
		t.Fatalf("the truncated thread's window was not refused: %+v", ws)
	}
	// The first windows after it start at the last prompt 16 messages
	// before the end: in the generated thread's exchange that was cut (its
	// old messages, some large), until the new exchanges hold 16 messages.
	for i := range 8 {
		clk.Advance(time.Minute)
		g.grow(clk.Now().UnixMilli(), 4)
		if wire := syncBoth("growth after the truncation"); i == 7 && wire > size/50 {
			t.Fatalf("%d bytes on the wire after the truncation", wire)
		}
	}
	// A restart with the state saved: the first sync is a full listing,
	// and the thread was last counted from a window, so it is read whole
	// (what lies before the window is read again); then by window again.
	win = win.restarted(t, g.srv, clk, 0)
	clk.Advance(time.Minute)
	g.grow(clk.Now().UnixMilli(), 4)
	if wire := syncBoth("growth after a restart"); wire < size/50 {
		t.Fatalf("%d bytes on the wire after a restart: not read whole", wire)
	}
	clk.Advance(time.Minute)
	g.grow(clk.Now().UnixMilli(), 4)
	if wire := syncBoth("growth after a restart and a whole read"); wire > size/50 {
		t.Fatalf("%d bytes on the wire after a restart", wire)
	}
	if ws := win.sync.WindowStats(); ws.Windows != 1 {
		t.Fatalf("not read by window after a restart: %+v", ws)
	}
}
