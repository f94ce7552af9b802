package threads

import (
	"context"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/amp-exporter/amp-exporter/store"
	"github.com/fsnotify/fsnotify"
)

// reconfigure hands the watcher h.cfg changed by change and waits until the
// loop has applied it (a reload: the directories are rescanned).
func (h *harness) reconfigure(change func(*Config)) {
	h.t.Helper()
	if change != nil {
		change(&h.cfg)
	}
	h.w.Reconfigure(context.Background(), h.cfg)
	h.waitFor("reconfigured", func() bool { return false }, "reconfigured")
}

// idle moves the fake clock forward by d, a second at a time, letting the
// loop handle whatever fires at each step (it waits until the loop has been
// quiet for a moment). It asserts nothing about wall-clock time.
func (h *harness) idle(d time.Duration) {
	h.t.Helper()
	for step := time.Duration(0); step < d; step += time.Second {
		h.clk.Advance(min(time.Second, d-step))
		h.quiet()
	}
}

// quiet consumes trace events until none arrived for a short while.
func (h *harness) quiet() {
	for {
		select {
		case <-h.trace:
		case <-time.After(30 * time.Millisecond):
			return
		}
	}
}

func writeFile(t *testing.T, path string, data []byte) {
	t.Helper()
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

// writeAtomicIn writes like the Amp CLI into dir.
func writeAtomicIn(t *testing.T, dir, name string, data []byte) {
	t.Helper()
	tmp := filepath.Join(dir, name+".amptmp")
	writeFile(t, tmp, data)
	if err := os.Rename(tmp, filepath.Join(dir, name)); err != nil {
		t.Fatal(err)
	}
}

// A reload that removes a directory while one of its files waits to be
// parsed (coalescing) or to be read again (a failed version) must not bring
// the file back into amp_threads afterwards.
func TestReloadRemovingDirDropsPendingFiles(t *testing.T) {
	t.Parallel() // mostly waiting for quiet (30 ms of real time a step): alongside the other waiters
	t.Run("dirty", func(t *testing.T) {
		t.Parallel()
		keep, gone := t.TempDir(), t.TempDir()
		h := newHarness(t, keep, nil, func(c *Config, o *Options) {
			c.Dirs = []string{keep, gone}
			o.Coalesce = time.Hour // the event stays pending until the test moves the clock
		})
		path := filepath.Join(gone, threadA+".json")
		writeAtomicIn(t, gone, threadA+".json", makeThread(threadA, 3))
		h.waitFor("event", func() bool { return false }, "dirty "+path)
		h.reconfigure(func(c *Config) { c.Dirs = []string{keep} })
		h.clk.Advance(time.Hour) // the coalescing delay ends: flush
		h.waitFor("flush", func() bool { return false }, "flushed")
		h.idle(10 * time.Second)
		if th, tok := h.threads(), h.outputTokens(); th != 0 || tok != 0 {
			t.Fatalf("file of a removed directory came back: amp_threads %v, output tokens %v", th, tok)
		}
	})
	t.Run("retrying", func(t *testing.T) {
		t.Parallel()
		keep, gone := t.TempDir(), t.TempDir()
		h := newHarness(t, keep, nil, func(c *Config, _ *Options) { c.Dirs = []string{keep, gone} })
		path := filepath.Join(gone, threadA+".json")
		full := makeThread(threadA, 3)
		writeFile(t, path, full[:len(full)/2])
		h.waitFor("retry scheduled", func() bool { return false }, "retry "+path)
		h.reconfigure(func(c *Config) { c.Dirs = []string{keep} })
		writeFile(t, path, full) // completed after the directory left the configuration
		h.idle(30 * time.Second)
		if th, tok := h.threads(), h.outputTokens(); th != 0 || tok != 0 {
			t.Fatalf("file of a removed directory came back: amp_threads %v, output tokens %v", th, tok)
		}
		if errs, _, _ := h.metrics.snapshot(); len(errs) != 0 {
			t.Fatalf("a file no longer watched counted errors: %v", errs)
		}
	})
}

// State saved while threads.dirs named one directory and restored with
// another: the old directory's files leave amp_threads (a gauge) at once,
// and the counters keep their contributions.
func TestRestoreAfterDirsChangedDropsOldFiles(t *testing.T) {
	old, cur := t.TempDir(), t.TempDir()
	h := newHarness(t, old, nil, nil)
	h.writeAtomic(threadA+".json", makeThread(threadA, 3))
	h.waitFor("old thread", func() bool { return h.outputTokens() == 300 })
	h.stop()
	state := h.store.Export()

	restored := store.NewThreadStore(store.StoreOptions{})
	if err := restored.Import(state); err != nil {
		t.Fatal(err)
	}
	writeAtomicIn(t, cur, "T-other.json", makeThread("T-other", 1))
	h2 := newHarness(t, cur, restored, nil)
	if th, tok := h2.threads(), h2.outputTokens(); th != 1 || tok != 400 {
		t.Fatalf("after restart with other dirs: amp_threads %v (want 1), output tokens %v (want 400)", th, tok)
	}
	if got := restored.FilesUnder(old); len(got) != 0 {
		t.Fatalf("files of the old directory still present: %v", got)
	}
	// And in every later save.
	if n := len(restored.Export().Files); n != 1 {
		t.Fatalf("saved state lists %d files, want 1", n)
	}
}

// Raising limits.max_file_bytes by reload reads the files the old limit
// refused; a raise that still refuses a file does not count it again.
func TestRaisingMaxFileBytesRereadsRefusedFiles(t *testing.T) {
	dir := t.TempDir()
	big := makeThread("T-big", 30)
	writeFile(t, filepath.Join(dir, "T-big.json"), big)
	size := int64(len(big))
	h := newHarness(t, dir, nil, func(c *Config, _ *Options) { c.MaxFileBytes = size - 10 })
	if errs, _, _ := h.metrics.snapshot(); errs["too_large"] != 1 {
		t.Fatalf("errors %v, want one too_large", errs)
	}
	h.reconfigure(func(c *Config) { c.MaxFileBytes = size - 1 })
	if errs, _, _ := h.metrics.snapshot(); errs["too_large"] != 1 || h.outputTokens() != 0 {
		t.Fatalf("still too large: errors %v, tokens %v", errs, h.outputTokens())
	}
	h.reconfigure(func(c *Config) { c.MaxFileBytes = size })
	if got := h.outputTokens(); got != 3000 {
		t.Fatalf("output tokens after raising the limit = %v, want 3000", got)
	}
	if errs, _, _ := h.metrics.snapshot(); errs["too_large"] != 1 || len(errs) != 1 {
		t.Fatalf("errors %v", errs)
	}
}

// A symbolic link in a thread directory to a regular file is a thread file,
// on an inotify event and in a full rescan alike, and in polling mode.
// Two names for one thread count once. Links to nothing or to directories
// are left alone.
func TestSymlinkedThreadFiles(t *testing.T) {
	t.Parallel() // waits on quiet periods: alongside the other waiters
	for _, mode := range []string{"inotify", "polling"} {
		t.Run(mode, func(t *testing.T) {
			dir, elsewhere := t.TempDir(), t.TempDir()
			h := newHarness(t, dir, nil, func(_ *Config, o *Options) {
				if mode == "polling" {
					o.addWatch = func(*fsnotify.Watcher, string) error { return syscall.ENOSPC }
				}
			})
			writeAtomicIn(t, elsewhere, threadA+".json", makeThread(threadA, 3))
			for name, target := range map[string]string{
				threadA + ".json": filepath.Join(elsewhere, threadA+".json"),
				"T-alias.json":    threadA + ".json", // a second name, relative, in the same directory
				"T-dangling.json": filepath.Join(elsewhere, "missing.json"),
				"T-dir.json":      elsewhere,
			} {
				if err := os.Symlink(target, filepath.Join(dir, name)); err != nil {
					t.Fatal(err)
				}
			}
			h.waitFor("linked thread", func() bool { return h.outputTokens() == 300 && h.threads() == 1 })
			// A full rescan sees the same: the thread stays present.
			h.reconfigure(nil)
			if th, tok := h.threads(), h.outputTokens(); th != 1 || tok != 300 {
				t.Fatalf("after a rescan: amp_threads %v, output tokens %v", th, tok)
			}
			// The target is rewritten where it lives: the next rescan reads it.
			writeAtomicIn(t, elsewhere, threadA+".json", makeThread(threadA, 5))
			h.reconfigure(nil)
			if got := h.outputTokens(); got != 500 {
				t.Fatalf("rewritten target: output tokens %v, want 500", got)
			}
			for _, name := range []string{threadA + ".json", "T-alias.json"} {
				if err := os.Remove(filepath.Join(dir, name)); err != nil {
					t.Fatal(err)
				}
			}
			h.waitFor("links removed", func() bool { return h.threads() == 0 })
			if errs, _, _ := h.metrics.snapshot(); len(errs) != 0 {
				t.Fatalf("links counted errors: %v", errs)
			}
		})
	}
}

// expect waits for a trace event starting with prefix without moving the
// clock.
func (h *harness) expect(prefix string) {
	h.t.Helper()
	deadline := time.After(20 * time.Second)
	for {
		select {
		case ev := <-h.trace:
			if strings.HasPrefix(ev, prefix) {
				return
			}
		case <-deadline:
			h.t.Fatalf("timed out waiting for %q", prefix)
		}
	}
}

// flakyOpener fails to open one file with err while failing says so, or
// for the next n attempts, and counts the attempts.
type flakyOpener struct {
	mu       sync.Mutex
	path     string
	err      error
	n        int
	failing  bool
	attempts int
}

func (o *flakyOpener) open(path string) (io.ReadCloser, error) {
	if path == o.path {
		o.mu.Lock()
		o.attempts++
		fail := o.failing || o.n > 0
		if o.n > 0 {
			o.n--
		}
		o.mu.Unlock()
		if fail {
			return nil, &fs.PathError{Op: "open", Path: path, Err: o.err}
		}
	}
	return os.Open(path)
}

func (o *flakyOpener) set(failing bool) {
	o.mu.Lock()
	o.failing = failing
	o.mu.Unlock()
}

func (o *flakyOpener) count() int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.attempts
}

// A read that fails (the open-file limit exhausted, an NFS hiccup) is
// retried with a growing delay until it succeeds; the error is counted
// once, however many attempts fail.
func TestTransientReadErrorIsRetriedWithBackoff(t *testing.T) {
	t.Parallel() // waits on quiet periods: alongside the other waiters
	dir := t.TempDir()
	path := filepath.Join(dir, threadA+".json")
	op := &flakyOpener{path: path, err: syscall.EMFILE, n: 5}
	h := newHarness(t, dir, nil, func(_ *Config, o *Options) {
		o.open = op.open
		o.RetryDelay = time.Second
		o.MaxRetryDelay = 8 * time.Second
	})
	h.writeAtomic(threadA+".json", makeThread(threadA, 3))
	h.expect("dirty " + path)
	h.clk.Advance(100 * time.Millisecond) // coalescing ends: the first read fails
	// "flushed" comes once the loop has armed the next retry.
	h.expect("flushed")
	for i, delay := range []time.Duration{time.Second, 2 * time.Second, 4 * time.Second, 8 * time.Second, 8 * time.Second} {
		h.clk.Advance(delay - 10*time.Millisecond)
		h.quiet()
		if n := op.count(); n != i+1 {
			t.Fatalf("attempt %d came before its delay of %v", i+2, delay)
		}
		h.clk.Advance(10 * time.Millisecond)
		h.expect("flushed")
		if n := op.count(); n != i+2 {
			t.Fatalf("attempt %d did not come after its delay of %v (%d attempts)", i+2, delay, n)
		}
	}
	if got := h.outputTokens(); got != 300 {
		t.Fatalf("output tokens %v after the read succeeded, want 300", got)
	}
	if n := op.count(); n != 6 {
		t.Fatalf("%d attempts, want 6 (5 failures, then success)", n)
	}
	if errs, _, _ := h.metrics.snapshot(); errs["read_error"] != 1 || len(errs) != 1 {
		t.Fatalf("errors %v, want read_error counted once", errs)
	}
	if got := h.threads(); got != 1 {
		t.Fatalf("amp_threads = %v", got)
	}
}

// A file that cannot be read until its permissions are fixed is read again
// on the attribute event of the chmod, not at the next resync; a reload
// reads a failing file again at once.
func TestUnreadableFileIsRetriedOnChmodAndReload(t *testing.T) {
	t.Parallel() // waits on quiet periods: alongside the other waiters
	t.Run("chmod", func(t *testing.T) {
		dir := t.TempDir()
		path := filepath.Join(dir, threadA+".json")
		op := &flakyOpener{path: path, err: syscall.EACCES, failing: true}
		h := newHarness(t, dir, nil, func(_ *Config, o *Options) {
			o.open = op.open
			o.RetryDelay = time.Hour // no timed retry within the test
			o.MaxRetryDelay = time.Hour
		})
		h.writeAtomic(threadA+".json", makeThread(threadA, 3))
		h.waitFor("failed read", func() bool { return false }, "retry "+path)
		op.set(false)
		if err := os.Chmod(path, 0o600); err != nil {
			t.Fatal(err)
		}
		h.waitFor("read after chmod", func() bool { return h.outputTokens() == 300 })
	})
	t.Run("reload", func(t *testing.T) {
		dir := t.TempDir()
		path := filepath.Join(dir, threadA+".json")
		op := &flakyOpener{path: path, err: syscall.EIO, failing: true}
		h := newHarness(t, dir, nil, func(_ *Config, o *Options) {
			o.open = op.open
			o.RetryDelay = time.Second
			o.MaxRetryDelay = time.Hour
		})
		h.writeAtomic(threadA+".json", makeThread(threadA, 3))
		h.waitFor("counted read error", func() bool { e, _, _ := h.metrics.snapshot(); return e["read_error"] == 1 })
		op.set(false)
		h.reconfigure(nil)
		if got := h.outputTokens(); got != 300 {
			t.Fatalf("output tokens after reload = %v, want 300", got)
		}
	})
}

// A thread written in place in chunks is not broken while it is being
// written: no error is counted for the versions caught mid-write. A version
// that stays unparseable once the writing stopped is counted, once.
func TestSlowInPlaceWriterIsNotAnError(t *testing.T) {
	t.Parallel() // mostly waiting for quiet: alongside the other waiters
	dir := t.TempDir()
	path := filepath.Join(dir, threadA+".json")
	h := newHarness(t, dir, nil, func(_ *Config, o *Options) {
		o.Coalesce = 100 * time.Millisecond
		o.RetryDelay = 500 * time.Millisecond
		o.Settle = 2 * time.Second
	})
	full := makeThread(threadA, 10)
	const chunks = 10
	for i := 1; i <= chunks; i++ {
		h.writeInPlace(threadA+".json", full[:len(full)*i/chunks])
		h.expect("dirty " + path)
		h.clk.Advance(100 * time.Millisecond) // coalescing ends: parsed
		h.expect("flushed")
		for j := 0; j < 2; j++ { // 0.3 s between chunks
			h.clk.Advance(100 * time.Millisecond)
			h.quiet()
		}
	}
	h.waitFor("complete thread", func() bool { return h.outputTokens() == 1000 })
	h.idle(10 * time.Second)
	if errs, _, _ := h.metrics.snapshot(); len(errs) != 0 {
		t.Fatalf("a file still being written was counted as broken: %v", errs)
	}

	// Cut short and left so: an error once it has stayed so.
	h.writeInPlace(threadA+".json", full[:len(full)/2])
	h.expect("dirty " + path)
	h.clk.Advance(100 * time.Millisecond)
	h.expect("flushed")
	if errs, _, _ := h.metrics.snapshot(); len(errs) != 0 {
		t.Fatalf("counted before the file settled: %v", errs)
	}
	h.idle(10 * time.Second)
	if errs, _, _ := h.metrics.snapshot(); errs["truncated"] != 1 || len(errs) != 1 {
		t.Fatalf("errors %v, want truncated counted once", errs)
	}
	if got := h.outputTokens(); got != 1000 {
		t.Fatalf("last good contribution lost: %v", got)
	}
}
