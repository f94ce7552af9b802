//go:build unix

package main

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
)

// TestBackfillOutputToAPipe: --output naming a named pipe (or /dev/null)
// writes into it; the pipe is still a pipe afterwards. Renaming a
// temporary file over it, as for a regular file, replaced /dev/null with
// a regular file when run as root.
func TestBackfillOutputToAPipe(t *testing.T) {
	oneThreadFile(t)
	fifo := filepath.Join(t.TempDir(), "history.pipe")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	read := make(chan []byte)
	go func() {
		f, err := os.Open(fifo)
		if err != nil {
			read <- nil
			return
		}
		defer f.Close()
		b, _ := io.ReadAll(f)
		read <- b
	}()
	var stdout, stderr bytes.Buffer
	if code := run([]string{"backfill", "--output=" + fifo, "--label=job=amp", "--label=instance=a:1", "--until=2026-03-01T00:00:00Z", "--step=1h"},
		&stdout, &stderr); code != 0 {
		t.Fatalf("exit %d; stderr:\n%s", code, stderr.String())
	}
	fi, err := os.Lstat(fifo)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode()&os.ModeNamedPipe == 0 {
		t.Fatalf("--output replaced the pipe: mode %v", fi.Mode())
	}
	got := <-read
	if !strings.HasSuffix(string(got), "\n# EOF\n") || !strings.Contains(string(got), "amp_tokens_total{") {
		t.Errorf("the pipe did not carry the history:\n%.300s", got)
	}
	if _, err := os.Stat(fifo + ".tmp"); err == nil {
		t.Errorf("a temporary file was left beside the pipe")
	}
}

// TestBackfillOutputIgnoresAPlantedLink: a symlink planted where the old
// code put its temporary file (FILE.tmp) is not followed: the file it
// points at keeps its bytes (a root backfill truncated and overwrote it).
func TestBackfillOutputIgnoresAPlantedLink(t *testing.T) {
	oneThreadFile(t)
	dir := t.TempDir()
	victim := filepath.Join(t.TempDir(), "victim")
	if err := os.WriteFile(victim, []byte("keep me\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "history.om")
	if err := os.Symlink(victim, out+".tmp"); err != nil {
		t.Fatal(err)
	}
	backfillTo(t, out)
	if b, err := os.ReadFile(victim); err != nil || string(b) != "keep me\n" {
		t.Fatalf("the planted link's target was written: %.60q %v", b, err)
	}
	if fi, err := os.Lstat(out); err != nil || !fi.Mode().IsRegular() {
		t.Fatalf("--output is not a regular file: %v", err)
	}
	assertHistory(t, out)
	assertNoTemporaryFiles(t, dir, "history.om", "history.om.tmp")
}

// TestBackfillOutputThroughALink: an --output that is a symlink is written
// through: its target holds the history and the link is still a link (the
// rename replaced the link with a regular file). A dangling link's target
// is created.
func TestBackfillOutputThroughALink(t *testing.T) {
	oneThreadFile(t)
	for _, exists := range []bool{true, false} {
		t.Run(fmt.Sprintf("target exists %v", exists), func(t *testing.T) {
			dir, targetDir := t.TempDir(), t.TempDir()
			target := filepath.Join(targetDir, "real.om")
			if exists {
				if err := os.WriteFile(target, []byte("old\n"), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			out := filepath.Join(dir, "history.om")
			if err := os.Symlink(target, out); err != nil {
				t.Fatal(err)
			}
			backfillTo(t, out)
			if fi, err := os.Lstat(out); err != nil || fi.Mode()&os.ModeSymlink == 0 {
				t.Fatalf("--output is no longer a link (err %v)", err)
			}
			assertHistory(t, target)
			assertNoTemporaryFiles(t, dir, "history.om")
			assertNoTemporaryFiles(t, targetDir, "real.om")
		})
	}
}

func backfillTo(t *testing.T, out string) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	// An hour's step: where the history goes is tested here, not its
	// samples (at the default 5m, 21 MB of them).
	if code := run([]string{"backfill", "--output=" + out, "--label=job=amp", "--label=instance=a:1", "--until=2026-03-01T00:00:00Z", "--step=1h"},
		&stdout, &stderr); code != 0 {
		t.Fatalf("exit %d; stderr:\n%s", code, stderr.String())
	}
}

func assertHistory(t *testing.T, path string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasSuffix(string(b), "\n# EOF\n") || !strings.Contains(string(b), "amp_tokens_total{") {
		t.Errorf("%s is not the history:\n%.300s", path, b)
	}
}

// assertNoTemporaryFiles: dir holds only the named entries.
func assertNoTemporaryFiles(t *testing.T, dir string, names ...string) {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if !slices.Contains(names, e.Name()) {
			t.Errorf("%s: %s left behind", dir, e.Name())
		}
	}
}
