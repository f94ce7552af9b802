//go:build e2e

package e2e

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
)

// TestLabelChangesCountOnceThroughReload runs the real binary: a message
// first counted under a folded model and stop reason ("other", the cap is
// 1) is rewritten as cancelled after a reload raised the cap. It stays one
// message with its tokens where they were; only what the thread writes
// after the reload gets the label it could not have before (docs/counting.md,
// rules 1 and 9; issue 9, items 1 and 2).
func TestLabelChangesCountOnceThroughReload(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(t.TempDir(), "amp-exporter.yml")
	writeConfig := func(max int) {
		t.Helper()
		s := fmt.Sprintf("threads: {dirs: [%q]}\nlimits: {max_label_values: %d}\n", dir, max)
		if err := os.WriteFile(cfg, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	writeConfig(1)
	e := startExporter(t, exporterOpts{args: []string{"--config.file=" + cfg}})

	const idA, idB = "T-0e2e0000-0000-7000-8000-0000000000a1", "T-0e2e0000-0000-7000-8000-0000000000b1"
	writeThreadLikeAmp(t, dir, idA+".json", threadJSON(idA, "e2e-model-a", 1, 5))
	output := func(mfs map[string]*dto.MetricFamily) float64 {
		v, _ := value(mfs, "amp_tokens_total", map[string]string{"token_type": "output"})
		return v
	}
	e.waitFor(t, 10*time.Second, "thread A counted", func(mfs map[string]*dto.MetricFamily) (bool, string) {
		return output(mfs) == 5, fmt.Sprintf("output %g", output(mfs))
	})

	threadB := func(v int, state, tail string) []byte {
		return []byte(fmt.Sprintf(`{"v": %d, "id": %q, "created": 1780000000000, "agentMode": "smart", "messages": [
  {"role": "user", "messageId": 0, "content": [{"type": "text", "text": "run it"}], "meta": {"sentAt": 1780000001000}},
  {"role": "assistant", "messageId": 1, "content": [{"type": "tool_use", "id": "toolu_e2e1", "name": "Bash", "complete": true, "input": {"cmd": "make"}}],
   "state": %s,
   "usage": {"model": "e2e-model-b", "maxInputTokens": 200000, "inputTokens": 10, "outputTokens": 7, "totalInputTokens": 10}}%s]}`, v, idB, state, tail))
	}
	writeThreadLikeAmp(t, dir, idB+".json", threadB(1, `{"type": "complete", "stopReason": "tool_use"}`, ""))
	e.waitFor(t, 10*time.Second, "thread B counted under other", func(mfs map[string]*dto.MetricFamily) (bool, string) {
		v, n := value(mfs, "amp_tokens_total", map[string]string{"model": "other", "token_type": "output"})
		return n == 1 && v == 7, fmt.Sprintf("other output %g (%d series)", v, n)
	})

	writeConfig(10)
	if code, body, err := e.do(http.MethodPost, "/-/reload"); err != nil || code != http.StatusOK {
		t.Fatalf("reload: HTTP %d %q %v", code, body, err)
	}
	// The user interrupts the tool: the message is rewritten as cancelled
	// and its tool gets a cancelled result.
	writeThreadLikeAmp(t, dir, idB+".json", threadB(2, `{"type": "cancelled"}`,
		`, {"role": "user", "messageId": 2, "content": [{"type": "tool_result", "toolUseID": "toolu_e2e1", "run": {"status": "cancelled"}}]}`))
	e.waitFor(t, 10*time.Second, "the cancelled rewrite read", func(mfs map[string]*dto.MetricFamily) (bool, string) {
		v, _ := value(mfs, "amp_tool_calls_total", nil)
		return v == 1, fmt.Sprintf("%g tool calls", v)
	})
	mfs := e.metrics(t)
	finished, _ := value(mfs, "amp_assistant_messages_total", nil)
	assistant := mustValue(t, mfs, "amp_messages_total", map[string]string{"role": "assistant", "source": "threads"})
	if finished != 2 || assistant != 2 {
		t.Errorf("amp_assistant_messages_total sums to %g, amp_messages_total{role=assistant} is %g; want 2 and 2", finished, assistant)
	}
	if got := output(mfs); got != 12 {
		t.Errorf("output tokens %g, want 12", got)
	}
	if _, n := value(mfs, "amp_tokens_total", map[string]string{"model": "e2e-model-b"}); n != 0 {
		t.Errorf("thread B's first message moved to its own model label after the reload")
	}

	// What B writes from now on is counted under its own label.
	writeThreadLikeAmp(t, dir, idB+".json", threadB(3, `{"type": "cancelled"}`,
		`, {"role": "user", "messageId": 2, "content": [{"type": "tool_result", "toolUseID": "toolu_e2e1", "run": {"status": "cancelled"}}]},
  {"role": "user", "messageId": 3, "content": [{"type": "text", "text": "again"}], "meta": {"sentAt": 1780000009000}},
  {"role": "assistant", "messageId": 4, "content": [{"type": "text", "text": "done"}], "state": {"type": "complete", "stopReason": "end_turn"},
   "usage": {"model": "e2e-model-b", "maxInputTokens": 200000, "inputTokens": 10, "outputTokens": 3, "totalInputTokens": 10}}`))
	e.waitFor(t, 10*time.Second, "the new message counted under its model", func(mfs map[string]*dto.MetricFamily) (bool, string) {
		v, _ := value(mfs, "amp_tokens_total", map[string]string{"model": "e2e-model-b", "token_type": "output"})
		return v == 3 && output(mfs) == 15, fmt.Sprintf("e2e-model-b output %g, all output %g", v, output(mfs))
	})
	mfs = e.metrics(t)
	finished, _ = value(mfs, "amp_assistant_messages_total", nil)
	if finished != 3 {
		t.Errorf("amp_assistant_messages_total sums to %g, want 3", finished)
	}
}
