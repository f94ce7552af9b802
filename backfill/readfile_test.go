package backfill

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/amp-exporter/amp-exporter/internal/testsupport/threadgen"
	"github.com/amp-exporter/amp-exporter/parser/thread"
)

// TestThreadFileReadsWhatTheFileHolds: a thread file read through
// openThreadFile gives the file's bytes and size exactly, in reads of any
// size, an empty file included; a file that is not there is an error
// naming it.
func TestThreadFileReadsWhatTheFileHolds(t *testing.T) {
	dir := t.TempDir()
	big := bytes.Repeat([]byte(`{"a":"0123456789"}`), 20_000)
	for name, data := range map[string][]byte{"empty.json": nil, "small.json": []byte(`{}`), "big.json": big} {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		for _, chunk := range []int{1, 7, 4096, 1 << 20} {
			if chunk == 1 && len(data) > 1000 {
				continue // a system call a byte
			}
			f, size, err := openThreadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if size != int64(len(data)) {
				t.Errorf("%s: size %d, want %d", name, size, len(data))
			}
			var got []byte
			buf := make([]byte, chunk)
			for {
				n, err := f.Read(buf)
				got = append(got, buf[:n]...)
				if err == io.EOF {
					break
				}
				if err != nil {
					t.Fatal(err)
				}
			}
			if err := f.Close(); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, data) {
				t.Errorf("%s in reads of %d: %d bytes differ from the file's %d", name, chunk, len(got), len(data))
			}
		}
	}
	_, _, err := openThreadFile(filepath.Join(dir, "gone.json"))
	if !errors.Is(err, os.ErrNotExist) || !bytes.Contains([]byte(err.Error()), []byte("gone.json")) {
		t.Errorf("open of a missing file: %v", err)
	}
}

// countingAdder counts the threads a scan adds.
type countingAdder struct {
	mu  sync.Mutex
	ids map[string]bool
}

func (c *countingAdder) AddThread(_, _ string, sum *thread.Summary) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.ids[sum.ID] = true
	return nil
}

// TestScanCountsAFileGoneAsUnreadable: a thread file removed between the
// listing and its reading is one failed file of reason "read"; every
// other file is counted.
func TestScanCountsAFileGoneAsUnreadable(t *testing.T) {
	files := generatedFiles(t, threadgen.Options{Threads: 6, TotalBytes: 300_000, Seed: 4})
	if err := os.Remove(files[2]); err != nil {
		t.Fatal(err)
	}
	c := &countingAdder{ids: map[string]bool{}}
	res, err := ScanFiles(context.Background(), c, files, 0, 2, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.Failed[thread.ReasonRead] != 1 || len(res.Failed) != 1 {
		t.Errorf("failed files %v, want one of reason %q", res.Failed, thread.ReasonRead)
	}
	if len(c.ids) != len(files)-1 || res.Files != len(files)-1 {
		t.Errorf("%d threads counted, %d files read, want %d", len(c.ids), res.Files, len(files)-1)
	}
}

// TestThreadFilesLargestFirst: the thread files of a directory with more
// files than one core is given are listed once each, largest first and by
// name among equals; hidden files and other names are not thread files.
func TestThreadFilesLargestFirst(t *testing.T) {
	dir := t.TempDir()
	n := 2*statShare + 77
	want := make([]string, 0, n)
	for i := range n {
		name := filepath.Join(dir, fmt.Sprintf("T-%04d.json", i))
		if err := os.WriteFile(name, bytes.Repeat([]byte{' '}, (i*7919)%1000), 0o644); err != nil {
			t.Fatal(err)
		}
		want = append(want, name)
	}
	for _, other := range []string{".T-hidden.json", "notes.txt", "T-x.json.tmp"} {
		if err := os.WriteFile(filepath.Join(dir, other), []byte("{}"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	size := func(p string) int64 {
		fi, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		return fi.Size()
	}
	slices.SortFunc(want, func(a, b string) int { return cmp.Or(cmp.Compare(size(b), size(a)), strings.Compare(a, b)) })
	got, err := ThreadFiles([]string{dir, filepath.Join(dir, "missing")})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got, want) {
		t.Errorf("%d files listed, want %d in order; first %v", len(got), len(want), got[:min(3, len(got))])
	}
}

// linesAdder adds up the lines of the edits it is given, and says whether
// it keeps them (LinesSkipper).
type linesAdder struct {
	mu           sync.Mutex
	skips        bool
	edits, lines int64
}

func (a *linesAdder) SkipsLines() bool { return a.skips }

func (a *linesAdder) AddThread(_, _ string, sum *thread.Summary) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, it := range sum.Items {
		if it.Lines {
			a.edits++
			a.lines += it.Added + it.Removed
		}
	}
	return nil
}

// TestScanLeavesLinesToWhoKeepsThem: an adder that keeps no lines
// (LinesSkipper) is given the edits with their lines uncounted; any other
// is given them counted.
func TestScanLeavesLinesToWhoKeepsThem(t *testing.T) {
	files := generatedFiles(t, threadgen.Options{Threads: 8, TotalBytes: 800_000, Seed: 4})
	for _, skips := range []bool{false, true} {
		a := &linesAdder{skips: skips}
		if _, err := ScanFiles(context.Background(), a, files, 0, 2, nil, nil); err != nil {
			t.Fatal(err)
		}
		switch {
		case a.edits == 0:
			t.Fatal("no edit in the corpus: the test shows nothing")
		case skips && a.lines != 0:
			t.Errorf("%d lines counted for an adder that keeps none", a.lines)
		case !skips && a.lines == 0:
			t.Error("no lines counted for an adder that keeps them")
		}
	}
}

// generatedFiles writes a generated corpus to a temporary directory and
// lists its thread files.
func generatedFiles(t *testing.T, o threadgen.Options) []string {
	t.Helper()
	dir := t.TempDir()
	if _, err := threadgen.New(o).WriteDir(dir); err != nil {
		t.Fatal(err)
	}
	files, err := ThreadFiles([]string{dir})
	if err != nil {
		t.Fatal(err)
	}
	return files
}
