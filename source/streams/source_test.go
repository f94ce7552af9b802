package streams

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/amp-exporter/amp-exporter/config"
	"github.com/amp-exporter/amp-exporter/store"
)

type nopMetrics struct{}

func (nopMetrics) ParseFailed(string, string) {}

// The source runs only once configured; a configuration applied while it
// runs reaches the tailer, which polls the new directory at once.
func TestSourceAppliesBeforeAndWhileRunning(t *testing.T) {
	st := store.NewStreamStore(store.NewLabelCap(100, nil), nil)
	src := NewSource(st, nopMetrics{}, nil, nil)
	if src.Name() != "streams" {
		t.Errorf("name %q", src.Name())
	}
	if err := src.Run(context.Background()); err == nil {
		t.Fatal("Run before Apply did not fail")
	}
	empty, captures := t.TempDir(), t.TempDir()
	run, err := os.ReadFile("../../parser/streamjson/testdata/success-run.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(captures, "run.jsonl"), run, 0o644); err != nil {
		t.Fatal(err)
	}
	cfg := config.Default()
	cfg.Streams.Dirs = []string{empty}
	if err := src.Apply(cfg); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	ran := make(chan error, 1)
	go func() { ran <- src.Run(ctx) }()
	cfg = config.Default()
	cfg.Streams.Dirs = []string{empty, captures}
	if err := src.Apply(cfg); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for len(st.Files()) == 0 {
		if time.Now().After(deadline) {
			t.Fatal("the directory added while running was not tailed")
		}
		time.Sleep(5 * time.Millisecond)
	}
	cancel()
	if err := <-ran; err != nil {
		t.Fatal(err)
	}
	// Once stopped, Apply returns instead of waiting for a loop that is gone.
	if err := src.Apply(config.Default()); err != nil {
		t.Fatal(err)
	}
}
