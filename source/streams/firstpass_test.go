package streams

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// OnFirstPass is called once, when Run's first poll has read the captures
// already there to their end (the exporter shows the stream-json families
// from then on), and not again on later polls.
func TestTailerOnFirstPass(t *testing.T) {
	dir := t.TempDir()
	for name, run := range map[string][]string{"a.jsonl": runLines, "b.jsonl": runOf("T-2")} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(runText(run...)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	e := newEnv(t, nil)
	tl := e.tailer(dir)
	ctx, cancel := context.WithCancel(context.Background())
	calls := 0
	var atFirstPass float64
	polled := make(chan struct{}, 8)
	tl.Trace = func() { polled <- struct{}{} }
	tl.OnFirstPass = func() {
		calls++
		atFirstPass = e.outputTokens()
	}
	done := make(chan error, 1)
	go func() { done <- tl.Run(ctx) }()
	<-polled
	// A poll on reconfiguration must not call it again.
	tl.Reconfigure(ctx, TailConfig{Dirs: []string{dir}, PollInterval: time.Hour, MaxLineBytes: 1 << 20})
	<-polled
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if calls != 1 {
		t.Errorf("OnFirstPass called %d times, want once", calls)
	}
	if want := 2 * 150.0; atFirstPass != want {
		t.Errorf("output tokens when the first pass was reported: %v, want both captures' %v", atFirstPass, want)
	}
}
