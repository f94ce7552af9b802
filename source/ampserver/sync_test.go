package ampserver

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"maps"
	"net/http"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/amp-exporter/amp-exporter/internal/clock"
	"github.com/amp-exporter/amp-exporter/internal/testsupport/ampservertest"
	"github.com/amp-exporter/amp-exporter/internal/testsupport/threadgen"
	"github.com/amp-exporter/amp-exporter/internal/testsupport/threadtest"
	"github.com/amp-exporter/amp-exporter/parser/streamjson"
	"github.com/amp-exporter/amp-exporter/parser/thread"
	"github.com/amp-exporter/amp-exporter/store"
)

var t0 = time.Date(2026, 4, 10, 12, 0, 0, 0, time.UTC)

type harness struct {
	t      *testing.T
	srv    *ampservertest.Server
	store  *store.ThreadStore
	owners *store.Owners
	clk    *clock.Fake
	rec    *recorder
	sync   *Syncer
	cfg    SyncConfig
	log    *bytes.Buffer
}

// newHarness serves n generated threads (listed newest first: thread n-1
// first).
func newHarness(t *testing.T, n int, cfg SyncConfig) *harness {
	t.Helper()
	srv := ampservertest.New(testKey, "alice@example.com")
	t.Cleanup(srv.Close)
	g := threadgen.New(threadgen.Options{Threads: n, TotalBytes: int64(n) * 20_000, Seed: 11})
	if err := srv.PutGenerated(g, 0, n); err != nil {
		t.Fatal(err)
	}
	h := &harness{t: t, srv: srv, owners: store.NewOwners(), clk: clock.NewFake(t0), rec: &recorder{}, cfg: cfg, log: &bytes.Buffer{}}
	h.store = newServerStore(h.owners, h.clk)
	h.sync = h.newSyncer(h.store)
	return h
}

func newServerStore(o *store.Owners, clk clock.Clock) *store.ThreadStore {
	s := store.NewThreadStore(store.StoreOptions{Now: clk.Now})
	s.SetClaim(o, store.SourceAmpServer)
	return s
}

func (h *harness) newSyncer(store *store.ThreadStore) *Syncer {
	c := newTestClient(h.t, h.srv.URL, h.rec, nil)
	logger := slog.New(slog.NewTextHandler(h.log, &slog.HandlerOptions{Level: slog.LevelDebug}))
	return NewSyncer(c, h.cfg, store, SyncOptions{Owners: h.owners, Logger: logger, Clock: h.clk})
}

func (h *harness) syncOK() Stats {
	h.t.Helper()
	st, err := h.sync.Sync(context.Background())
	if err != nil {
		h.t.Fatalf("sync: %v", err)
	}
	if !st.Complete {
		h.t.Fatalf("sync incomplete: %+v", st)
	}
	return st
}

// want is what a store counts from the server's documents as they are
// now, read as local files would be.
func (h *harness) want(ids []string) map[string]store.ThreadState {
	h.t.Helper()
	local := store.NewThreadStore(store.StoreOptions{})
	p := thread.NewParser()
	for _, id := range ids {
		th, err := p.ParseBytes(h.srv.Document(id))
		if err != nil {
			h.t.Fatal(err)
		}
		local.Apply(store.AmpServerPath(id), store.FileVersion{}, thread.Summarize(th))
	}
	return local.Export().Threads
}

func countedThreads(s *store.ThreadStore) map[string]store.ThreadState {
	st := s.Export().Threads
	for k, v := range st {
		// The ledger's rows name series by their place in Series: they
		// follow the series left.
		place, kept := map[int64]int64{}, store.SeriesList{}
		for i, sv := range v.Series {
			if sv.Family != "billed_usd" {
				place[int64(i)] = int64(len(kept))
				kept = append(kept, sv)
			}
		}
		for _, rows := range [][]store.LedgerRow{v.Ledger, v.LedgerRetired} {
			for i, row := range rows {
				rows[i][1] = place[row[1]]
			}
		}
		if v.Window != nil {
			for i, row := range v.Window.Ledger {
				v.Window.Ledger[i][1] = place[row[1]]
			}
		}
		v.Series = kept
		st[k] = v
	}
	return st
}

// lastMessage returns a copy of a thread's last message, to append.
func (h *harness) lastMessage(id string) []byte {
	var doc struct {
		Messages []json.RawMessage `json:"messages"`
	}
	if err := json.Unmarshal(h.srv.Document(id), &doc); err != nil || len(doc.Messages) == 0 {
		h.t.Fatalf("thread %s: %v", id, err)
	}
	return doc.Messages[len(doc.Messages)-1]
}

func TestSyncFirstAndIncremental(t *testing.T) {
	h := newHarness(t, 12, SyncConfig{ListLimit: 5, MaxConcurrency: 3})
	ids := h.srv.IDs()

	st := h.syncOK()
	if !st.Full || st.Listed != 12 || st.Fetched != 12 || st.Pages != 3 {
		t.Fatalf("first sync %+v", st)
	}
	if got, want := countedThreads(h.store), h.want(ids); !reflect.DeepEqual(got, want) {
		t.Fatalf("first sync counts differ from the same documents read as files")
	}

	// Nothing changed: one page listed, nothing fetched.
	h.srv.Reset()
	h.clk.Advance(time.Minute)
	st = h.syncOK()
	if st.Full || st.Pages != 1 || st.Fetched != 0 {
		t.Fatalf("idle sync %+v", st)
	}
	if r := h.srv.Requests(); r[MethodGetThreadTail] != 0 || r[MethodGetThreadMessagesPage] != 0 || r[MethodListThreads] != 1 {
		t.Fatalf("idle sync requests %v", r)
	}

	// Two threads change: they move to the front, only they are fetched.
	h.srv.Reset()
	now := t0.Add(2 * time.Minute).UnixMilli()
	h.srv.AppendMessage(ids[7], h.lastMessage(ids[7]), now)
	h.srv.AppendMessage(ids[9], h.lastMessage(ids[9]), now+1)
	h.clk.Advance(time.Minute)
	st = h.syncOK()
	// The first page holds the changed threads, the second is all old:
	// listing stops there.
	if st.Fetched != 2 || st.Pages != 2 {
		t.Fatalf("incremental sync %+v", st)
	}
	fetched := h.srv.Fetched()
	if len(fetched) != 2 || fetched[ids[7]] != 1 || fetched[ids[9]] != 1 {
		t.Fatalf("fetched %v, want only the two changed threads", fetched)
	}
	if got, want := countedThreads(h.store), h.want(ids); !reflect.DeepEqual(got, want) {
		t.Fatalf("incremental counts differ from the documents")
	}
	r := h.srv.Requests()
	if r[MethodThreadDisplayCostInfo] != 0 {
		t.Errorf("billing asked without Billed: %v", r)
	}
}

// Counting rules 5 and 20 (docs/counting.md): a restart on saved state
// fetches no thread whose version did not change.
func TestSyncRestartWithStateFetchesNothing(t *testing.T) {
	h := newHarness(t, 8, SyncConfig{ListLimit: 500})
	h.syncOK()
	state, err := json.Marshal(h.store.Export())
	if err != nil {
		t.Fatal(err)
	}
	var st store.State
	if err := json.Unmarshal(state, &st); err != nil {
		t.Fatal(err)
	}
	// A new process: new store from the saved state, new syncer.
	h.owners = store.NewOwners()
	restored := newServerStore(h.owners, h.clk)
	if err := restored.Import(&st); err != nil {
		t.Fatal(err)
	}
	h.owners.Seed(store.SourceAmpServer, restored.ThreadKeys())
	h.sync = h.newSyncer(restored)
	h.srv.Reset()
	stats := h.syncOK()
	if stats.Fetched != 0 || h.srv.Requests()[MethodGetThreadTail] != 0 {
		t.Fatalf("restart fetched %d threads (%v)", stats.Fetched, h.srv.Requests())
	}
	if !reflect.DeepEqual(restored.Export(), h.store.Export()) {
		t.Fatal("restored store differs")
	}
}

func TestSyncDeletedAndArchived(t *testing.T) {
	h := newHarness(t, 6, SyncConfig{FullInterval: time.Hour})
	ids := h.srv.IDs()
	h.syncOK()
	before := h.store.Snapshot()
	counted := countedThreads(h.store)
	h.srv.Delete(ids[2])
	h.srv.SetArchived(ids[3], true)
	// ids[4] still exists, but the paged listing skips it (a deletion
	// while paging moved it across a page boundary): it is not gone.
	h.srv.SkipInListing(ids[4])
	// A routine sync does not notice; the full one an hour later does.
	h.clk.Advance(time.Minute)
	if st := h.syncOK(); st.Gone != 0 || st.Full {
		t.Fatalf("routine sync %+v", st)
	}
	h.clk.Advance(time.Hour)
	st := h.syncOK()
	if !st.Full || st.Gone != 2 {
		t.Fatalf("full sync %+v", st)
	}
	if got := len(h.store.AmpServerPaths()); got != 4 {
		t.Fatalf("%d present, want 4", got)
	}
	after := h.store.Snapshot()
	total := func(m map[store.ThreadsKey]int) (n int) {
		for _, v := range m {
			n += v
		}
		return n
	}
	if total(before.Threads) != 6 || total(after.Threads) != 4 {
		t.Fatalf("amp_threads %v → %v", before.Threads, after.Threads)
	}
	// Counters keep the deleted threads, every series of them.
	if !reflect.DeepEqual(countedThreads(h.store), counted) {
		t.Fatal("counts of deleted threads were dropped")
	}
}

func TestSyncIncludeArchivedAndInstallation(t *testing.T) {
	h := newHarness(t, 2, SyncConfig{IncludeArchived: true, InstallationID: "inst-1"})
	h.syncOK()
	calls := h.srv.ListCalls()
	if len(calls) != 1 || !calls[0].IncludeArchived || calls[0].InstallationID != "inst-1" || calls[0].Limit != 500 {
		t.Fatalf("list calls %+v", calls)
	}
}

func TestSyncHalfFailedResumes(t *testing.T) {
	h := newHarness(t, 6, SyncConfig{MaxConcurrency: 1})
	ids := h.srv.IDs()
	// One thread's tail fails more often than the client retries.
	for range 4 {
		h.srv.Fail(MethodGetThreadTail, ampservertest.Fault{Status: 500})
	}
	st, err := h.sync.Sync(context.Background())
	if err == nil || st.Complete || st.Fetched != 5 || st.Failed != 1 {
		t.Fatalf("half-failed sync: %+v, %v", st, err)
	}
	h.clk.Advance(time.Minute)
	h.srv.Reset()
	st = h.syncOK()
	if st.Fetched != 1 {
		t.Fatalf("resumed sync %+v", st)
	}
	if got, want := countedThreads(h.store), h.want(ids); !reflect.DeepEqual(got, want) {
		t.Fatal("counts after resuming differ from the documents")
	}
}

func TestSyncServerTrouble(t *testing.T) {
	h := newHarness(t, 4, SyncConfig{})
	ids := h.srv.IDs()
	h.srv.Fail(MethodListThreads, ampservertest.Fault{Status: 429, RetryAfter: "2"})
	h.srv.Fail(MethodGetThreadTail, ampservertest.Fault{Status: 503})
	h.srv.Vanish(ids[1])
	st := h.syncOK()
	if st.Fetched != 3 || st.Gone != 1 {
		t.Fatalf("sync %+v", st)
	}
	if !slices.Contains(h.rec.sleeps, 2*time.Second) {
		t.Errorf("Retry-After not honoured: %v", h.rec.sleeps)
	}
}

func TestSyncVersionChangesWhilePaging(t *testing.T) {
	h := newHarness(t, 3, SyncConfig{})
	ids := h.srv.IDs()
	// Make thread 0 long enough to need pages.
	msg := h.lastMessage(ids[0])
	for range 450 {
		h.srv.AppendMessage(ids[0], msg, 0)
	}
	h.srv.BumpWhilePaging(ids[0])
	h.syncOK()
	if r := h.srv.Requests(); r[MethodGetThreadMessagesPage] < 3 {
		t.Fatalf("expected paging, got %v", r)
	}
	// The next sync sees the newer `v` and counts the rest.
	h.clk.Advance(time.Minute)
	h.srv.Reset()
	st := h.syncOK()
	if st.Fetched != 1 || h.srv.Fetched()[ids[0]] != 1 {
		t.Fatalf("second sync %+v %v", st, h.srv.Fetched())
	}
	if got, want := countedThreads(h.store), h.want(ids); !reflect.DeepEqual(got, want) {
		t.Fatal("counts differ from the final documents")
	}
}

func TestSyncWrongKey(t *testing.T) {
	h := newHarness(t, 2, SyncConfig{})
	h.srv.SetKey("another")
	_, err := h.sync.Sync(context.Background())
	if !errors.Is(err, ErrAuth) {
		t.Fatalf("err %v", err)
	}
	if r := h.srv.Requests(); r[MethodGetUserInfo] != 1 || r[MethodListThreads] != 0 {
		t.Fatalf("auth failure retried: %v", r)
	}
}

// oversizedHarness serves three threads, the first larger than the
// syncer accepts; msg is a message to append to it.
func oversizedHarness(t *testing.T) (h *harness, ids []string, msg []byte, m *parseMetrics) {
	h = newHarness(t, 3, SyncConfig{MaxThreadBytes: 150_000})
	ids = h.srv.IDs()
	msg = h.lastMessage(ids[0])
	for range 300 {
		h.srv.AppendMessage(ids[0], msg, 0)
	}
	m = &parseMetrics{}
	h.sync.metrics = m
	return h, ids, msg, m
}

func TestSyncOversizedThreadIsAParseError(t *testing.T) {
	h, _, _, m := oversizedHarness(t)
	st, err := h.sync.Sync(context.Background())
	if err != nil || st.Fetched != 2 || st.Unreadable != 1 || !st.Complete {
		t.Fatalf("sync %+v %v", st, err)
	}
	if m.failed[thread.ReasonTooLarge] != 1 {
		t.Fatalf("parse errors %v", m.failed)
	}
}

type parseMetrics struct{ failed map[string]int }

func (m *parseMetrics) ParseFailed(source, reason string) {
	if m.failed == nil {
		m.failed = map[string]int{}
	}
	if source == store.SourceAmpServer {
		m.failed[reason]++
	}
}
func (m *parseMetrics) Parsed(string, time.Duration) {}

func TestLocalFileAndServerCountOnce(t *testing.T) {
	for _, order := range []string{"file first", "server first"} {
		t.Run(order, func(t *testing.T) {
			h := newHarness(t, 4, SyncConfig{})
			ids := h.srv.IDs()
			local := store.NewThreadStore(store.StoreOptions{})
			local.SetClaim(h.owners, store.SourceThreads)
			p := thread.NewParser()
			applyFile := func() bool {
				th, err := p.ParseBytes(h.srv.Document(ids[0]))
				if err != nil {
					t.Fatal(err)
				}
				return local.Apply("/threads/"+ids[0]+".json", store.FileVersion{Size: 1}, thread.Summarize(th))
			}
			if order == "file first" {
				if !applyFile() {
					t.Fatal("file not counted")
				}
				h.syncOK()
				if h.srv.Fetched()[ids[0]] != 0 {
					t.Fatal("server copy of a local thread was fetched")
				}
				if slices.Contains(h.store.ThreadKeys(), ids[0]) {
					t.Fatal("server counted a local thread")
				}
			} else {
				h.syncOK()
				if applyFile() {
					t.Fatal("file counted after the server had counted the thread")
				}
				if len(local.ThreadKeys()) != 0 {
					t.Fatal("local store has a record")
				}
			}
			// Either way: one count per thread across both stores.
			keys := append(local.ThreadKeys(), h.store.ThreadKeys()...)
			slices.Sort(keys)
			if want := slices.Sorted(slices.Values(ids)); !slices.Equal(keys, want) {
				t.Fatalf("counted %v, want each of %v once", keys, want)
			}
			// And it never flips: the next sync changes nothing.
			h.clk.Advance(time.Minute)
			before := maps.Clone(h.srv.Fetched())
			h.srv.AppendMessage(ids[0], h.lastMessage(ids[0]), t0.Add(time.Hour).UnixMilli())
			h.syncOK()
			after := h.srv.Fetched()
			if order == "file first" && after[ids[0]] != before[ids[0]] {
				t.Fatal("server fetched a thread a local file owns")
			}
			if order == "server first" && after[ids[0]] != before[ids[0]]+1 {
				t.Fatal("server stopped following its thread")
			}
		})
	}
}

// followStreams gives the syncer a stream-json store with the server
// rule on, sharing the harness's owners.
func (h *harness) followStreams() *store.StreamStore {
	streams := store.NewStreamStore(store.NewLabelCap(100, nil), nil)
	streams.EnableAmpServerDedupe(h.owners)
	h.sync.streams = streams
	return streams
}

func streamMessages(s *store.StreamStore) (messages, executions int64) {
	for _, sv := range s.Export().Series {
		switch sv.Family {
		case "messages":
			messages += sv.Value
		case "executions":
			executions += sv.Value
		}
	}
	return
}

func streamRun(id string) []streamjson.Increments {
	return []streamjson.Increments{
		{SessionID: id, UserMessages: 1, Prompts: 1},
		{SessionID: id, AssistantMessages: 1, Model: "claude-sonnet-4-5", StopReason: "end_turn", Tokens: &streamjson.Usage{Output: 7}},
		{SessionID: id, Result: true, Executions: []streamjson.Execution{{Outcome: "success"}}},
	}
}

// TestStreamRunsAndServerSync drives the rule through real syncs: a run
// whose thread the server lists is counted from the server (whichever
// comes first), a run the server never lists counts from the stream after
// two syncs.
func TestStreamRunsAndServerSync(t *testing.T) {
	for _, order := range []string{"stream first", "server first"} {
		t.Run(order, func(t *testing.T) {
			h := newHarness(t, 3, SyncConfig{})
			streams := h.followStreams()
			listed := h.srv.IDs()[1]
			if order == "stream first" {
				streams.Apply(streamRun(listed))
				streams.Apply(streamRun("T-not-on-this-account"))
				h.syncOK()
			} else {
				h.syncOK()
				streams.Apply(streamRun(listed))
				streams.Apply(streamRun("T-not-on-this-account"))
			}
			if m, ex := streamMessages(streams); m != 0 || ex != 2 {
				t.Fatalf("after one sync: stream messages %d executions %d, want 0 and 2", m, ex)
			}
			h.clk.Advance(time.Minute)
			h.syncOK()
			h.clk.Advance(time.Minute)
			h.syncOK()
			// Only the run the server does not list counts its messages.
			if m, ex := streamMessages(streams); m != 2 || ex != 2 {
				t.Fatalf("stream messages %d executions %d, want 2 and 2", m, ex)
			}
			if !slices.Contains(h.store.ThreadKeys(), listed) {
				t.Fatal("the server did not count the listed run's thread")
			}
			if streams.HeldRuns() != 0 {
				t.Fatal("runs still held")
			}
		})
	}
}

// A thread the exporter cannot read (too large, or a shape it does not
// know) is a parse error once per version, like a local file: it is not
// fetched again until its `v` changes, and it does not keep every sync
// incomplete — which would hold amp_server_up at 0 and keep stream runs of
// other accounts held (uncounted) for ever.
func TestSyncUnreadableThreadDoesNotBlockSyncs(t *testing.T) {
	h, ids, msg, m := oversizedHarness(t)
	streams := h.followStreams()
	streams.Apply(streamRun("T-not-on-this-account"))
	for i := range 3 {
		st, err := h.sync.Sync(context.Background())
		if err != nil || !st.Complete {
			t.Fatalf("sync %d: %+v %v", i, st, err)
		}
		h.clk.Advance(time.Minute)
	}
	if got := h.srv.Fetched()[ids[0]]; got != 1 {
		t.Fatalf("the unreadable thread was fetched %d times, want once", got)
	}
	if m.failed[thread.ReasonTooLarge] != 1 {
		t.Fatalf("parse errors %v, want one", m.failed)
	}
	if streams.HeldRuns() != 0 {
		t.Fatal("a run the server does not list is still held")
	}
	// A new version is read again.
	h.srv.AppendMessage(ids[0], msg, 0)
	if _, err := h.sync.Sync(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := h.srv.Fetched()[ids[0]]; got != 2 {
		t.Fatalf("the changed thread was fetched %d times in all, want 2", got)
	}
}

func billedTotal(s *store.ThreadStore) int64 {
	var n int64
	for _, th := range s.Export().Threads {
		for _, sv := range th.Series {
			if sv.Family == "billed_usd" {
				n += sv.Value
			}
		}
	}
	return n
}

// A bill that could not be read (the server was briefly down) is read at
// the next sync: the thread's counts and its bill are taken together, so
// a thread is not marked current while its bill is missing.
func TestSyncBillRetriedAfterATransientFailure(t *testing.T) {
	h := newHarness(t, 3, SyncConfig{Billed: true, MaxConcurrency: 1})
	ids := h.srv.IDs()
	for _, id := range ids {
		h.srv.SetCost(id, map[string]any{"title": "t", "totalCostUSD": 1.5})
	}
	// One bill fails more often than the client retries.
	for range 4 {
		h.srv.Fail(MethodThreadDisplayCostInfo, ampservertest.Fault{Status: 503})
	}
	st, err := h.sync.Sync(context.Background())
	if err == nil || st.Complete || st.Failed != 1 || st.Fetched != 2 {
		t.Fatalf("sync with a failed bill: %+v %v", st, err)
	}
	h.clk.Advance(time.Minute)
	st = h.syncOK()
	if st.Fetched != 1 {
		t.Fatalf("resumed sync %+v", st)
	}
	// Every thread's bill is counted once: 3 × $1.50.
	if got, want := billedTotal(h.store), 3*billedTotal(oneBill(t, 1.5)); got != want {
		t.Fatalf("billed %d, want %d", got, want)
	}
	if got, want := countedThreads(h.store), h.want(ids); !reflect.DeepEqual(got, want) {
		t.Fatal("counts differ from the documents")
	}
}

// oneBill is a store holding one thread billed usd.
func oneBill(t *testing.T, usd float64) *store.ThreadStore {
	t.Helper()
	s := store.NewThreadStore(store.StoreOptions{})
	s.Apply(store.AmpServerPath("T-x"), store.FileVersion{}, threadtest.Summary(threadtest.Thread{ID: "T-x"}))
	if !s.ApplyBilled("T-x", map[string]float64{"total": usd}) {
		t.Fatal("bill not applied")
	}
	return s
}

// rewriteTail replaces one thread id by another in getThreadTail answers:
// a server whose document names another thread than the one listed.
type rewriteTail struct{ from, to string }

func (r rewriteTail) RoundTrip(req *http.Request) (*http.Response, error) {
	req = req.Clone(req.Context())
	req.Header.Del("Accept-Encoding") // an answer to rewrite, not compressed
	resp, err := http.DefaultTransport.RoundTrip(req)
	if err != nil || req.URL.RawQuery != MethodGetThreadTail {
		return resp, err
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		return nil, err
	}
	body = bytes.ReplaceAll(body, []byte(`"id":"`+r.from+`"`), []byte(`"id":"`+r.to+`"`))
	resp.Body = io.NopCloser(bytes.NewReader(body))
	resp.ContentLength = int64(len(body))
	resp.Header.Del("Content-Length")
	return resp, nil
}

// The thread a document is counted under is the one that was listed and
// claimed: a document that names another id (a local thread's, say) is
// not counted, does not take that id from its owner, and is a parse error.
func TestSyncDocumentOfAnotherThreadIsRefused(t *testing.T) {
	h := newHarness(t, 2, SyncConfig{})
	ids := h.srv.IDs()
	const other = "T-00000000-0000-4000-8000-00000000beef"
	c := newTestClient(t, h.srv.URL, h.rec, func(o *Options) { o.Transport = rewriteTail{ids[0], other} })
	m := &parseMetrics{}
	h.sync = NewSyncer(c, h.cfg, h.store, SyncOptions{Owners: h.owners, Clock: h.clk, Metrics: m})
	st, err := h.sync.Sync(context.Background())
	if err != nil || st.Fetched != 1 || st.Unreadable != 1 {
		t.Fatalf("sync %+v %v", st, err)
	}
	if o := h.owners.Owner(other); o != "" {
		t.Fatalf("the id the document names is owned by %q", o)
	}
	if got := h.store.ThreadKeys(); !reflect.DeepEqual(got, []string{ids[1]}) {
		t.Fatalf("counted threads %v, want only %s", got, ids[1])
	}
	if m.failed["bad_response"] != 1 {
		t.Fatalf("parse errors %v", m.failed)
	}
}

// ignoreOffset makes the server answer every listThreads request as if it
// asked for the first page (a server that ignores or lost `offset`);
// after max list requests it fails them, so a test that loops ends.
type ignoreOffset struct {
	mu    sync.Mutex
	lists int
	max   int
}

func (o *ignoreOffset) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.URL.RawQuery == MethodListThreads {
		o.mu.Lock()
		o.lists++
		over := o.lists > o.max
		o.mu.Unlock()
		if over {
			return nil, errors.New("too many list requests")
		}
		body, err := io.ReadAll(req.Body)
		if err != nil {
			return nil, err
		}
		body = regexp.MustCompile(`"offset":\d+`).ReplaceAll(body, []byte(`"offset":0`))
		req = req.Clone(req.Context())
		req.Body = io.NopCloser(bytes.NewReader(body))
		req.ContentLength = int64(len(body))
	}
	return http.DefaultTransport.RoundTrip(req)
}

// A listing that does not advance (every page the same) ends with an
// error instead of paging for ever and queueing the same threads again
// and again.
func TestSyncListingThatDoesNotAdvanceEnds(t *testing.T) {
	h := newHarness(t, 5, SyncConfig{ListLimit: 2})
	tr := &ignoreOffset{max: 100}
	c := newTestClient(t, h.srv.URL, h.rec, func(o *Options) { o.Transport = tr })
	h.sync = NewSyncer(c, h.cfg, h.store, SyncOptions{Owners: h.owners, Clock: h.clk})
	st, err := h.sync.Sync(context.Background())
	if !errors.Is(err, ErrBadResponse) || st.Complete {
		t.Fatalf("sync %+v %v, want an incomplete sync with ErrBadResponse", st, err)
	}
	if tr.lists > 2 {
		t.Fatalf("%d list requests, want 2 (the second repeats the first)", tr.lists)
	}
	if st.Changed != 2 || st.Fetched != 2 {
		t.Fatalf("sync %+v: each thread listed must be fetched once", st)
	}
}

// A request the server refuses (invalid-argument) says nothing about the
// thread: unlike a document that cannot be read, it fails the sync
// (amp_server_up 0, so a server that refuses every fetch is not shown as
// up), the thread is fetched again at the next one, and the refusal is
// logged once per method as a bug.
func TestSyncRefusedFetchIsRetried(t *testing.T) {
	h := newHarness(t, 3, SyncConfig{MaxConcurrency: 1})
	ids := h.srv.IDs()
	h.srv.Fail(MethodGetThreadTail, ampservertest.Fault{Status: 400, Code: "invalid-argument"},
		ampservertest.Fault{Status: 200, Code: "invalid-argument"})
	st, err := h.sync.Sync(context.Background())
	if !errors.Is(err, ErrInvalidArgument) || st.Complete || st.Failed != 2 || st.Fetched != 1 {
		t.Fatalf("sync with a refused fetch: %+v %v", st, err)
	}
	if n := strings.Count(h.log.String(), "refused a request as invalid"); n != 1 {
		t.Fatalf("invalid-argument logged %d times, want once:\n%s", n, h.log)
	}
	h.clk.Advance(time.Minute)
	if st := h.syncOK(); st.Fetched != 2 {
		t.Fatalf("next sync %+v, want the refused threads fetched", st)
	}
	if got, want := countedThreads(h.store), h.want(ids); !reflect.DeepEqual(got, want) {
		t.Fatal("counts differ from the documents")
	}
}

// A thread the server lists but the exporter cannot read is not taken
// from the other sources: a stream-json run of it is still counted from
// its stream (it would otherwise be counted nowhere).
func TestSyncUnreadableThreadLeavesItsRunToTheStream(t *testing.T) {
	h, ids, _, _ := oversizedHarness(t)
	streams := h.followStreams()
	streams.Apply(streamRun(ids[0]))
	for range 3 {
		h.syncOK()
		h.clk.Advance(time.Minute)
	}
	if m, ex := streamMessages(streams); m != 2 || ex != 1 {
		t.Fatalf("stream messages %d executions %d, want 2 and 1", m, ex)
	}
	if o := h.owners.Owner(ids[0]); o != store.SourceStream {
		t.Fatalf("owner %q, want the stream", o)
	}
}

// A stream-json run counted from its stream while the server source was
// off is the stream's for good (design: the choice is made once and
// persisted): when the source is turned on and the server lists the run's
// thread, the server does not count it again. The same holds for a run
// that was held for the server and counted from the stream at a restart
// with the source off.
func TestStreamRunCountedWhileTheServerSourceWasOffCountsOnce(t *testing.T) {
	for _, held := range []bool{false, true} {
		h := newHarness(t, 3, SyncConfig{})
		listed := h.srv.IDs()[1]
		var st *store.StreamState
		if held {
			// Held for the server, then restored with the source off.
			on := store.NewStreamStore(store.NewLabelCap(100, nil), nil)
			on.EnableAmpServerDedupe(store.NewOwners())
			on.Apply(streamRun(listed))
			off := store.NewStreamStore(store.NewLabelCap(100, nil), nil)
			if err := off.Import(on.Export()); err != nil {
				t.Fatal(err)
			}
			st = off.Export()
		} else {
			off := store.NewStreamStore(store.NewLabelCap(100, nil), nil)
			off.Apply(streamRun(listed))
			st = off.Export()
		}
		// The source is turned on: the stores are restored, owners seeded.
		streams := store.NewStreamStore(store.NewLabelCap(100, nil), nil)
		streams.EnableAmpServerDedupe(h.owners)
		if err := streams.Import(st); err != nil {
			t.Fatal(err)
		}
		h.owners.Seed(store.SourceStream, streams.StreamOwned())
		h.sync.streams = streams
		h.syncOK()
		if m, _ := streamMessages(streams); m != 2 {
			t.Fatalf("held %v: stream messages %d, want 2", held, m)
		}
		if slices.Contains(h.store.ThreadKeys(), listed) {
			t.Fatalf("held %v: the server counted a run the stream had counted", held)
		}
	}
}

// A server that keeps answering 429 (more often than the client retries)
// is left alone for the rest of the sync: the threads still to fetch wait
// for the next one rather than each being tried, retried and refused.
func TestSyncStopsFetchingWhenRateLimited(t *testing.T) {
	h := newHarness(t, 5, SyncConfig{MaxConcurrency: 1})
	for range 4 {
		h.srv.Fail(MethodGetThreadTail, ampservertest.Fault{Status: 429})
	}
	st, err := h.sync.Sync(context.Background())
	if !errors.Is(err, ErrTransient) || st.Complete || st.Fetched != 0 {
		t.Fatalf("rate-limited sync %+v %v", st, err)
	}
	if n := h.srv.Requests()[MethodGetThreadTail]; n != 4 {
		t.Fatalf("%d tail requests, want 4 (one thread, tried and retried)", n)
	}
	h.clk.Advance(time.Minute)
	if st := h.syncOK(); st.Fetched != 5 {
		t.Fatalf("next sync %+v, want every thread fetched", st)
	}
}

// A listing or a bill the server refuses as invalid is the exporter's
// bug as much as a refused fetch: logged once per method as one, not only
// as the sync's warning.
func TestSyncRefusedListingAndBillLoggedAsABug(t *testing.T) {
	for _, method := range []string{MethodListThreads, MethodThreadDisplayCostInfo} {
		t.Run(method, func(t *testing.T) {
			h := newHarness(t, 2, SyncConfig{MaxConcurrency: 1, Billed: true})
			f := ampservertest.Fault{Status: 400, Code: "invalid-argument"}
			h.srv.Fail(method, f, f, f, f)
			for range 2 {
				_, _ = h.sync.Sync(context.Background())
				h.clk.Advance(time.Minute)
			}
			if n := strings.Count(h.log.String(), "refused a request as invalid"); n != 1 {
				t.Fatalf("invalid-argument of %s logged %d times as a bug, want once:\n%s", method, n, h.log)
			}
		})
	}
}

// The entitlement window is the account's, not a thread's: it is shown
// after a restart whose saved state leaves no thread to fetch, and read
// again once its window has reset while no thread changed (it was read
// only with the bill of a changed thread, so an idle account's gauges were
// missing after a restart and kept the old window's figures after a reset).
func TestSyncEntitlementWithoutChangedThreads(t *testing.T) {
	h := newHarness(t, 3, SyncConfig{Billed: true})
	ids := h.srv.IDs()
	bill := func(remaining float64) {
		for _, id := range ids {
			h.srv.SetCost(id, map[string]any{"title": "t", "totalCostUSD": 0.5,
				"entitlement": map[string]any{"limitUSD": 20.0, "remainingUSD": remaining, "percentUsed": 50.0,
					"windowPeriod": "daily", "windowResetsInSeconds": 3600}})
		}
	}
	bill(10)
	m := &sourceMetrics{upCh: make(chan bool, 16)}
	h.sync.source = m
	h.syncOK()
	if len(m.ent) == 0 {
		t.Fatal("no entitlement after the first sync")
	}

	// A restart: the threads are known, nothing is fetched.
	restarted := &sourceMetrics{upCh: make(chan bool, 16)}
	h.sync = h.newSyncer(h.store)
	h.sync.source = restarted
	h.clk.Advance(time.Minute)
	if st := h.syncOK(); st.Fetched != 0 {
		t.Fatalf("sync after the restart fetched %d threads", st.Fetched)
	}
	if len(restarted.ent) == 0 || *restarted.ent[len(restarted.ent)-1].RemainingUSD != 10 {
		t.Fatalf("entitlement after a restart: %+v", restarted.ent)
	}

	// The window resets while no thread changes.
	bill(20)
	h.clk.Advance(2 * time.Hour)
	if st := h.syncOK(); st.Fetched != 0 {
		t.Fatalf("sync fetched %d threads", st.Fetched)
	}
	if e := restarted.ent[len(restarted.ent)-1]; *e.RemainingUSD != 20 {
		t.Fatalf("entitlement after its window reset: %v remaining, want the new window's 20", *e.RemainingUSD)
	}
	// Billed once per thread all along.
	if got := store.Unfixed(store.FamBilled, h.store.Snapshot().Totals()[store.SeriesKey{Fam: store.FamBilled, L1: "total"}]); got != 1.5 {
		t.Fatalf("billed %v, want 1.5", got)
	}
}
