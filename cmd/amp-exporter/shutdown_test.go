//go:build !windows

package main

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/amp-exporter/amp-exporter/internal/app"
)

// TestIngestAnsweredDuringShutdownIsSaved sends SIGTERM while an ingest
// request is still streaming its body, finishes the body after the
// signal, and restarts the exporter on the same storage: an ingest
// answered 200 while the exporter shuts down must be on disk (the HTTP
// server drains before the sources stop and the final save runs), and the
// run must count once.
func TestIngestAnsweredDuringShutdownIsSaved(t *testing.T) {
	t.Parallel() // its own exporters and storage: alongside the kill loops
	root := t.TempDir()
	threadsDir := filepath.Join(root, "threads")
	if err := os.Mkdir(threadsDir, 0o755); err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(root, "amp-exporter.yml")
	if err := os.WriteFile(cfg, []byte(fmt.Sprintf("threads:\n  dirs: [%q]\namp_server:\n  enabled: false\n", threadsDir)), 0o644); err != nil {
		t.Fatal(err)
	}
	run, err := os.ReadFile("../../parser/streamjson/testdata/success-run.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.SplitAfter(strings.TrimSpace(string(run)), "\n")
	storage := filepath.Join(root, "state")

	v := startVictim(t, cfg, storage)
	t.Cleanup(v.kill)
	waitCounters(t, v, "the exporter to be ready", func(string) bool { return true })

	pr, pw := io.Pipe()
	type answer struct {
		code int
		body string
		err  error
	}
	answered := make(chan answer, 1)
	go func() {
		resp, err := http.Post(fmt.Sprintf("http://127.0.0.1:%d%s", v.port, app.IngestPath), "application/x-ndjson", pr)
		if err != nil {
			answered <- answer{err: err}
			return
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		answered <- answer{code: resp.StatusCode, body: string(b)}
	}()
	// Everything but the result line: the run is under way.
	if _, err := io.WriteString(pw, strings.Join(lines[:len(lines)-1], "")); err != nil {
		t.Fatal(err)
	}
	waitCounters(t, v, "the first lines to be counted", func(c string) bool {
		return strings.Contains(c, "amp_messages_total{role=user,source=stream}")
	})

	if err := v.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	// Long enough for a final save that does not wait for the HTTP
	// server to have run; the body then ends while the server drains.
	time.Sleep(500 * time.Millisecond)
	if _, err := io.WriteString(pw, lines[len(lines)-1]+"\n"); err != nil {
		t.Fatalf("the exporter stopped reading the body right after SIGTERM: %v", err)
	}
	pw.Close()
	var a answer
	select {
	case a = <-answered:
	case <-time.After(30 * time.Second):
		t.Fatal("the ingest request was never answered")
	}
	exited := make(chan error, 1)
	go func() { exited <- v.cmd.Wait() }()
	select {
	case err := <-exited:
		if err != nil {
			t.Fatalf("the exporter exited with %v:\n%s", err, v.out.String())
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the exporter did not exit after SIGTERM")
	}
	if a.err != nil || a.code != http.StatusOK {
		t.Fatalf("ingest answered during shutdown: %d %q %v, want 200 (the server drains before anything stops)\n%s", a.code, a.body, a.err, v.out.String())
	}

	again := startVictim(t, cfg, storage)
	t.Cleanup(again.kill)
	got := again.settled(t)
	for _, want := range []string{
		"amp_executions_total{outcome=success} 1",
		"amp_messages_total{role=user,source=stream} 5",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("an ingest answered 200 during shutdown was not saved: after a restart, no %q in\n%s", want, got)
		}
	}
}

// waitCounters polls the exporter's counters until cond holds.
func waitCounters(t *testing.T, v *victim, what string, cond func(string) bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		if c, ok := v.counters(); ok && cond(c) {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("timed out waiting for %s", what)
}
