package backfill

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/amp-exporter/amp-exporter/parser/thread"
	"github.com/amp-exporter/amp-exporter/store"
)

// TestCommitsByTime: commits, pull requests and pushes count from the
// sample of their tool result's time, as lines do. Worked out by hand: a
// commit and its push at 5m; a pull request, a rejected push and an
// --amend (no commit) at 10m; a commit of a call that failed (none) at
// 15m. The by-model families count the same at the same times.
func TestCommitsByTime(t *testing.T) {
	at := func(ms int64) string { return time.UnixMilli(ms).UTC().Format("2006-01-02T15:04:05.000Z") }
	var msgs []any
	call := func(n int, ms int64, cmd, output string, exit int) {
		id := fmt.Sprintf("t%d", n)
		msgs = append(msgs,
			map[string]any{"role": "assistant", "messageId": n, "content": []any{map[string]any{"type": "tool_use", "id": id, "name": "Bash", "input": map[string]any{"cmd": cmd}}},
				"state": map[string]any{"type": "complete", "stopReason": "tool_use"},
				"usage": map[string]any{"model": "test-model", "inputTokens": 1, "outputTokens": 1, "timestamp": at(ms)}},
			map[string]any{"role": "user", "messageId": n + 1, "content": []any{map[string]any{"type": "tool_result", "toolUseID": id,
				"run": map[string]any{"status": "done", "result": map[string]any{"output": output, "exitCode": exit}}}}})
	}
	call(1, base+2*60_000, `git commit -am x && git push`, "[main 1a2b3c4] x\nTo github.com:acme/web.git\n", 0)
	call(3, base+7*60_000, `gh pr create --fill`, "https://github.com/acme/web/pull/9\n", 0)
	call(5, base+8*60_000, `git push other main`, "To github.com:acme/web.git\nerror: failed to push some refs to 'x'\n", 1)
	call(7, base+9*60_000, `git commit --amend --no-edit`, "[main 5d6e7f8] x\n", 0)
	call(9, base+12*60_000, `git commit -m y && make test`, "[main 9a8b7c6] y\nFAIL\n", 2)
	data, err := json.Marshal(map[string]any{"v": 1, "id": "T-commits", "created": base + 1000, "messages": msgs})
	if err != nil {
		t.Fatal(err)
	}
	b, err := New(Options{Until: time.UnixMilli(base + 15*60_000), Prices: prices()})
	if err != nil {
		t.Fatal(err)
	}
	if err := b.AddThread(store.SourceThreads, "/d/T-commits.json", summarize(t, thread.NewParser(), data)); err != nil {
		t.Fatal(err)
	}
	times := b.Range(time.Time{})
	got := map[string][]float64{}
	for _, s := range b.Series(times) {
		for pt := range s.Points() {
			got[seriesName(s.ID)] = append(got[seriesName(s.ID)], Value(s.ID.Key.Fam, pt.V))
		}
	}
	for name, vals := range map[string][]float64{
		`amp_commits_total{source="threads"}`:                  {1, 1, 1},
		`amp_pull_requests_total{source="threads"}`:            {0, 1, 1},
		`amp_pushes_total{outcome="success",source="threads"}`: {1, 1, 1},
		`amp_pushes_total{outcome="failure",source="threads"}`: {0, 1, 1},
		// The same, by the model of the message that made the call.
		`amp_commits_by_model_total{model="test-model",source="threads"}`:       {1, 1, 1},
		`amp_pull_requests_by_model_total{model="test-model",source="threads"}`: {0, 1, 1},
	} {
		g := got[name]
		if len(g) < len(vals) {
			g = append(make([]float64, len(vals)-len(g)), g...) // not there yet: 0
		}
		if fmt.Sprint(g) != fmt.Sprint(vals) {
			t.Errorf("%s: %v, want %v (times %v)", name, g, vals, times)
		}
	}
}
