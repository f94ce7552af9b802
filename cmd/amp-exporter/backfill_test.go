package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestBackfillCommand: the subcommand's refusals, each one clear line,
// and a run over a thread directory that writes OpenMetrics ending in
// # EOF and says what to run next.
func TestBackfillCommand(t *testing.T) {
	oneThreadFile(t)
	out := filepath.Join(t.TempDir(), "history.om")
	for _, tc := range []struct {
		name string
		args []string
		code int
		err  string
	}{
		{"nothing to do", []string{"backfill"}, 1, "give --output FILE or --remote-write.url URL"},
		{"bad label", []string{"backfill", "--output=" + out, "--label=job"}, 1, `label "job": want NAME=VALUE`},
		{"bad until", []string{"backfill", "--output=" + out, "--until=yesterday"}, 1, "--until: "},
		{"from after until", []string{"backfill", "--output=" + out, "--from=2026-03-01T00:00:00Z", "--until=2026-02-01T00:00:00Z"}, 1, "is not before --until"},
		{"bad step", []string{"backfill", "--output=" + out, "--step=1ms"}, 1, "--step: "},
		{"written", []string{"backfill", "--output=" + out, "--label=job=amp", "--label=instance=a:1", "--until=2026-03-01T00:00:00Z", "--step=1h"}, 0,
			"next: promtool tsdb create-blocks-from openmetrics --max-block-duration=43800h " + out},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			if code := run(tc.args, &stdout, &stderr); code != tc.code {
				t.Fatalf("exit %d, want %d; stderr:\n%s", code, tc.code, stderr.String())
			}
			if !strings.Contains(stderr.String(), tc.err) {
				t.Errorf("stderr does not say %q:\n%s", tc.err, stderr.String())
			}
		})
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasSuffix(string(b), "\n# EOF\n") || !strings.Contains(string(b), `amp_tokens_total{instance="a:1",job="amp",model=`) {
		t.Errorf("the file is not the history:\n%.500s", b)
	}
}

// oneThreadFile points the exporter at a thread directory holding one
// thread file with usage, and at no Amp server login.
func oneThreadFile(t *testing.T) {
	t.Helper()
	threads := t.TempDir()
	data, err := os.ReadFile("../../parser/thread/testdata/usage-era.json")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(threads, "T-1.json"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("AMP_THREADS_DIR", threads)
	t.Setenv("AMP_API_KEY", "")
	t.Setenv("XDG_DATA_HOME", t.TempDir())
}

// TestBackfillBoundsTimes is issue 27's case: one usage stamped
// 1970-01-01T00:00:01Z among six 2026 threads. The history starts with
// the threads (it reached back to 1970: 27 times the samples), the range
// is said before the file is written, and one log line counts the item.
func TestBackfillBoundsTimes(t *testing.T) {
	threads := t.TempDir()
	created := time.Date(2026, 2, 10, 9, 0, 0, 0, time.UTC)
	for i := range 6 {
		c := created.Add(time.Duration(i) * 24 * time.Hour)
		stamp := c.Add(2 * time.Minute).Format(time.RFC3339)
		if i == 3 {
			stamp = "1970-01-01T00:00:01Z"
		}
		doc := fmt.Sprintf(`{"v": 2, "id": "T-%d", "created": %d, "messages": [
 {"role": "user", "messageId": 0, "content": [{"type": "text", "text": "go"}], "meta": {"sentAt": %d}},
 {"role": "assistant", "messageId": 1, "content": [{"type": "text", "text": "ok"}], "state": {"type": "complete", "stopReason": "end_turn"},
  "usage": {"model": "claude-sonnet-4-5-20250929", "inputTokens": 100, "outputTokens": 10, "timestamp": %q}}]}`,
			i, c.UnixMilli(), c.Add(time.Minute).UnixMilli(), stamp)
		if err := os.WriteFile(filepath.Join(threads, fmt.Sprintf("T-%d.json", i)), []byte(doc), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv("AMP_THREADS_DIR", threads)
	t.Setenv("AMP_API_KEY", "")
	t.Setenv("XDG_DATA_HOME", t.TempDir())
	out := filepath.Join(t.TempDir(), "history.om")
	var stdout, stderr bytes.Buffer
	if code := run([]string{"backfill", "--output=" + out, "--label=job=amp", "--label=instance=a:1", "--until=2026-02-17T00:00:00Z",
		"--step=1h"}, &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d; stderr:\n%s", code, stderr.String())
	}
	// From the first usage (09:02, in the 10:00 sample) to --until: 6.6
	// days of hourly steps for 7 series (it was 56 years: 29.5 million
	// samples, 3.6 GB, at 5m).
	if !strings.Contains(stderr.String(), "history: 2026-02-10T10:00:00Z to 2026-02-17T00:00:00Z (6.6 days), 7 series, 1113 samples") {
		t.Errorf("the range is not said, or not the threads':\n%s", stderr.String())
	}
	if !strings.Contains(stderr.String(), "items=1 before_created=1 before_amp=0 future=0") {
		t.Errorf("no log line counts the bounded item:\n%s", stderr.String())
	}
	if i, j := strings.Index(stderr.String(), "history: "), strings.Index(stderr.String(), "backfilled "); i < 0 || j < i {
		t.Errorf("the range is not said before the writing:\n%s", stderr.String())
	}
}
