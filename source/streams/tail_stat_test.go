package streams

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/amp-exporter/amp-exporter/store"
)

// A poll decides from stat alone that a capture has nothing new: it opens
// (and hashes the head of) only captures whose size, mtime or identity
// changed since it last read them.
func TestTailStatsBeforeOpening(t *testing.T) {
	dir := t.TempDir()
	e := newEnv(t, nil)
	tl := e.tailer(dir)
	opens := 0
	tl.open = func(p string) (*os.File, error) {
		opens++
		return os.Open(p)
	}
	path := filepath.Join(dir, "run.jsonl")
	appendFile(t, path, runText(runLines[:3]...))
	tl.Poll()
	for range 3 {
		tl.Poll()
	}
	if opens != 1 {
		t.Fatalf("%d opens for one capture polled 4 times without a change, want 1", opens)
	}
	appendFile(t, path, runText(runLines[3:]...))
	tl.Poll()
	if opens != 2 || e.outputTokens() != 150 {
		t.Fatalf("after an append: %d opens, output %v; want 2 and 150", opens, e.outputTokens())
	}
	// Rewritten in place to the same size with another start: the mtime
	// tells, and the head shows it is a new capture.
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	other := runText(strings.Replace(runLines[0], `"/w"`, `"/x"`, 1)) + runText(runLines[1:]...)
	if int64(len(other)) != fi.Size() {
		t.Fatalf("test capture sizes differ: %d and %d", len(other), fi.Size())
	}
	if err := os.WriteFile(path, []byte(other), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(path, fi.ModTime().Add(time.Second), fi.ModTime().Add(time.Second)); err != nil {
		t.Fatal(err)
	}
	tl.Poll()
	if opens != 3 || e.outputTokens() != 300 {
		t.Fatalf("after a same-size rewrite: %d opens, output %v; want 3 and 300", opens, e.outputTokens())
	}
}

// BenchmarkTailPollUnchanged is one poll of 1,000 captures none of which
// changed: the cost of the 500 ms poll at rest.
func BenchmarkTailPollUnchanged(b *testing.B) {
	dir := b.TempDir()
	text := runText(runLines...)
	for i := range 1000 {
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("run-%04d.jsonl", i)), []byte(text), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	store := store.NewStreamStore(store.NewLabelCap(100, nil), nil)
	tl := NewTailer(TailConfig{Dirs: []string{dir}, PollInterval: time.Hour, MaxLineBytes: 1 << 20}, store, &fakeMetrics{errors: map[string]int{}}, nil, nil)
	tl.Poll()
	b.ResetTimer()
	for range b.N {
		tl.Poll()
	}
}
