package store

import (
	"os/exec"
	"strings"
	"testing"
)

// TestStoreDoesNotImportPrometheus: the store counts; rendering is the
// collector's. Nothing the store depends on may pull in a Prometheus
// client package.
func TestStoreDoesNotImportPrometheus(t *testing.T) {
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("the go command is needed to list the store's imports: %v", err)
	}
	out, err := exec.Command(goTool, "list", "-deps", "-f", "{{.ImportPath}}", ".").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	deps := strings.Fields(string(out))
	if len(deps) < 10 {
		t.Fatalf("go list -deps listed only %v", deps)
	}
	for _, p := range deps {
		if strings.Contains(p, "prometheus") || strings.HasSuffix(p, "amp-exporter/collector") {
			t.Errorf("the store depends on %s", p)
		}
	}
}
