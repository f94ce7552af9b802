package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// --config.check reports a repositories rule whose expression does not
// compile with the file, its line and its key.
func TestConfigCheckReportsBadRepositoryRule(t *testing.T) {
	path := filepath.Join(t.TempDir(), "amp.yml")
	if err := os.WriteFile(path, []byte("repositories:\n  - match: 'github\\.com/acme/.*'\n    name: acme\n  - match: '(unclosed'\n    name: x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var out, errOut bytes.Buffer
	if code := run([]string{"--config.file=" + path, "--config.check"}, &out, &errOut); code != 1 {
		t.Fatalf("exit %d, want 1", code)
	}
	for _, want := range []string{path, "line 4", "repositories[1].match", "missing closing )"} {
		if !strings.Contains(errOut.String(), want) {
			t.Errorf("error output does not mention %q: %s", want, errOut.String())
		}
	}
}
