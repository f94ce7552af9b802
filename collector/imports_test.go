package collector

import (
	"os/exec"
	"strings"
	"testing"
)

// TestSourcesDoNotImportCollector: a source reads and hands records to a
// store; rendering is the collector's. No package under source/ may depend
// on the collector, directly or through another package (test files may
// still use it to check what a source's records render to).
func TestSourcesDoNotImportCollector(t *testing.T) {
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("the go command is needed to list the sources' imports: %v", err)
	}
	out, err := exec.Command(goTool, "list", "-f", `{{.ImportPath}} {{join .Deps " "}}`, "../source/...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(lines) < 4 {
		t.Fatalf("go list listed only %q", lines)
	}
	for _, line := range lines {
		f := strings.Fields(line)
		if len(f) < 10 {
			t.Fatalf("go list listed only %q", line)
		}
		for _, p := range f[1:] {
			if p == "github.com/amp-exporter/amp-exporter/collector" || strings.HasPrefix(p, "github.com/amp-exporter/amp-exporter/collector/") {
				t.Errorf("%s depends on %s", f[0], p)
			}
		}
	}
}
