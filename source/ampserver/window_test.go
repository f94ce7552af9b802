package ampserver

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/amp-exporter/amp-exporter/internal/testsupport/testsize"

	"github.com/amp-exporter/amp-exporter/internal/clock"
	"github.com/amp-exporter/amp-exporter/internal/testsupport/ampservertest"
	"github.com/amp-exporter/amp-exporter/store"
)

// simThread is a server thread a test changes the way the Amp CLI does:
// exchanges appended, its last messages edited (an answer streaming, a
// tool result filled in), a message cancelled away, an earlier prompt
// edited and resent (the thread truncated there).
type simThread struct {
	id      string
	created int64
	msgs    []map[string]any
	// protocol ids ("M-…" messageIds) or numeric messageIds equal to the
	// index + 1, which a message after an edit takes over (the hard case
	// for a reader that checks ids).
	protocol bool
	seq      int
}

func (th *simThread) idFor(r *rand.Rand) any {
	if th.protocol {
		th.seq++
		return fmt.Sprintf("M-%08d%014d", r.IntN(1e8), th.seq)
	}
	return len(th.msgs) + 1
}

var simModels = []string{"claude-sonnet-4-5-20250929", "claude-opus-4-5-20251101", "claude-haiku-4-5-20251001"}
var simTools = []string{"Bash", "Read", "edit_file", "Task", "finder"}

// exchange appends a prompt and its answers: assistant messages, some
// calling tools whose results follow; the last one may still stream.
func (th *simThread) exchange(r *rand.Rand, at int64) {
	th.msgs = append(th.msgs, map[string]any{"role": "user", "messageId": th.idFor(r),
		"content": []any{map[string]any{"type": "text", "text": fmt.Sprintf("prompt %d", r.IntN(1e6))}},
		"meta":    map[string]any{"sentAt": at}})
	steps := 1 + r.IntN(3)
	for j := range steps {
		at += int64(1000 + r.IntN(60_000))
		last := j == steps-1
		a := map[string]any{"role": "assistant", "messageId": th.idFor(r)}
		content := []any{map[string]any{"type": "text", "text": "ok"}}
		var tool string
		if !last {
			tool = fmt.Sprintf("toolu_%d_%d", len(th.msgs), r.IntN(1e9))
			content = append(content, map[string]any{"type": "tool_use", "complete": true, "id": tool, "name": simTools[r.IntN(len(simTools))], "input": map[string]any{}})
		}
		a["content"] = content
		stop := "end_turn"
		if !last {
			stop = "tool_use"
		}
		if last && r.IntN(4) == 0 {
			a["state"] = map[string]any{"type": "streaming"}
		} else {
			a["state"] = map[string]any{"type": "complete", "stopReason": stop}
		}
		a["usage"] = simUsage(r, at)
		th.msgs = append(th.msgs, a)
		if tool != "" {
			status := "done"
			if r.IntN(5) == 0 {
				status = "in-progress"
			}
			th.msgs = append(th.msgs, map[string]any{"role": "user", "messageId": th.idFor(r),
				"content": []any{map[string]any{"type": "tool_result", "toolUseID": tool, "run": map[string]any{"status": status}}}})
		}
	}
}

func simUsage(r *rand.Rand, at int64) map[string]any {
	in, cr := 10+r.IntN(5000), r.IntN(150_000)
	return map[string]any{"model": simModels[r.IntN(len(simModels))], "maxInputTokens": 200000,
		"inputTokens": in, "outputTokens": 1 + r.IntN(4000), "cacheCreationInputTokens": r.IntN(3000),
		"cacheReadInputTokens": cr, "totalInputTokens": in + cr,
		"timestamp": time.UnixMilli(at).UTC().Format(time.RFC3339Nano)}
}

// editTail changes one of the last n messages as the CLI does while a turn
// goes on: an answer streams on (more tokens) or finishes, a tool result
// gets its status.
func (th *simThread) editTail(r *rand.Rand, n int, at int64) {
	if len(th.msgs) == 0 {
		return
	}
	i := len(th.msgs) - 1 - r.IntN(min(n, len(th.msgs)))
	m := th.msgs[i]
	switch {
	case m["role"] == "assistant":
		u := simUsage(r, at)
		m["usage"] = u
		if r.IntN(2) == 0 {
			m["state"] = map[string]any{"type": "complete", "stopReason": "end_turn"}
		} else if r.IntN(3) == 0 {
			m["state"] = map[string]any{"type": "cancelled"}
		}
	default:
		for _, c := range m["content"].([]any) {
			if b := c.(map[string]any); b["type"] == "tool_result" {
				b["run"] = map[string]any{"status": []string{"done", "error", "cancelled"}[r.IntN(3)]}
			}
		}
	}
}

func (th *simThread) doc() []byte {
	b, err := json.Marshal(map[string]any{"v": 1, "id": th.id, "created": th.created, "agentMode": "smart", "messages": th.msgs})
	if err != nil {
		panic(err)
	}
	return b
}

// windowSyncer is a syncer over its own store, as an exporter with its own
// --storage.path.
type windowSyncer struct {
	store *store.ThreadStore
	sync  *Syncer
}

func newWindowSyncer(t *testing.T, srv *ampservertest.Server, clk *clock.Fake, overlap int, st *store.ThreadStore) *windowSyncer {
	t.Helper()
	if st == nil {
		st = store.NewThreadStore(store.StoreOptions{Now: clk.Now})
	}
	c := newTestClient(t, srv.URL, &recorder{}, nil)
	return &windowSyncer{store: st, sync: NewSyncer(c, SyncConfig{WindowOverlap: overlap, FullInterval: 6 * time.Hour, Billed: true}, st, SyncOptions{Clock: clk})}
}

// restarted is the syncer an exporter restarted with --storage.path has:
// its store restored from what the state log saved (ExportDelta, record
// by record), a new Syncer.
func (w *windowSyncer) restarted(t *testing.T, srv *ampservertest.Server, clk *clock.Fake, overlap int) *windowSyncer {
	t.Helper()
	fresh := store.NewThreadStore(store.StoreOptions{Now: clk.Now})
	full := w.store.Export()
	for key, ts := range full.Threads {
		// Through JSON, as the state log keeps it.
		b, err := json.Marshal(ts)
		if err != nil {
			t.Fatal(err)
		}
		var back store.ThreadState
		if err := json.Unmarshal(b, &back); err != nil {
			t.Fatal(err)
		}
		if _, err := fresh.ImportThread(key, back); err != nil {
			t.Fatal(err)
		}
	}
	for p, f := range full.Files {
		if err := fresh.ImportFile(p, f); err != nil {
			t.Fatal(err)
		}
	}
	return newWindowSyncer(t, srv, clk, overlap, fresh)
}

// counted is what a store counted, without how it reads its threads next
// (the window) and when it read their days' bills (a restart asks the
// days it read before they ended once more: daybills.go).
func counted(s *store.ThreadStore) map[string]store.ThreadState {
	out := map[string]store.ThreadState{}
	for k, ts := range s.Export().Threads {
		ts.Window = nil
		// When the thread's series grew (its ledger, store/ledger.go) can
		// differ between a store reading windows and one reading whole
		// threads when a rewrite before the window meets truncations
		// (docs/ledger.md): how much both count is held here, that each
		// ledger adds up to it in the store's tests.
		ts.Ledger, ts.LedgerRetired = nil, nil
		ts.DayBills = slices.Clone(ts.DayBills)
		for i := range ts.DayBills {
			ts.DayBills[i].ReadAt = 0
		}
		out[k] = ts
	}
	return out
}

// rewriteEarly changes an answer in the first third of the thread, far
// before any window (its output tokens grow), as a server-side rewrite
// would; the CLI's own edits touch only the last messages.
func (th *simThread) rewriteEarly(r *rand.Rand) bool {
	var answers []int
	for i, m := range th.msgs[:len(th.msgs)/3] {
		if m["role"] == "assistant" {
			answers = append(answers, i)
		}
	}
	if len(answers) == 0 {
		return false
	}
	u := th.msgs[answers[r.IntN(len(answers))]]["usage"].(map[string]any)
	u["outputTokens"] = u["outputTokens"].(int) + 1 + r.IntN(5000)
	return true
}

// TestWindowSameAsWhole: any sequence of appends, edits of the last
// messages, cancelled messages, truncations (an earlier prompt edited and
// resent), full syncs and restarts counts exactly what reading every
// changed thread whole counts: the same series, retired parts, pins and
// last activity per thread, after every sync. The exporter that reads by
// window is served by a server that lies the ways a server can: a thread
// changed without a new `v` (its message count and last interaction
// move), a thread listed twice (first at a stale `v`), a tail whose last
// two messages are swapped; the exporter that reads whole is served the
// same threads honestly. A rewrite far before the window (which a window
// cannot see) followed by an idle period is counted by the next full
// listing, also the first after a restart.
//
// Two seeds at the short size (go test ./...), six at the long (make test).
func TestWindowSameAsWhole(t *testing.T) {
	t.Parallel() // alongside the tests that mostly wait, which leave a core idle
	// One seed at the short size: each one's 150 steps take every
	// operation below several times (the log says how often). Seed 3,
	// whose steps catch a store that no longer refuses a window missing
	// an item it had; seeds 1 and 2, the short size before, do not. The
	// long size runs six.
	seeds := []uint64{3}
	if testsize.Long() {
		seeds = []uint64{1, 2, 3, 4, 5, 6}
	}
	for _, seed := range seeds {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			r := rand.New(rand.NewPCG(seed, 18))
			srv := ampservertest.New(testKey, "alice@example.com") // lies
			defer srv.Close()
			honest := ampservertest.New(testKey, "alice@example.com")
			defer honest.Close()
			put := func(th *simThread, at int64) {
				t.Helper()
				for _, s := range []*ampservertest.Server{srv, honest} {
					if _, err := s.Put(th.doc(), at); err != nil {
						t.Fatal(err)
					}
				}
			}
			clk := clock.NewFake(t0)
			overlap := 1 + r.IntN(6)
			threads := make([]*simThread, 4)
			for i := range threads {
				th := &simThread{id: fmt.Sprintf("T-0000000%d-aaaa-7bbb-8ccc-%012d", i, seed), created: t0.UnixMilli() - int64(i)*1000, protocol: i%2 == 1}
				for range 3 + r.IntN(10) {
					th.exchange(r, clk.Now().UnixMilli())
				}
				threads[i] = th
				put(th, clk.Now().UnixMilli())
			}
			win := newWindowSyncer(t, srv, clk, overlap, nil)
			whole := newWindowSyncer(t, honest, clk, -1, nil)
			ops := map[string]int{}
			var ws WindowStats // over the restarts
			restart := func() {
				ws.Windows += win.sync.WindowStats().Windows
				ws.Refused += win.sync.WindowStats().Refused
				win = win.restarted(t, srv, clk, overlap)
			}
			syncBoth := func(step int, compare bool) {
				t.Helper()
				for _, s := range []*windowSyncer{win, whole} {
					if st, err := s.sync.Sync(context.Background()); err != nil || !st.Complete {
						t.Fatalf("step %d: sync %+v: %v", step, st, err)
					}
				}
				if !compare {
					return
				}
				if got, want := counted(win.store), counted(whole.store); !reflect.DeepEqual(got, want) {
					t.Fatalf("step %d (%v):\n%s", step, ops, dump(got, want))
				}
				if got, want := win.store.Snapshot().Totals(), whole.store.Snapshot().Totals(); !reflect.DeepEqual(got, want) {
					t.Fatalf("step %d: totals differ", step)
				}
			}
			for step := range 150 {
				clk.Advance(time.Minute)
				now := clk.Now().UnixMilli()
				th := threads[r.IntN(len(threads))]
				// The lies, each now and then: a stale entry listed before
				// the thread's own, a tail out of order, a change under the
				// `v` counted.
				if r.IntN(6) == 0 {
					ops["listed twice"]++
					srv.ListStale(th.id, true)
				} else if r.IntN(3) == 0 {
					srv.ListStale(th.id, false)
				}
				if r.IntN(5) == 0 {
					ops["swapped tail"]++
					srv.SwapTail(th.id, true)
				} else if r.IntN(3) == 0 {
					srv.SwapTail(th.id, false)
				}
				hold := r.IntN(4) == 0
				srv.HoldVersion(th.id, hold)
				op := r.IntN(22)
				switch {
				case op < 8:
					ops["append"]++
					th.exchange(r, now)
				case op < 13:
					ops["edit last"]++
					th.editTail(r, overlap, now)
				case op < 14:
					ops["cancel last"]++
					if len(th.msgs) > 1 {
						th.msgs = th.msgs[:len(th.msgs)-1]
					}
				case op < 16:
					ops["edit and resend"]++
					var prompts []int
					for i, m := range th.msgs {
						if m["role"] == "user" && m["meta"] != nil {
							prompts = append(prompts, i)
						}
					}
					th.msgs = th.msgs[:prompts[r.IntN(len(prompts))]]
					th.exchange(r, now)
				case op < 17:
					ops["full sync"]++
					clk.Advance(6 * time.Hour)
				case op < 18:
					ops["restart"]++
					restart()
				case op < 20:
					ops["append two"]++
					th.exchange(r, now)
					th.exchange(r, now+1)
				case op < 21:
					// A rewrite before the window with an exchange appended,
					// then an idle period up to the next full listing (or a
					// restart): the window misses the rewrite until then.
					ops["rewrite early, idle"]++
					th.rewriteEarly(r)
					th.exchange(r, now)
					put(th, now)
					syncBoth(step, false)
					if r.IntN(2) == 0 {
						restart()
					} else {
						clk.Advance(6 * time.Hour)
					}
				default:
					ops["idle"]++
				}
				if op < 16 || op == 18 || op == 19 {
					put(th, now)
					for _, s := range []*ampservertest.Server{srv, honest} {
						s.SetCost(th.id, map[string]any{"totalCostUSD": float64(step) / 100})
					}
				}
				srv.HoldVersion(th.id, false)
				syncBoth(step, true)
			}
			ws.Windows += win.sync.WindowStats().Windows
			ws.Refused += win.sync.WindowStats().Refused
			t.Logf("overlap %d, ops %v, windows %+v", overlap, ops, ws)
			if ws.Windows == 0 || ws.Refused == 0 {
				t.Fatalf("the sequence must read threads by window (%d) and refuse some windows (%d)", ws.Windows, ws.Refused)
			}
		})
	}
}

func dump(got, want map[string]store.ThreadState) string {
	var b strings.Builder
	for k, g := range got {
		w := want[k]
		if reflect.DeepEqual(g, w) {
			continue
		}
		fmt.Fprintf(&b, "thread %s:\n", k)
		if !reflect.DeepEqual(g.Series, w.Series) {
			wv := map[string]int64{}
			for _, sv := range w.Series {
				wv[sv.Family+"/"+sv.L1+"/"+sv.L2] = sv.Value
			}
			for _, sv := range g.Series {
				k := sv.Family + "/" + sv.L1 + "/" + sv.L2
				if wv[k] != sv.Value {
					fmt.Fprintf(&b, " %s: by window %d, whole %d\n", k, sv.Value, wv[k])
				}
				delete(wv, k)
			}
			for k, v := range wv {
				fmt.Fprintf(&b, " %s: by window -, whole %d\n", k, v)
			}
		}
		if !reflect.DeepEqual(g.Retired, w.Retired) {
			fmt.Fprintf(&b, " retired by window %v\n retired whole %v\n", g.Retired, w.Retired)
		}
		if !reflect.DeepEqual(g.Pins, w.Pins) {
			fmt.Fprintf(&b, " pins differ\n")
		}
		if g.LastActivity != w.LastActivity {
			fmt.Fprintf(&b, " last activity %d, %d\n", g.LastActivity, w.LastActivity)
		}
	}
	return b.String()
}
