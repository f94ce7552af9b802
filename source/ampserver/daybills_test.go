package ampserver

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/amp-exporter/amp-exporter/internal/testsupport/ampservertest"
	"github.com/amp-exporter/amp-exporter/parser/thread"
	"github.com/amp-exporter/amp-exporter/store"
)

const dayThread = "T-da000000-0000-4000-8000-000000000001"

// answer is an assistant message of tokens tokens at the server time at.
func answer(n int, at time.Time, tokens int) string {
	return fmt.Sprintf(`{"role":"assistant","messageId":%d,"createdAt":%q,"content":[{"type":"text","text":"ok"}],`+
		`"state":{"type":"complete","stopReason":"end_turn"},"usage":{"model":"claude-sonnet-4-5","inputTokens":%d,"outputTokens":%d,"maxInputTokens":200000,"totalInputTokens":%d}}`,
		n, at.UTC().Format(time.RFC3339Nano), tokens/2, tokens-tokens/2, tokens/2)
}

// putDayThread serves a thread active on the three days before t0 (1,000,
// 2,000 and 3,000 tokens), billed $0.90 in all: $0.15 per 1,000 tokens.
func putDayThread(t *testing.T, h *harness) {
	t.Helper()
	day := func(d int, hour int) time.Time {
		return time.Date(2026, 4, 7+d, hour, 0, 0, 0, time.UTC)
	}
	msgs := []string{
		fmt.Sprintf(`{"role":"user","messageId":1,"createdAt":%q,"content":[{"type":"text","text":"go"}]}`, day(0, 9).Format(time.RFC3339)),
		answer(2, day(0, 10), 1000),
		answer(3, day(1, 10), 2000),
		answer(4, day(2, 10), 1500),
		answer(5, day(2, 23), 1500),
	}
	doc := fmt.Sprintf(`{"v":1,"id":%q,"created":%d,"agentMode":"smart","messages":[%s]}`, dayThread, day(0, 9).UnixMilli(), strings.Join(msgs, ","))
	if _, err := h.srv.Put([]byte(doc), day(2, 23).UnixMilli()); err != nil {
		t.Fatal(err)
	}
	h.srv.SetCost(dayThread, map[string]any{"title": "t", "totalCostUSD": 0.90})
}

// dayCalls are the period bills asked since the last Reset, as "thread
// start–end" in UTC.
func dayCalls(srv *ampservertest.Server) []string {
	var out []string
	for _, c := range srv.CostCalls() {
		if c.Start != "" || c.End != "" {
			out = append(out, c.ThreadID[:4]+" "+c.Start+"–"+c.End)
		}
	}
	return out
}

func dayCall(d int) string {
	start := time.Date(2026, 4, 7+d, 0, 0, 0, 0, time.UTC)
	return "T-da " + start.Format("2006-01-02T15:04:05.000Z") + "–" + start.AddDate(0, 0, 1).Format("2006-01-02T15:04:05.000Z")
}

// billOf is the whole-thread bill the store counts for id, 1e-10 USD.
func billOf(s *store.ThreadStore, id string) int64 {
	var n int64
	for _, sv := range s.Export().Threads[id].Series {
		if sv.Family == "billed_usd" {
			n += sv.Value
		}
	}
	return n
}

// daysOf sums the thread's day bills in Bills and checks each is listed
// once.
func daysOf(t *testing.T, s *store.ThreadStore, id string) (sum int64, days int) {
	t.Helper()
	for _, b := range s.Bills() {
		if b.Session == id {
			sum += b.USD
			days++
		}
	}
	return sum, days
}

// The bill of each day a thread was active is asked once per changed day:
// a thread active over three days costs three requests, which sum to its
// whole bill to the 1e-10 USD; a sync with nothing changed asks none; a
// thread that grows today asks today's only (the days before were read
// after they ended: complete); the old threads of the listing (active
// before the horizon) ask none.
func TestSyncDayBills(t *testing.T) {
	h := newHarness(t, 3, SyncConfig{Billed: true, MaxConcurrency: 2, Location: time.UTC})
	putDayThread(t, h)

	h.syncOK()
	if got, want := dayCalls(h.srv), []string{dayCall(2), dayCall(1), dayCall(0)}; !sameSet(got, want) {
		t.Fatalf("first sync asked %v, want the three active days %v", got, want)
	}
	sum, days := daysOf(t, h.store, dayThread)
	if whole := billOf(h.store, dayThread); days != 3 || sum != whole || whole != 9e9 {
		t.Fatalf("%d days summing to %d (1e-10 USD), want 3 summing to the whole bill %d = $0.90", days, sum, whole)
	}
	if got := h.store.DayBills(dayThread); got[0].USD != 15e8 || got[1].USD != 30e8 || got[2].USD != 45e8 {
		t.Fatalf("days %+v, want $0.15, $0.30, $0.45", got)
	}

	// Nothing changed: no day is asked.
	h.srv.Reset()
	h.clk.Advance(time.Minute)
	if st := h.syncOK(); st.DayBills != 0 || len(dayCalls(h.srv)) != 0 {
		t.Fatalf("an idle sync asked %v (%+v)", dayCalls(h.srv), st)
	}

	// The thread grows today by 1,000 tokens ($0.15): only today is asked.
	h.srv.Reset()
	h.clk.Advance(time.Minute)
	h.srv.AppendMessage(dayThread, []byte(answer(6, h.clk.Now(), 1000)), h.clk.Now().UnixMilli())
	h.srv.SetCost(dayThread, map[string]any{"title": "t", "totalCostUSD": 1.05})
	h.clk.Advance(time.Minute)
	if st := h.syncOK(); st.DayBills != 1 || !reflect.DeepEqual(dayCalls(h.srv), []string{dayCall(3)}) {
		t.Fatalf("a thread grown today asked %v (%+v), want today's only", dayCalls(h.srv), st)
	}
	sum, days = daysOf(t, h.store, dayThread)
	if whole := billOf(h.store, dayThread); days != 4 || sum != whole || whole != 105e8 {
		t.Fatalf("%d days summing to %d, want 4 summing to the whole bill %d", days, sum, whole)
	}

	// Without Billed, nothing per day either.
	off := newHarness(t, 1, SyncConfig{Location: time.UTC})
	putDayThread(t, off)
	off.syncOK()
	if n := len(off.srv.CostCalls()); n != 0 || len(off.store.Bills()) != 0 {
		t.Fatalf("without billed: %d bills asked", n)
	}
}

func sameSet(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	seen := map[string]int{}
	for _, x := range a {
		seen[x]++
	}
	for _, x := range b {
		seen[x]--
	}
	for _, n := range seen {
		if n != 0 {
			return false
		}
	}
	return true
}

// At most MaxDayBills days are asked per sync, the newest first; the days
// left stay due across a restart from the saved state, and the days read
// are kept and not asked again.
func TestSyncDayBillsBoundedAndRestored(t *testing.T) {
	h := newHarness(t, 1, SyncConfig{Billed: true, MaxConcurrency: 1, MaxDayBills: 2, Location: time.UTC})
	putDayThread(t, h)
	st := h.syncOK()
	if got := dayCalls(h.srv); st.DayBills != 2 || !reflect.DeepEqual(got, []string{dayCall(2), dayCall(1)}) {
		t.Fatalf("first sync asked %v, want the newest two days", got)
	}
	before := h.store.Bills()

	// A new process on the saved state.
	raw, err := json.Marshal(h.store.Export())
	if err != nil {
		t.Fatal(err)
	}
	var saved store.State
	if err := json.Unmarshal(raw, &saved); err != nil {
		t.Fatal(err)
	}
	h.owners = store.NewOwners()
	restored := newServerStore(h.owners, h.clk)
	if err := restored.Import(&saved); err != nil {
		t.Fatal(err)
	}
	h.owners.Seed(store.SourceAmpServer, restored.ThreadKeys())
	if !reflect.DeepEqual(restored.Bills(), before) {
		t.Fatalf("bills after the restart %v, want %v", restored.Bills(), before)
	}
	h.store = restored
	h.sync = h.newSyncer(restored)
	h.srv.Reset()
	h.clk.Advance(time.Minute)
	st = h.syncOK()
	if got := dayCalls(h.srv); st.Fetched != 0 || !reflect.DeepEqual(got, []string{dayCall(0)}) {
		t.Fatalf("after the restart asked %v (fetched %d), want the one day left", got, st.Fetched)
	}
	sum, days := daysOf(t, h.store, dayThread)
	if days != 3 || sum != billOf(h.store, dayThread) {
		t.Fatalf("%d days summing to %d, want 3 summing to %d", days, sum, billOf(h.store, dayThread))
	}
	h.srv.Reset()
	h.clk.Advance(time.Minute)
	h.syncOK()
	if got := dayCalls(h.srv); len(got) != 0 {
		t.Fatalf("asked %v again", got)
	}
}

// A day bill that fails (the server down for longer than the client
// retries) is one warning, the sync stays complete with the thread's
// whole bill counted, and the days are asked at the next sync.
func TestSyncDayBillFailure(t *testing.T) {
	h := newHarness(t, 1, SyncConfig{Billed: true, MaxConcurrency: 1, Location: time.UTC})
	putDayThread(t, h)
	for range 8 { // two requests' worth of retries
		h.srv.FailPeriods(ampservertest.Fault{Status: 503})
	}
	st := h.syncOK()
	if st.DayBills != 0 || st.DayBillsFailed != 1 || billOf(h.store, dayThread) != 9e9 {
		t.Fatalf("sync with the days failing: %+v, whole bill %d", st, billOf(h.store, dayThread))
	}
	if n := strings.Count(h.log.String(), "level=WARN"); n != 1 || !strings.Contains(h.log.String(), "bills per day") {
		t.Fatalf("%d warnings, want one:\n%s", n, h.log)
	}
	h.clk.Advance(time.Minute)
	st = h.syncOK() // the rest of the faults: one more failure, at debug level
	if st.DayBillsFailed != 1 || strings.Count(h.log.String(), "level=WARN") != 1 {
		t.Fatalf("second failing sync %+v:\n%s", st, h.log)
	}
	h.clk.Advance(time.Minute)
	if st := h.syncOK(); st.DayBills != 3 {
		t.Fatalf("once the server answers: %+v", st)
	}
	if sum, days := daysOf(t, h.store, dayThread); days != 3 || sum != 9e9 {
		t.Fatalf("%d days summing to %d", days, sum)
	}
}

// The days are those of the configured zone: at UTC+05:30 the same thread
// is active on other days, and its day bills still sum to its bill.
func TestSyncDayBillsInTheZone(t *testing.T) {
	kolkata := time.FixedZone("IST", 5*3600+1800)
	h := newHarness(t, 1, SyncConfig{Billed: true, Location: kolkata})
	putDayThread(t, h)
	h.syncOK()
	// 10:00 UTC is 15:30 in Kolkata, 23:00 UTC the next day's 04:30: four days.
	var got []string
	for _, b := range h.store.Bills() {
		got = append(got, time.UnixMilli(b.Start).In(kolkata).Format("01-02 15:04")+fmt.Sprintf(" %d", b.USD))
	}
	want := []string{"04-07 00:00 1500000000", "04-08 00:00 3000000000", "04-09 00:00 2250000000", "04-10 00:00 2250000000"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("days at +05:30 %v, want %v", got, want)
	}
}

// The days asked for a thread are those of its items with tokens or
// credits, within the horizon and not more than a day ahead, each once;
// items copied from a fork's parent are the parent's.
func TestActiveDays(t *testing.T) {
	h := newHarness(t, 1, SyncConfig{Billed: true, Location: time.UTC, DayBillHorizon: 10 * 24 * time.Hour})
	at := func(d time.Duration) int64 { return t0.Add(d).UnixMilli() }
	tok := thread.Tokens{Output: 1}
	sum := &thread.Summary{Items: []thread.Item{
		{At: at(-11 * 24 * time.Hour), Tokens: tok},                 // before the horizon
		{At: at(-9 * 24 * time.Hour), Tokens: tok},                  // 9 days back
		{At: at(-9*24*time.Hour + time.Hour), Tokens: tok},          // the same day
		{At: at(-5 * 24 * time.Hour)},                               // a prompt: no tokens
		{At: at(-4 * 24 * time.Hour), Credits: 1, HasCredits: true}, // credits only
		{At: at(-3 * 24 * time.Hour), Tokens: tok, Copied: true},    // the parent's
		{At: at(0), Tokens: tok},                                    // today
		{At: at(48 * time.Hour), Tokens: tok},                       // a clock ahead
	}}
	var got []string
	for _, d := range h.sync.activeDays(sum) {
		got = append(got, time.UnixMilli(d.Start).UTC().Format("01-02")+"/"+time.UnixMilli(d.End).UTC().Format("01-02"))
	}
	if want := []string{"04-01/04-02", "04-06/04-07", "04-10/04-11"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("active days %v, want %v", got, want)
	}
}

// lookStore counts the store's looks for due days.
type lookStore struct {
	*store.ThreadStore
	looks int
}

func (s *lookStore) DueDayBills(since int64, limit int) []store.DueDayBill {
	s.looks++
	return s.ThreadStore.DueDayBills(since, limit)
}

// A look for due days goes through every thread of the store (14 ms at
// 30,000 threads on a busy two-core machine, under the store's read
// lock): once a pass asked every due day, syncs do not look again until a
// thread marks a day.
func TestSyncDayBillsLookOnlyWhenMarked(t *testing.T) {
	h := newHarness(t, 1, SyncConfig{Billed: true, Location: time.UTC})
	putDayThread(t, h)
	ls := &lookStore{ThreadStore: h.store}
	h.sync = NewSyncer(newTestClient(t, h.srv.URL, h.rec, nil), h.cfg, ls, SyncOptions{Owners: h.owners, Clock: h.clk})
	if st := h.syncOK(); st.DayBills != 3 || ls.looks != 1 {
		t.Fatalf("first sync: %d days, %d looks", st.DayBills, ls.looks)
	}
	for range 3 {
		h.clk.Advance(time.Minute)
		h.syncOK()
	}
	if ls.looks != 1 {
		t.Fatalf("%d looks in three idle syncs, want none", ls.looks-1)
	}
	h.srv.AppendMessage(dayThread, []byte(answer(6, h.clk.Now(), 1000)), h.clk.Now().UnixMilli())
	h.clk.Advance(time.Minute)
	if st := h.syncOK(); st.DayBills != 1 || ls.looks != 2 {
		t.Fatalf("after a change: %d days, %d looks", st.DayBills, ls.looks)
	}
}
