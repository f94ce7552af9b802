package ampserver

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/klauspost/compress/zstd"

	"github.com/amp-exporter/amp-exporter/internal/clock"
	"github.com/amp-exporter/amp-exporter/internal/testsupport/ampservertest"
	"github.com/amp-exporter/amp-exporter/internal/testsupport/threadgen"
	"github.com/amp-exporter/amp-exporter/store"
)

// grow makes a thread longer than n messages (copies of its last one).
func (h *harness) grow(id string, n int) {
	h.t.Helper()
	msg := h.lastMessage(id)
	var d struct {
		Messages []json.RawMessage `json:"messages"`
	}
	_ = json.Unmarshal(h.srv.Document(id), &d)
	for k := len(d.Messages); k <= n; k++ {
		h.srv.AppendMessage(id, msg, 0)
	}
}

// endlessListing is a server whose listThreads pages never end: every
// page is full of threads never listed before. It answers getUserInfo;
// after 10,000 pages it fails, so that a test of code without a bound
// ends.
type endlessListing struct {
	mu    sync.Mutex
	pages int
	other int // requests of other methods (fetches)
	first int // listings from offset 0: syncs started
}

func (e *endlessListing) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	e.mu.Lock()
	defer e.mu.Unlock()
	switch r.URL.RawQuery {
	case MethodGetUserInfo:
		_, _ = io.WriteString(w, `{"ok":true,"result":{"id":"user-1","email":"a@example.com"}}`)
	case MethodListThreads:
		e.pages++
		if e.pages > 10_000 {
			w.WriteHeader(http.StatusInternalServerError)
			return
		}
		var req struct {
			Params ListParams `json:"params"`
		}
		_ = json.Unmarshal(body, &req)
		if req.Params.Offset == 0 {
			e.first++
		}
		var threads []string
		for i := range req.Params.Limit {
			threads = append(threads, fmt.Sprintf(`{"id":"T-00000000-0000-4000-8000-%012d","v":1}`, e.pages*1000+i))
		}
		_, _ = fmt.Fprintf(w, `{"ok":true,"result":{"threads":[%s]}}`, strings.Join(threads, ","))
	default:
		e.other++
		_, _ = io.WriteString(w, `{"ok":false,"error":{"code":"thread-not-found","message":"no"}}`)
	}
}

// A listing whose pages never end (it grew to 640 MB in a minute) ends
// the sync at the bounds of one sync with ErrListingTooLong, fetches none
// of what it listed, and is logged once, not at every sync.
func TestSyncEndlessListingIsBounded(t *testing.T) {
	e := &endlessListing{}
	srv := httptest.NewServer(e)
	defer srv.Close()
	h := &harness{t: t, rec: &recorder{}, log: &bytes.Buffer{}}
	c := newTestClient(t, srv.URL, h.rec, nil)
	logger := slog.New(slog.NewTextHandler(h.log, &slog.HandlerOptions{Level: slog.LevelDebug}))
	clk := clock.NewFake(t0)
	s := NewSyncer(c, SyncConfig{ListLimit: 10, MaxListPages: 50, Interval: time.Minute}, newServerStore(store.NewOwners(), clk),
		SyncOptions{Logger: logger, Clock: clk})
	st, err := s.Sync(context.Background())
	if !errors.Is(err, ErrListingTooLong) || st.Complete {
		t.Fatalf("sync %+v %v, want ErrListingTooLong", st, err)
	}
	e.mu.Lock()
	pages, other := e.pages, e.other
	e.mu.Unlock()
	if pages > 50 || other != 0 {
		t.Fatalf("%d list pages and %d other requests, want at most 50 pages and no fetch", pages, other)
	}

	// Run: three syncs that each hit the bound, one error line.
	h.log.Reset()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	start := make(chan struct{})
	close(start)
	go func() { done <- s.Run(ctx, start) }()
	deadline := time.Now().Add(30 * time.Second)
	for {
		e.mu.Lock()
		n := e.first
		e.mu.Unlock()
		if n >= 4 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d syncs started", n)
		}
		clk.Advance(time.Minute)
		time.Sleep(time.Millisecond)
	}
	cancel()
	<-done
	if n := strings.Count(h.log.String(), `level=ERROR msg="the Amp server's thread listing does not end`); n != 1 {
		t.Fatalf("logged at error level %d times, want once:\n%s", n, h.log)
	}
}

// Overlapping pages (nextMessageIndex = fromIndex+1) once counted one
// thread's messages 8 times: a page must continue exactly where the last
// ended, else the thread is a bad_response parse error and counts nothing
// from that document.
func TestSyncOverlappingPagesAreRefused(t *testing.T) {
	h := newHarness(t, 3, SyncConfig{MaxConcurrency: 1})
	ids := h.srv.IDs()
	h.grow(ids[0], 450)
	h.srv.OverlapPages(ids[0])
	m := &parseMetrics{}
	h.sync = NewSyncer(newTestClient(t, h.srv.URL, h.rec, nil), h.cfg, h.store, SyncOptions{Owners: h.owners, Clock: h.clk, Metrics: m})
	st, err := h.sync.Sync(context.Background())
	if st.Fetched != 2 || st.Unreadable != 1 || err != nil || !st.Complete {
		t.Fatalf("sync %+v %v", st, err)
	}
	if m.failed["bad_response"] != 1 {
		t.Fatalf("parse errors %v", m.failed)
	}
	if got, want := countedThreads(h.store), h.want(ids[1:]); !reflect.DeepEqual(got, want) {
		t.Fatalf("counted %d threads, want the two readable ones as their documents hold them", len(got))
	}
}

// A gzip bomb (1 GiB of JSON in about 1 MB) is refused as too large once
// the bound is inflated, not after inflating it all; the bytes are
// reported on the wire and decoded. (The wire's own bound, an answer
// larger than the limit as it comes, is TestClientErrors' "oversized
// response".)
func TestClientGzipBombIsTooLarge(t *testing.T) {
	srv := ampservertest.New(testKey, "alice@example.com")
	defer srv.Close()
	h := &harness{t: t, srv: srv}
	if err := srv.PutGenerated(threadgen.New(threadgen.Options{Threads: 2, TotalBytes: 40_000, Seed: 5}), 0, 2); err != nil {
		t.Fatal(err)
	}
	ids := srv.IDs()
	h.grow(ids[0], 250)
	srv.Bomb(ids[0])
	var mu sync.Mutex
	bytesBy := map[string]int64{}
	var maxDecoded int64 // the largest one response inflated to
	const limit = 8 << 20
	c := newTestClient(t, srv.URL, &recorder{}, func(o *Options) {
		o.MaxResponseBytes = limit
		o.OnBytes = func(enc string, n int64) {
			mu.Lock()
			bytesBy[enc] += n
			if enc == "decoded" {
				maxDecoded = max(maxDecoded, n)
			}
			mu.Unlock()
		}
	})
	_, err := c.ExportThread(context.Background(), ids[0], 1<<40)
	if !errors.Is(err, ErrTooLarge) {
		t.Fatalf("err %v, want ErrTooLarge", err)
	}
	// The answer is read whole as it came (bounded on the wire by the
	// same limit), then inflated up to the bound: the bomb's megabyte is
	// read, its gigabyte is not inflated.
	if maxDecoded > limit+1 || bytesBy["gzip"] == 0 || bytesBy["gzip"] > limit+1 {
		t.Fatalf("bytes %v (one response inflated to %d): want at most %d inflated and on the wire",
			bytesBy, maxDecoded, limit+1)
	}

	// An ordinary thread comes compressed: fewer bytes on the wire than
	// decoded, none uncompressed.
	clear(bytesBy)
	gz, err := c.ExportThread(context.Background(), ids[1], 1<<30)
	if err != nil {
		t.Fatal(err)
	}
	if bytesBy["gzip"] == 0 || bytesBy["gzip"] >= bytesBy["decoded"] || bytesBy["identity"] != 0 {
		t.Fatalf("bytes %v: want the answers gzip-compressed", bytesBy)
	}
	// A server that does not compress is read as it is.
	srv.DisableGzip()
	clear(bytesBy)
	if _, err := c.ExportThread(context.Background(), ids[1], 1<<30); err != nil {
		t.Fatal(err)
	}
	if bytesBy["gzip"] != 0 || bytesBy["identity"] != bytesBy["decoded"] || bytesBy["decoded"] == 0 {
		t.Fatalf("bytes %v", bytesBy)
	}
	// A server that speaks zstd answers in it (the client asks for zstd
	// before gzip), read to the same document.
	srv.EnableZstd()
	clear(bytesBy)
	z, err := c.ExportThread(context.Background(), ids[1], 1<<30)
	if err != nil {
		t.Fatal(err)
	}
	if bytesBy["zstd"] == 0 || bytesBy["zstd"] >= bytesBy["decoded"] || bytesBy["gzip"] != 0 || bytesBy["identity"] != 0 {
		t.Fatalf("bytes %v: want the answers zstd-compressed", bytesBy)
	}
	if !bytes.Equal(z.Doc, gz.Doc) {
		t.Fatal("the document read through zstd differs")
	}
}

// A zstd bomb (an answer that inflates far past the bound) is refused as
// too large once the bound is inflated.
func TestClientZstdBombIsTooLarge(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Encoding", "zstd")
		zw, _ := zstd.NewWriter(w)
		defer zw.Close()
		_, _ = zw.Write([]byte(`{"ok":true,"result":{"messages":["`))
		chunk := bytes.Repeat([]byte("a"), 1<<20)
		for range 256 {
			if _, err := zw.Write(chunk); err != nil {
				return
			}
		}
	}))
	defer srv.Close()
	var decoded int64
	const limit = 8 << 20
	c := newTestClient(t, srv.URL, &recorder{}, func(o *Options) {
		o.MaxResponseBytes = limit
		o.OnBytes = func(enc string, n int64) {
			if enc == "decoded" {
				decoded = max(decoded, n)
			}
		}
	})
	var p Page
	if err := c.Call(context.Background(), MethodGetThreadMessagesPage, nil, &p); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("err %v, want ErrTooLarge", err)
	}
	if decoded > limit+1 {
		t.Fatalf("inflated %d bytes, bound %d", decoded, limit)
	}
}

// Threads another user created (a workspace thread shared with the
// account) are not counted, and each is counted once as skipped.
func TestSyncSkipsOtherUsersThreads(t *testing.T) {
	h := newHarness(t, 4, SyncConfig{})
	ids := h.srv.IDs()
	h.srv.SetCreator(ids[0], "user-2")
	h.srv.SetCreator(ids[1], "") // no creator: counted
	m := &sourceMetrics{upCh: make(chan bool, 16)}
	h.sync.source = m
	st := h.syncOK()
	if st.Fetched != 3 || st.Skipped != 1 {
		t.Fatalf("sync %+v", st)
	}
	if got, want := countedThreads(h.store), h.want(ids[1:]); !reflect.DeepEqual(got, want) {
		t.Fatalf("counted %d threads, want the account's 3", len(got))
	}
	h.clk.Advance(time.Minute)
	h.srv.Touch(ids[0], t0.Add(time.Hour).UnixMilli())
	h.syncOK()
	if m.skip[SkipOtherUser] != 1 {
		t.Fatalf("skipped %v, want other_user once", m.skip)
	}
	if r := h.srv.Fetched(); r[ids[0]] != 0 {
		t.Fatalf("another user's thread fetched %d times", r[ids[0]])
	}

	// A thread counted before it was known to be another user's leaves
	// amp_threads.
	h.srv.SetCreator(ids[2], "user-3")
	h.clk.Advance(time.Minute)
	h.srv.Touch(ids[2], t0.Add(2*time.Hour).UnixMilli())
	h.syncOK()
	if _, ok := h.store.File(store.AmpServerPath(ids[2])); ok || m.skip[SkipOtherUser] != 2 {
		t.Fatalf("a thread that turned out to be another user's is still present (skipped %v)", m.skip)
	}
}

// rate-limit-exceeded, on a 200 with retryAfterSeconds in the body, backs
// off as long as the server says, leaves the thread to be fetched again at
// the next sync (it is not unreadable) and stops the sync's other fetches.
func TestSyncRateLimitedByCodeIsRetriedNextSync(t *testing.T) {
	h := newHarness(t, 3, SyncConfig{MaxConcurrency: 1})
	ids := h.srv.IDs()
	f := ampservertest.Fault{Status: 200, Code: "rate-limit-exceeded", RetryAfterSeconds: 7}
	h.srv.Fail(MethodGetThreadTail, f, f, f, f)
	st, err := h.sync.Sync(context.Background())
	if !errors.Is(err, ErrRateLimited) || st.Complete || st.Unreadable != 0 || st.Fetched != 0 {
		t.Fatalf("sync %+v %v", st, err)
	}
	if !equalDurations(h.rec.sleeps, []time.Duration{7 * time.Second, 7 * time.Second, 7 * time.Second}) {
		t.Fatalf("slept %v, want the server's 7 s three times", h.rec.sleeps)
	}
	h.clk.Advance(time.Minute)
	if st := h.syncOK(); st.Fetched != 3 {
		t.Fatalf("next sync %+v", st)
	}
	if got, want := countedThreads(h.store), h.want(ids); !reflect.DeepEqual(got, want) {
		t.Fatal("counts differ from the documents")
	}
}

// Error codes decide on any status; statuses decide only where there is
// no code the exporter knows.
func TestClientErrorsByCode(t *testing.T) {
	cases := []struct {
		status int
		code   string
		want   error
	}{
		{200, "auth-required", ErrAuth},
		{200, "permission-denied", ErrAuth},
		{500, "permission-denied", ErrAuth},
		{200, "thread-not-found", ErrThreadNotFound},
		{400, "thread-not-found", ErrThreadNotFound},
		{200, "rate-limit-exceeded", ErrRateLimited},
		{200, "internal-error", ErrTransient},
		{200, "invalid-argument", ErrInvalidArgument},
		{400, "invalid-argument", ErrInvalidArgument},
		{401, "", ErrAuth},
		{403, "", ErrAuth},
		{429, "", ErrRateLimited},
		{404, "", ErrTransient}, // no code: not "gone"
		{502, "", ErrTransient},
		{200, "something-new", ErrBadResponse},
	}
	for _, tc := range cases {
		t.Run(fmt.Sprintf("%d %s", tc.status, tc.code), func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.WriteHeader(tc.status)
				if tc.code != "" {
					_, _ = fmt.Fprintf(w, `{"ok":false,"error":{"code":%q,"message":"m"}}`, tc.code)
				}
			}))
			defer srv.Close()
			c := newTestClient(t, srv.URL, &recorder{}, nil)
			if _, err := c.ExportThread(context.Background(), "T-00000000-0000-4000-8000-000000000001", 1<<20); !errors.Is(err, tc.want) {
				t.Fatalf("err %v, want %v", err, tc.want)
			}
		})
	}
}

// The document is thread.data; messages from the tail and the pages
// replace a `messages` key data carries (never added to it); the header's
// creatorUserID and updatedAt are read.
func TestExportReplacesMessagesOfData(t *testing.T) {
	h := newHarness(t, 2, SyncConfig{})
	ids := h.srv.IDs()
	h.grow(ids[0], 230)
	h.srv.StaleMessagesInData(ids[0])
	h.srv.StaleMessagesInData(ids[1])
	c := newTestClient(t, h.srv.URL, &recorder{}, nil)
	for _, id := range ids {
		ex, err := c.ExportThread(context.Background(), id, 1<<30)
		if err != nil {
			t.Fatal(err)
		}
		if n := bytes.Count(ex.Doc, []byte(`"messages":`)); n != 1 {
			t.Fatalf("%s: %d messages keys in the document", id, n)
		}
		var got, want any
		_ = json.Unmarshal(ex.Doc, &got)
		_ = json.Unmarshal(h.srv.Document(id), &want)
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("%s: the assembled document is not the thread's", id)
		}
		if ex.CreatorUserID != ampservertest.DefaultUserID || ex.UpdatedAt == 0 || ex.V == 0 {
			t.Fatalf("%s: header read as %+v", id, Export{V: ex.V, CreatorUserID: ex.CreatorUserID, UpdatedAt: ex.UpdatedAt})
		}
	}
	st := h.syncOK()
	if st.Fetched != 2 {
		t.Fatalf("sync %+v", st)
	}
	if got, want := countedThreads(h.store), h.want(ids); !reflect.DeepEqual(got, want) {
		t.Fatal("counts differ from the documents")
	}
}

// A key refused at start-up: the account is named (OnAccount) once the
// key works, not never.
func TestSyncNamesTheAccountOnceTheKeyWorks(t *testing.T) {
	h := newHarness(t, 2, SyncConfig{})
	var named []UserInfo
	h.sync.onAccount = func(u UserInfo) { named = append(named, u) }
	h.srv.SetKey("another")
	if _, err := h.sync.Sync(context.Background()); !errors.Is(err, ErrAuth) {
		t.Fatalf("err %v", err)
	}
	if len(named) != 0 {
		t.Fatalf("named %v with a refused key", named)
	}
	h.srv.SetKey(testKey)
	h.clk.Advance(time.Minute)
	h.syncOK()
	h.clk.Advance(time.Minute)
	h.syncOK()
	if len(named) != 1 || named[0].Email != "alice@example.com" || named[0].ID != ampservertest.DefaultUserID {
		t.Fatalf("named %v, want alice once", named)
	}
}

// A bill is one amount: the breakdown's kinds, and under "total" only what
// totalCostUSD has beyond them.
func TestBillSplit(t *testing.T) {
	f := func(v float64) *float64 { return &v }
	type bd = struct {
		FreeUSD         *float64 `json:"freeUSD"`
		PaidUSD         *float64 `json:"paidUSD"`
		SubscriptionUSD *float64 `json:"subscriptionUSD"`
	}
	cases := []struct {
		ci   CostInfo
		want map[string]float64
	}{
		{CostInfo{TotalCostUSD: f(10), CostBreakdown: &bd{FreeUSD: f(10), PaidUSD: f(0), SubscriptionUSD: f(0)}}, map[string]float64{"free": 10}},
		{CostInfo{TotalCostUSD: f(2)}, map[string]float64{"total": 2}},
		{CostInfo{TotalCostUSD: f(3), CostBreakdown: &bd{PaidUSD: f(1)}}, map[string]float64{"paid": 1, "total": 2}},
		{CostInfo{TotalCostUSD: nil, CostBreakdown: &bd{SubscriptionUSD: f(4)}}, map[string]float64{"subscription": 4}},
		{CostInfo{}, map[string]float64{}},
	}
	for i, tc := range cases {
		if got := billSplit(tc.ci); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("case %d: %v, want %v", i, got, tc.want)
		}
	}
}

// A rate limit's retryAfterSeconds is the server's to choose: a huge one
// waits the cap (MaxRetryAfter), never a duration that overflowed into no
// wait at all, which would let a hostile server have every retry at once.
func TestClientRetryAfterSecondsIsBounded(t *testing.T) {
	cases := []struct {
		body string
		want time.Duration
	}{
		{`7`, 7 * time.Second},
		{`0.5`, 500 * time.Millisecond},
		{`3600`, time.Minute},
		{`1e12`, time.Minute}, // 1e21 ns: past int64
		{`1e300`, time.Minute},
	}
	for _, tc := range cases {
		t.Run(tc.body, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.WriteHeader(http.StatusTooManyRequests)
				_, _ = fmt.Fprintf(w, `{"ok":false,"error":{"code":"rate-limit-exceeded","message":"slow down","retryAfterSeconds":%s}}`, tc.body)
			}))
			defer srv.Close()
			rec := &recorder{}
			c := newTestClient(t, srv.URL, rec, nil)
			if _, err := c.GetUserInfo(context.Background()); !errors.Is(err, ErrRateLimited) {
				t.Fatalf("err %v", err)
			}
			if !equalDurations(rec.sleeps, []time.Duration{tc.want, tc.want, tc.want}) {
				t.Fatalf("slept %v, want %v three times", rec.sleeps, tc.want)
			}
		})
	}
}

// A listing's summaries are kept for the whole sync (the changed threads
// wait for their fetch): the strings a server puts in them are bounded as
// they are read, so 100,000 listed threads cannot each hold a megabyte.
func TestListThreadsBoundsSummaries(t *testing.T) {
	huge := strings.Repeat("x", 1<<20)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = fmt.Fprintf(w, `{"ok":true,"result":{"threads":[{"id":"T-00000000-0000-4000-8000-000000000001","v":1,"agentMode":%q,"creatorUserID":%q},{"id":"T-00000000-0000-4000-8000-000000000002","v":1,"agentMode":"smart","creatorUserID":"user-1"}]}}`, huge, huge)
	}))
	defer srv.Close()
	c := newTestClient(t, srv.URL, &recorder{}, nil)
	page, err := c.ListThreads(context.Background(), ListParams{Limit: 500})
	if err != nil || len(page) != 2 {
		t.Fatalf("%d threads, %v", len(page), err)
	}
	if n, m := len(page[0].AgentMode), len(page[0].CreatorUserID); n > 128 || m > maxUserID+len("…") {
		t.Errorf("a summary holds an agentMode of %d bytes and a creatorUserID of %d", n, m)
	}
	if page[1].AgentMode != "smart" || page[1].CreatorUserID != "user-1" {
		t.Errorf("short values changed: %+v", page[1])
	}
}

// A page answered {ok: true} without its messages (no result, a null
// one, one without the messages array the CLI's schema requires) is not
// the end of the thread: taking it for one recorded the thread at its
// version with none of the paged messages, never fetched again until it
// changed. It is a bad response, fetched again at the next sync.
func TestExportPageWithoutMessagesIsABadResponse(t *testing.T) {
	const id = "T-00000000-0000-4000-8000-000000000001"
	for _, page := range []string{`{"ok":true}`, `{"ok":true,"result":null}`, `{"ok":true,"result":{}}`, `{"ok":true,"result":{"nextMessageIndex":null}}`} {
		t.Run(page, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				switch r.URL.RawQuery {
				case MethodGetThreadTail:
					_, _ = fmt.Fprintf(w, `{"ok":true,"result":{"thread":{"id":%q,"creatorUserID":"user-1","data":{"v":3,"id":%q}},"messages":[{"role":"user","messageId":5,"content":[]}],"hasMoreBefore":true}}`, id, id)
				default:
					_, _ = io.WriteString(w, page)
				}
			}))
			defer srv.Close()
			c := newTestClient(t, srv.URL, &recorder{}, func(o *Options) { o.Retries = -1 })
			ex, err := c.ExportThread(context.Background(), id, 1<<20)
			if !errors.Is(err, ErrBadResponse) {
				t.Fatalf("err %v (document %q), want ErrBadResponse", err, ex.Doc)
			}
		})
	}
}

// The same for a tail without its messages array: a thread read as empty
// would be recorded at its version with nothing counted.
func TestExportTailWithoutMessagesIsABadResponse(t *testing.T) {
	const id = "T-00000000-0000-4000-8000-000000000001"
	thread := fmt.Sprintf(`{"id":%q,"creatorUserID":"user-1","data":{"v":3,"id":%q}}`, id, id)
	for _, tail := range []string{`{"thread":` + thread + `}`, `{"thread":` + thread + `,"messages":null,"hasMoreBefore":false}`} {
		t.Run(tail, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				_, _ = fmt.Fprintf(w, `{"ok":true,"result":%s}`, tail)
			}))
			defer srv.Close()
			c := newTestClient(t, srv.URL, &recorder{}, nil)
			ex, err := c.ExportThread(context.Background(), id, 1<<20)
			if !errors.Is(err, ErrBadResponse) {
				t.Fatalf("err %v (document %q), want ErrBadResponse", err, ex.Doc)
			}
		})
	}
	// An empty thread is an empty array.
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = fmt.Fprintf(w, `{"ok":true,"result":{"thread":%s,"messages":[],"hasMoreBefore":false}}`, thread)
	}))
	defer srv.Close()
	if _, err := newTestClient(t, srv.URL, &recorder{}, nil).ExportThread(context.Background(), id, 1<<20); err != nil {
		t.Fatal(err)
	}
}

// The threads skipped as another user's are remembered only while they
// are listed: a full listing that no longer shows one forgets it, so a
// server that shares ever new threads does not grow the exporter for
// good.
func TestSyncForgetsOtherUsersThreadsNoLongerListed(t *testing.T) {
	h := newHarness(t, 4, SyncConfig{FullInterval: time.Hour})
	ids := h.srv.IDs()
	h.srv.SetCreator(ids[0], "user-2")
	h.srv.SetCreator(ids[1], "user-2")
	h.syncOK()
	if n := len(h.sync.otherUser); n != 2 {
		t.Fatalf("%d threads remembered as another user's, want 2", n)
	}
	h.srv.Delete(ids[0])
	h.clk.Advance(2 * time.Hour) // a full listing
	if st := h.syncOK(); !st.Full {
		t.Fatalf("sync %+v, want a full one", st)
	}
	if n := len(h.sync.otherUser); n != 1 || !h.sync.otherUser[ids[1]] {
		t.Fatalf("remembered %v, want only the one still listed", h.sync.otherUser)
	}
}
