//go:build unix

package main

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
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
	if code := run([]string{"backfill", "--output=" + fifo, "--label=job=amp", "--label=instance=a:1", "--until=2026-03-01T00:00:00Z"},
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
