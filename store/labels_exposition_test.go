package store_test

import (
	"bytes"
	"os/exec"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil/promlint"
	"github.com/prometheus/common/expfmt"

	"github.com/amp-exporter/amp-exporter/collector"
	"github.com/amp-exporter/amp-exporter/parser/thread"
	"github.com/amp-exporter/amp-exporter/store"
)

// TestNULModelExpositionIsValid is issue 19's model="bad\x00model": a
// thread whose model name carries a NUL byte is exposed without it, and the
// exposition parses and lints (and passes promtool check metrics where
// promtool is installed; e2e runs it always).
func TestNULModelExpositionIsValid(t *testing.T) {
	s := store.NewThreadStore(store.StoreOptions{})
	th, err := thread.NewParser().ParseBytes([]byte(`{"v":1,"id":"T-00000000-0000-4000-8000-000000000009","created":1768178184664,"messages":[` +
		`{"role":"assistant","messageId":1,"content":[],"state":{"type":"complete","stopReason":"end_turn"},"usage":{"model":"bad\u0000model","inputTokens":3,"outputTokens":4}}]}`))
	if err != nil {
		t.Fatal(err)
	}
	s.Apply("/t/T-9.json", store.FileVersion{}, thread.Summarize(th))
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(collector.NewAmpCollector(s, store.NewStreamStore(nil, nil)))
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	for _, mf := range mfs {
		if _, err := expfmt.MetricFamilyToText(&buf, mf); err != nil {
			t.Fatal(err)
		}
	}
	out := buf.String()
	if strings.Contains(out, "\x00") {
		t.Fatalf("a NUL byte reached the exposition:\n%q", out)
	}
	if !strings.Contains(out, `model="bad`+"\uFFFD"+`model"`) {
		t.Fatalf("the sanitized model is not exposed:\n%s", out)
	}
	if _, err := promlint.New(bytes.NewReader(buf.Bytes())).Lint(); err != nil {
		t.Fatalf("the exposition does not parse: %v", err)
	}
	promtool, err := exec.LookPath("promtool")
	if err != nil {
		t.Log("promtool not installed: checked with promlint only")
		return
	}
	cmd := exec.Command(promtool, "check", "metrics")
	cmd.Stdin = bytes.NewReader(buf.Bytes())
	// It exits 1 for naming advice too; only a parse error matters here.
	if out, err := cmd.CombinedOutput(); err != nil && bytes.Contains(out, []byte("error while linting")) {
		t.Fatalf("promtool check metrics: %v\n%s", err, out)
	}
}
