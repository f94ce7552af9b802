//go:build e2e

package e2e

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
)

func readCapture(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(repoRoot, "parser", "streamjson", "testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func streamValue(t *testing.T, mfs map[string]*dto.MetricFamily, name string, labels map[string]string) float64 {
	t.Helper()
	v, _ := value(mfs, name, labels)
	return v
}

// TestStreamJSONTailIngestAndRestart drives the stream-json source through
// the real binary: a tailed capture written in two pieces (a line cut
// across the writes), the `amp-exporter ingest` subcommand in a pipeline, a
// chunked POST, a restart with --storage.path mid-run, and a real
// Prometheus reading the result.
//
// Expected numbers come from parser/streamjson/testdata (see the golden
// files): success-run.jsonl has 665 output tokens (180+240+90+60+95), five
// tool results (Bash done, Edit cancelled, Write rejected, WebFetch error,
// mcp__github done) and ends in a success of 61.8 s and 5 turns;
// approval-denied.jsonl has 50 output tokens and ends in an error with
// Bash and edit_file (Edit) denied; killed-run.jsonl has 20 output tokens
// and no result line.
func TestStreamJSONTailIngestAndRestart(t *testing.T) {
	runs, storage := t.TempDir(), t.TempDir()
	cfg := filepath.Join(t.TempDir(), "amp-exporter.yml")
	if err := os.WriteFile(cfg, []byte(fmt.Sprintf("streams:\n  dirs: [%q]\n  poll_interval: 100ms\n", runs)), 0o644); err != nil {
		t.Fatal(err)
	}
	opts := exporterOpts{args: []string{"--config.file=" + cfg, "--storage.path=" + storage}}
	e := startExporter(t, opts)

	// 1. A capture appended in two writes, the cut inside a line.
	capture := readCapture(t, "success-run.jsonl")
	cut := strings.Index(capture, `"stop_reason":"end_turn"`)
	path := filepath.Join(runs, "run-1.jsonl")
	if err := os.WriteFile(path, []byte(capture[:cut]), 0o644); err != nil {
		t.Fatal(err)
	}
	output := map[string]string{"source": "stream", "token_type": "output"}
	e.waitFor(t, 10*time.Second, "first part of the capture", func(mfs map[string]*dto.MetricFamily) (bool, string) {
		v := streamValue(t, mfs, "amp_tokens_total", output)
		return v == 570, fmt.Sprint("output tokens ", v) // all but the cut line's 95
	})

	// 2. A restart in the middle of the run: the cut line is read once, the
	// rest is not read again.
	if err := e.stop(); err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString(capture[cut:]); err != nil {
		t.Fatal(err)
	}
	f.Close()
	e = startExporter(t, opts)
	e.waitFor(t, 10*time.Second, "rest of the capture after the restart", func(mfs map[string]*dto.MetricFamily) (bool, string) {
		v := streamValue(t, mfs, "amp_tokens_total", output)
		s := streamValue(t, mfs, "amp_executions_total", map[string]string{"outcome": "success"})
		return v == 665 && s == 1, fmt.Sprintf("output tokens %v, successes %v", v, s)
	})

	// 3. The ingest subcommand in a pipeline: stdin passes through.
	cmd := exec.Command(exporterBin, "ingest", "--url="+e.base+"/api/v1/ingest/stream-json")
	cmd.Stdin = strings.NewReader(readCapture(t, "approval-denied.jsonl"))
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("amp-exporter ingest: %v\n%s", err, stderr.String())
	}
	if stdout.String() != readCapture(t, "approval-denied.jsonl") {
		t.Fatalf("ingest did not pass stdin through unchanged")
	}

	// 4. A chunked POST (what `curl -T -` sends) of a run that was killed.
	pr, pw := io.Pipe()
	go func() {
		for _, line := range strings.SplitAfter(readCapture(t, "killed-run.jsonl"), "\n") {
			pw.Write([]byte(line))
		}
		pw.Close()
	}()
	resp, err := http.Post(e.base+"/api/v1/ingest/stream-json", "application/x-ndjson", pr)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), `"runs_incomplete":1`) {
		t.Fatalf("chunked POST: %d %s", resp.StatusCode, body)
	}
	// Garbage is refused with a clear 400 and counted.
	resp, err = http.Post(e.base+"/api/v1/ingest/stream-json", "application/x-ndjson", strings.NewReader("{\"v\": 3, \"messages\": []}\nnot json\n"))
	if err != nil {
		t.Fatal(err)
	}
	body, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(body), "line 2") {
		t.Fatalf("garbage POST: %d %s", resp.StatusCode, body)
	}

	want := []struct {
		name   string
		labels map[string]string
		value  float64
	}{
		{"amp_tokens_total", output, 665 + 50 + 20},
		{"amp_executions_total", map[string]string{"outcome": "success"}, 1},
		{"amp_executions_total", map[string]string{"outcome": "error"}, 1},
		{"amp_executions_total", map[string]string{"outcome": "incomplete"}, 1},
		{"amp_permission_denials_total", map[string]string{"tool": "Bash"}, 1},
		{"amp_permission_denials_total", map[string]string{"tool": "Edit"}, 1},
		{"amp_tool_calls_total", map[string]string{"source": "stream", "tool": "Write", "status": "rejected"}, 1},
		{"amp_tool_calls_total", map[string]string{"source": "stream", "tool": "Edit", "status": "cancelled"}, 1},
		{"amp_tool_calls_total", map[string]string{"source": "stream"}, 5},
		{"amp_prompts_total", map[string]string{"source": "stream"}, 3},
		{"amp_execution_turns", nil, 2},
		{"amp_exporter_parse_errors_total", map[string]string{"source": "stream", "reason": "invalid_json"}, 1},
	}
	mfs := e.metrics(t)
	for _, w := range want {
		if got := streamValue(t, mfs, w.name, w.labels); got != w.value {
			t.Errorf("%s%v = %v, want %v", w.name, w.labels, got, w.value)
		}
	}

	// 5. A real Prometheus sees the same.
	p := startPrometheus(t, strings.TrimPrefix(e.base, "http://"))
	deadline := time.Now().Add(45 * time.Second)
	for {
		got, err := p.query(`sum by (outcome) (amp_executions_total{job="amp"})`, "outcome")
		if err == nil && got["success"] == 1 && got["error"] == 1 && got["incomplete"] == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("Prometheus: %v %v", got, err)
		}
		time.Sleep(500 * time.Millisecond)
	}
	if err := e.stop(); err != nil {
		t.Fatal(err)
	}
}
