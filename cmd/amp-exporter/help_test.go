package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestHelpNamesZeroConfigRules(t *testing.T) {
	var out, errOut bytes.Buffer
	if _, code, done := parseFlags([]string{"--help"}, &out, &errOut); !done || code != 0 {
		t.Fatalf("--help: done=%v code=%d", done, code)
	}
	help := out.String()
	for _, want := range []string{
		"$AMP_THREADS_DIR",
		"$XDG_DATA_HOME/amp/threads",
		"~/.local/share/amp/threads",
		"amp_server",
		"$AMP_API_KEY",
		"amp login",
		"--config.file",
	} {
		if !strings.Contains(help, want) {
			t.Errorf("--help does not mention %q:\n%s", want, help)
		}
	}
}

// A configuration error printed by the binary names the file, the line and
// the key.
func TestConfigErrorNamesFileLineAndKey(t *testing.T) {
	path := filepath.Join(t.TempDir(), "amp.yml")
	if err := os.WriteFile(path, []byte("threads:\n  dirs: [/x]\n  resync_interval: -5m\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var out, errOut bytes.Buffer
	if code := run([]string{"--config.file=" + path, "--config.check"}, &out, &errOut); code != 1 {
		t.Fatalf("exit %d, want 1", code)
	}
	for _, want := range []string{path, "line 3", "threads.resync_interval", "-5m"} {
		if !strings.Contains(errOut.String(), want) {
			t.Errorf("error output does not mention %q: %s", want, errOut.String())
		}
	}
}
