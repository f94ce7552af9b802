package backfill

import (
	"fmt"
	"testing"
	"time"

	"github.com/amp-exporter/amp-exporter/parser/thread"
	"github.com/amp-exporter/amp-exporter/store"
)

// TestLinesAndShellCommandsByTime: the lines an edit changed and the shell
// commands count from the sample of their tool result's time, as the
// other families do. The counts are worked out by hand: create_file of
// three lines (+3), edit_file "x\ny" → "x\nz\nw" (+2 −1), Bash exit 1
// (failure), Bash exit 0 (success), a cancelled shell_command (stopped),
// a rejected edit (nothing).
func TestLinesAndShellCommandsByTime(t *testing.T) {
	at := func(ms int64) string { return time.UnixMilli(ms).UTC().Format("2006-01-02T15:04:05.000Z") }
	use := func(id, name, input string) string {
		return fmt.Sprintf(`{"type": "tool_use", "id": %q, "name": %q, "input": %s}`, id, name, input)
	}
	res := func(id, run string) string {
		return fmt.Sprintf(`{"type": "tool_result", "toolUseID": %q, "run": %s}`, id, run)
	}
	prompt := func(n int, sent int64) string {
		return fmt.Sprintf(`{"role": "user", "messageId": %d, "content": [{"type": "text", "text": "go"}], "meta": {"sentAt": %d}}`, n, sent)
	}
	assistant := func(n int, ts int64, uses string) string {
		return fmt.Sprintf(`{"role": "assistant", "messageId": %d, "content": [%s], "state": {"type": "complete", "stopReason": "tool_use"},
 "usage": {"model": "test-model", "inputTokens": 1, "outputTokens": 1, "timestamp": %q}}`, n, uses, at(ts))
	}
	results := func(n int, rs string) string {
		return fmt.Sprintf(`{"role": "user", "messageId": %d, "content": [%s]}`, n, rs)
	}
	data := []byte(`{"v": 1, "id": "T-lines", "created": ` + fmt.Sprint(base+1000) + `, "messages": [` +
		prompt(0, base+60_000) + "," +
		assistant(1, base+120_000, use("t1", "create_file", `{"path": "/a", "content": "a\nb\nc\n"}`)) + "," +
		results(2, res("t1", `{"status": "done", "result": "ok"}`)) + "," + // sample base+5m
		prompt(3, base+6*60_000) + "," +
		assistant(4, base+7*60_000, use("t2", "edit_file", `{"path": "/a", "old_str": "x\ny", "new_str": "x\nz\nw"}`)+","+
			use("t3", "Bash", `{"cmd": "make"}`)+","+use("t4", "create_file", `{"path": "/b", "content": "1\n2\n"}`)) + "," +
		results(5, res("t2", `{"status": "done"}`)+","+res("t3", `{"status": "done", "result": {"output": "", "exitCode": 1}}`)+","+
			res("t4", `{"status": "rejected-by-user"}`)) + "," + // base+10m
		prompt(6, base+11*60_000) + "," +
		assistant(7, base+12*60_000, use("t5", "Bash", `{"cmd": "make"}`)+","+use("t6", "shell_command", `{"command": "ls"}`)) + "," +
		results(8, res("t5", `{"status": "done", "result": {"output": "ok", "exitCode": 0}}`)+","+res("t6", `{"status": "cancelled"}`)) + // base+15m
		`]}`)
	b, err := New(Options{Until: time.UnixMilli(base + 15*60_000), Prices: prices()})
	if err != nil {
		t.Fatal(err)
	}
	if err := b.AddThread(store.SourceThreads, "/d/T-lines.json", summarize(t, thread.NewParser(), data)); err != nil {
		t.Fatal(err)
	}
	times := b.Range(time.Time{})
	if want := []int64{base + min5, base + 2*min5, base + 3*min5}; fmt.Sprint(times) != fmt.Sprint(want) {
		t.Fatalf("times %v, want %v", times, want)
	}
	got := map[string][]float64{}
	for _, s := range b.Series(times) {
		for pt := range s.Points() {
			got[seriesName(s.ID)] = append(got[seriesName(s.ID)], Value(s.ID.Key.Fam, pt.V))
		}
	}
	for name, vals := range map[string][]float64{
		`amp_lines_changed_total{kind="added",source="threads",tool="Write"}`:  {3, 3, 3},
		`amp_lines_changed_total{kind="added",source="threads",tool="Edit"}`:   {0, 2, 2},
		`amp_lines_changed_total{kind="removed",source="threads",tool="Edit"}`: {0, 1, 1},
		`amp_shell_commands_total{outcome="failure",source="threads"}`:         {0, 1, 1},
		`amp_shell_commands_total{outcome="success",source="threads"}`:         {0, 0, 1},
		`amp_shell_commands_total{outcome="stopped",source="threads"}`:         {0, 0, 1},
	} {
		g := got[name]
		if len(g) < len(vals) {
			g = append(make([]float64, len(vals)-len(g)), g...) // not there yet: 0
		}
		if fmt.Sprint(g) != fmt.Sprint(vals) {
			t.Errorf("%s: %v, want %v", name, g, vals)
		}
	}
}
