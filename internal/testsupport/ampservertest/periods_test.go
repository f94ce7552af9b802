package ampservertest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"testing"
	"time"
)

const periodThread = "T-00000000-0000-4000-8000-00000000000a"

// periodDoc is a thread of five answers over three days: 1,000 tokens on
// the first day, 3,000 on the second (one answer dated by its usage's
// timestamp only, one by nothing: the nearest earlier time), 6,000 on the
// third, and a prompt without usage.
func periodDoc(day0 time.Time) []byte {
	at := func(d int, h int) string {
		return day0.Add(time.Duration(d)*24*time.Hour + time.Duration(h)*time.Hour).Format(time.RFC3339)
	}
	msgs := []string{
		fmt.Sprintf(`{"role":"user","createdAt":%q,"content":[{"type":"text","text":"go"}]}`, at(0, 9)),
		fmt.Sprintf(`{"role":"assistant","createdAt":%q,"usage":{"inputTokens":600,"outputTokens":400}}`, at(0, 10)),
		fmt.Sprintf(`{"role":"assistant","usage":{"inputTokens":1000,"outputTokens":500,"timestamp":%q}}`, at(1, 8)),
		`{"role":"assistant","usage":{"inputTokens":1000,"outputTokens":500,"cacheReadInputTokens":null}}`,
		fmt.Sprintf(`{"role":"assistant","createdAt":%q,"usage":{"inputTokens":5000,"outputTokens":500,"cacheCreationInputTokens":250,"cacheReadInputTokens":250}}`, at(2, 23)),
	}
	return []byte(fmt.Sprintf(`{"v":1,"id":%q,"created":%d,"messages":[%s]}`, periodThread, day0.UnixMilli(), bytes.Join(func() [][]byte {
		var out [][]byte
		for _, m := range msgs {
			out = append(out, []byte(m))
		}
		return out
	}(), []byte(","))))
}

func costOf(t *testing.T, s *Server, params map[string]any) (int, map[string]json.RawMessage) {
	t.Helper()
	return call(t, s, "k", "threadDisplayCostInfo", params)
}

func amount(t *testing.T, raw json.RawMessage, field string) float64 {
	t.Helper()
	var res map[string]json.RawMessage
	if err := json.Unmarshal(raw, &res); err != nil {
		t.Fatal(err)
	}
	var v float64
	if err := json.Unmarshal(res[field], &v); err != nil {
		t.Fatalf("%s: %s", field, res[field])
	}
	return v
}

// threadDisplayCostInfo with start and end answers the thread's bill
// within [start, end): its share of the whole bill by the tokens of the
// messages whose time lies there. The days add up to the whole bill to
// the 1e-10 USD, and a period that is not an ISO datetime is refused as
// the server refuses a request outside its schema.
func TestStandInBillsAPeriod(t *testing.T) {
	s := New("k", "a@b")
	defer s.Close()
	day0 := time.Date(2026, 4, 7, 0, 0, 0, 0, time.UTC)
	if _, err := s.Put(periodDoc(day0), 0); err != nil {
		t.Fatal(err)
	}
	const total = 1.2345678901
	s.SetCost(periodThread, map[string]any{"title": "t", "totalCostUSD": total,
		"costBreakdown": map[string]any{"paidUSD": 1.0, "freeUSD": 0.2345678901}, "coverage": "subscription"})
	iso := func(t time.Time) string { return t.Format(time.RFC3339) }

	_, env := costOf(t, s, map[string]any{"threadID": periodThread})
	if got := amount(t, env["result"], "totalCostUSD"); got != total {
		t.Fatalf("whole bill %v, want %v", got, total)
	}
	var sum, paid int64
	wantTokens := []float64{1000, 3000, 6000}
	for d := range 3 {
		start, end := day0.AddDate(0, 0, d), day0.AddDate(0, 0, d+1)
		code, env := costOf(t, s, map[string]any{"threadID": periodThread, "start": iso(start), "end": iso(end)})
		if code != 200 {
			t.Fatalf("day %d: HTTP %d %s", d, code, env["error"])
		}
		got := amount(t, env["result"], "totalCostUSD")
		if want := total * wantTokens[d] / 10000; math.Abs(got-want) > 2e-10 {
			t.Errorf("day %d billed %.10f, want %.10f (its share of the tokens)", d, got, want)
		}
		sum += int64(math.Round(got * 1e10))
		var res struct {
			CostBreakdown struct{ PaidUSD float64 } `json:"costBreakdown"`
			Coverage      string                    `json:"coverage"`
		}
		_ = json.Unmarshal(env["result"], &res)
		paid += int64(math.Round(res.CostBreakdown.PaidUSD * 1e10))
		if res.Coverage != "subscription" {
			t.Errorf("day %d: coverage %q, want the whole bill's", d, res.Coverage)
		}
	}
	if want := int64(math.Round(total * 1e10)); sum != want || paid != 1e10 {
		t.Fatalf("the days sum to %d and paid %d (1e-10 USD), want %d and %d", sum, paid, want, int64(1e10))
	}
	// Open ends, and a period of no activity.
	_, env = costOf(t, s, map[string]any{"threadID": periodThread, "start": iso(day0.AddDate(0, 0, 1))})
	if got := amount(t, env["result"], "totalCostUSD"); math.Abs(got-total*0.9) > 2e-10 {
		t.Errorf("from day 1 on: %v", got)
	}
	_, env = costOf(t, s, map[string]any{"threadID": periodThread, "end": "2026-04-08T00:00:00.000+00:00"})
	if got := amount(t, env["result"], "totalCostUSD"); math.Abs(got-total*0.1) > 2e-10 {
		t.Errorf("before day 1: %v", got)
	}
	_, env = costOf(t, s, map[string]any{"threadID": periodThread, "start": iso(day0.AddDate(0, 0, 5)), "end": iso(day0.AddDate(0, 0, 6))})
	if got := amount(t, env["result"], "totalCostUSD"); got != 0 {
		t.Errorf("a day without activity: %v", got)
	}
	// A thread without a bill has none in a period either.
	s.SetCost(periodThread, nil)
	_, env = costOf(t, s, map[string]any{"threadID": periodThread, "start": iso(day0), "end": iso(day0.AddDate(0, 0, 1))})
	var res map[string]json.RawMessage
	_ = json.Unmarshal(env["result"], &res)
	if string(res["totalCostUSD"]) != "null" {
		t.Errorf("no bill: totalCostUSD %s", res["totalCostUSD"])
	}

	for _, bad := range []any{"2026-04-07", "yesterday", "2026-04-07T00:00:00", "2026-13-07T00:00:00Z", 1775520000000} {
		code, env := costOf(t, s, map[string]any{"threadID": periodThread, "start": bad, "end": iso(day0)})
		if code != 400 || !bytes.Contains(env["error"], []byte("invalid-argument")) {
			t.Errorf("start %v: HTTP %d %s, want invalid-argument", bad, code, env["error"])
		}
	}
	if n := len(s.CostCalls()); n != 12 { // a start that is no string fails with the params
		t.Errorf("%d calls recorded, want 12", n)
	}
}
