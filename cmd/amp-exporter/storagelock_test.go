package main

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// The real binary: a second exporter on a directory in use exits at once
// with an error naming it; once the first is killed (kill -9: the system
// releases the lock), an exporter starts on it.
func TestSecondExporterOnOneStoragePathFailsFast(t *testing.T) {
	t.Parallel() // its own exporters and storage: alongside the kill loops
	root := t.TempDir()
	threadsDir, storage := filepath.Join(root, "threads"), filepath.Join(root, "state")
	if err := os.Mkdir(threadsDir, 0o755); err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(root, "amp-exporter.yml")
	if err := os.WriteFile(cfg, []byte(fmt.Sprintf("threads:\n  dirs: [%q]\n", threadsDir)), 0o644); err != nil {
		t.Fatal(err)
	}
	ready := func(v *victim) {
		t.Helper()
		for range 600 {
			if _, ok := v.counters(); ok {
				return
			}
			time.Sleep(50 * time.Millisecond)
		}
		t.Fatalf("exporter never ready; output:\n%s", v.out.String())
	}
	first := startVictim(t, cfg, storage)
	defer first.kill()
	ready(first)

	second := startVictim(t, cfg, storage)
	exited := make(chan error, 1)
	go func() { exited <- second.cmd.Wait() }()
	select {
	case err := <-exited:
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != 1 {
			t.Fatalf("second exporter: %v, want exit status 1; output:\n%s", err, second.out.String())
		}
	case <-time.After(60 * time.Second):
		_ = second.cmd.Process.Kill()
		t.Fatal("a second exporter on a directory in use kept running")
	}
	out := second.out.String()
	if !strings.Contains(out, storage) || !strings.Contains(out, "in use") {
		t.Errorf("the error does not say that %s is in use:\n%s", storage, out)
	}

	first.kill()
	third := startVictim(t, cfg, storage)
	defer third.kill()
	ready(third)
}
