//go:build e2e

package e2e

import (
	"bytes"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
)

// TestRestartWithOtherDirsAndReloadedLimit checks, on the real binary with
// --storage.path, that state saved while threads.dirs named one directory
// does not keep that directory's threads in amp_threads once it names
// another (the counters keep them), and that raising
// limits.max_file_bytes by POST /-/reload reads the file the old limit
// refused.
func TestRestartWithOtherDirsAndReloadedLimit(t *testing.T) {
	dirA, dirB, storage := t.TempDir(), t.TempDir(), t.TempDir()
	const idA, idB, idBig = "T-0e2e0000-0000-7000-8000-0000000000a1",
		"T-0e2e0000-0000-7000-8000-0000000000b1", "T-0e2e0000-0000-7000-8000-0000000000b2"
	writeThreadLikeAmp(t, dirA, idA+".json", threadJSON(idA, "e2e-dir-a", 1, 7))
	writeThreadLikeAmp(t, dirB, idB+".json", threadJSON(idB, "e2e-dir-b", 1, 11))
	big := bytes.Replace(threadJSON(idBig, "e2e-big", 1, 13), []byte(`"text": "hi"`),
		[]byte(`"text": "`+string(bytes.Repeat([]byte("x"), 2048))+`"`), 1)
	writeThreadLikeAmp(t, dirB, idBig+".json", big)
	cfg := filepath.Join(t.TempDir(), "amp-exporter.yml")
	writeConfig := func(dir, limit string) {
		t.Helper()
		if err := os.WriteFile(cfg, []byte(fmt.Sprintf("threads: {dirs: [%q]}\nlimits: {max_file_bytes: %s}\n", dir, limit)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	opts := exporterOpts{args: []string{"--config.file=" + cfg, "--storage.path=" + storage}}
	out := func(model string) map[string]string { return map[string]string{"model": model, "token_type": "output"} }

	writeConfig(dirA, "1KiB")
	e := startExporter(t, opts)
	mfs := e.metrics(t)
	if got := mustValue(t, mfs, "amp_tokens_total", out("e2e-dir-a")); got != 7 {
		t.Fatalf("output tokens of the first directory = %g, want 7", got)
	}
	if err := e.stop(); err != nil {
		t.Fatalf("exporter did not shut down cleanly: %v", err)
	}

	writeConfig(dirB, "1KiB")
	e = startExporter(t, opts)
	mfs = e.metrics(t)
	if got, _ := value(mfs, "amp_threads", nil); got != 1 {
		t.Errorf("sum(amp_threads) = %g after restarting on the second directory, want 1 (its file under the limit)", got)
	}
	if got := mustValue(t, mfs, "amp_tokens_total", out("e2e-dir-a")); got != 7 {
		t.Errorf("output tokens of the first directory = %g after the restart, want 7 (counters keep them)", got)
	}
	if got := mustValue(t, mfs, "amp_exporter_parse_errors_total", map[string]string{"reason": "too_large"}); got != 1 {
		t.Errorf("too_large errors = %g, want 1", got)
	}

	writeConfig(dirB, "1MiB")
	if code, body, err := e.do(http.MethodPost, "/-/reload"); err != nil || code != http.StatusOK {
		t.Fatalf("POST /-/reload: %d %q %v", code, body, err)
	}
	e.waitFor(t, 10*time.Second, "the refused file read after the limit was raised", func(mfs map[string]*dto.MetricFamily) (bool, string) {
		v, n := value(mfs, "amp_tokens_total", out("e2e-big"))
		th, _ := value(mfs, "amp_threads", nil)
		return n == 1 && v == 13 && th == 2, fmt.Sprintf("e2e-big output %g (%d series), amp_threads %g", v, n, th)
	})
}
