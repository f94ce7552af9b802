package threads

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/amp-exporter/amp-exporter/config"
	"github.com/amp-exporter/amp-exporter/internal/testsupport/threadgen"
	"github.com/amp-exporter/amp-exporter/store"
)

type quietMetrics struct{}

func (quietMetrics) ParseFailed(string, string)   {}
func (quietMetrics) Parsed(string, time.Duration) {}
func (quietMetrics) WatcherFellBack(string)       {}
func (quietMetrics) WatcherPolling(bool)          {}
func (quietMetrics) DirsMissing(int)              {}

// The source runs only once configured; a directory added while it runs
// is scanned at once; Apply after Run has returned does not wait.
func TestSourceAppliesBeforeAndWhileRunning(t *testing.T) {
	t.Parallel() // waits on quiet periods: alongside the other waiters
	st := store.NewThreadStore(store.StoreOptions{})
	scanned := make(chan struct{})
	src := NewSource(Options{OnFirstScan: func() { close(scanned) }}, st, quietMetrics{})
	if src.Name() != "threads" {
		t.Errorf("name %q", src.Name())
	}
	if err := src.Run(context.Background()); err == nil {
		t.Fatal("Run before Apply did not fail")
	}
	empty, added := t.TempDir(), t.TempDir()
	name, data := threadgen.New(threadgen.Options{Threads: 1, TotalBytes: 20000, Seed: 1}).Thread(0)
	if err := os.WriteFile(filepath.Join(added, name), data, 0o644); err != nil {
		t.Fatal(err)
	}
	cfg := config.Default()
	cfg.Threads.Dirs = []string{empty}
	if err := src.Apply(cfg); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	ran := make(chan error, 1)
	go func() { ran <- src.Run(ctx) }()
	<-scanned
	if n := len(st.ThreadKeys()); n != 0 {
		t.Fatalf("%d threads before the directory was added", n)
	}
	cfg = config.Default()
	cfg.Threads.Dirs = []string{empty, added}
	if err := src.Apply(cfg); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for len(st.ThreadKeys()) == 0 {
		if time.Now().After(deadline) {
			t.Fatal("the directory added while running was not scanned")
		}
		time.Sleep(5 * time.Millisecond)
	}
	cancel()
	if err := <-ran; err != nil {
		t.Fatal(err)
	}
	if err := src.Apply(config.Default()); err != nil {
		t.Fatal(err)
	}
}
