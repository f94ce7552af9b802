package app

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"
)

// An ingest whose body does not end within the drain timeout is cut off
// at shutdown, unanswered; the lines it sent before are counted, and the
// final save, which waits for its handler, keeps them: a restart on the
// same storage shows them.
func TestIngestCutOffByTheDrainIsStillSaved(t *testing.T) {
	t.Parallel() // waits out a drain timeout: alongside the other waiters
	dir := t.TempDir()
	storage := dir + "/state"
	cfg := fmt.Sprintf("threads:\n  dirs: [%q]\namp_server:\n  enabled: false\n", mkdir(t, dir, "threads"))
	withStorage := func(o *Options) {
		o.StoragePath = storage
		o.DrainTimeout = 200 * time.Millisecond
	}
	e := startTestApp(t, cfg, nil, withStorage)
	run, err := os.ReadFile("../../parser/streamjson/testdata/success-run.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.SplitAfter(strings.TrimSpace(string(run)), "\n")
	pr, pw := io.Pipe()
	defer pw.Close()
	answered := make(chan error, 1)
	go func() {
		resp, err := http.Post(fmt.Sprintf("http://%s%s", e.addr, IngestPath), "application/x-ndjson", pr)
		if err == nil {
			resp.Body.Close()
			err = fmt.Errorf("answered %s", resp.Status)
		}
		answered <- err
	}()
	if _, err := io.WriteString(pw, strings.Join(lines[:len(lines)-1], "")); err != nil {
		t.Fatal(err)
	}
	e.waitValue(t, "amp_messages_total", map[string]string{"source": "stream", "role": "user"}, func(v float64) bool { return v == 5 })
	// The body never ends: the drain runs out and the connection is closed.
	if err := e.stop(); err != nil {
		t.Fatal(err)
	}
	pw.Close() // the client's writer waits on the pipe, not on the connection
	if err := <-answered; err == nil || strings.Contains(err.Error(), "answered") {
		t.Errorf("an ingest cut off by the drain: %v, want no answer", err)
	}
	if !strings.Contains(e.logs.String(), "requests still under way at shutdown were cut off") {
		t.Errorf("the cut was not logged:\n%s", e.logs.String())
	}

	again := startTestApp(t, cfg, nil, withStorage)
	if v, _ := again.value(t, "amp_messages_total", map[string]string{"source": "stream", "role": "user"}); v != 5 {
		t.Errorf("after a restart the cut-off ingest's user messages are %v, want 5 (saved by the final save)", v)
	}
}
