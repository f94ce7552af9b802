package testutil

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/amp-exporter/amp-exporter/parser/thread"
)

// ThreadFixture is one of the thread parser's fixtures that parses.
type ThreadFixture struct {
	Name    string // the file's base name
	Data    []byte
	Summary *thread.Summary
}

// ThreadFixtures reads, parses and summarizes every thread fixture of the
// parser (parser/thread/testdata/*.json) that parses, in file name order;
// the broken ones are the parser's tests' business and are left out. It
// fails the test when fewer than five parse: a test fed from them would
// prove nothing.
func ThreadFixtures(t testing.TB) []ThreadFixture {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(RepoRoot(t), "parser", "thread", "testdata", "*.json"))
	if err != nil {
		t.Fatal(err)
	}
	var out []ThreadFixture
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		// A parser per file: what a summary holds may lie in its
		// parser's buffers, which the next file would overwrite.
		th, err := thread.NewParser().ParseBytes(data)
		if err != nil {
			continue
		}
		out = append(out, ThreadFixture{Name: filepath.Base(f), Data: data, Summary: thread.Summarize(th)})
	}
	if len(out) < 5 {
		t.Fatalf("only %d fixtures parsed", len(out))
	}
	return out
}

// RepoRoot is the module's root directory: the nearest directory above
// the test's working directory (its package's) that holds go.mod.
func RepoRoot(t testing.TB) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("no go.mod above the test's directory")
		}
		dir = parent
	}
}
