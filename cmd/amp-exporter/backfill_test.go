package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
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
		{"written", []string{"backfill", "--output=" + out, "--label=job=amp", "--label=instance=a:1", "--until=2026-03-01T00:00:00Z"}, 0,
			"next: promtool tsdb create-blocks-from openmetrics " + out},
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
