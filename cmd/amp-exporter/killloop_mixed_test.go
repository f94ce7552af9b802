package main

import (
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/amp-exporter/amp-exporter/internal/testsupport/ampservertest"
	"github.com/amp-exporter/amp-exporter/internal/testsupport/testsize"
	"github.com/amp-exporter/amp-exporter/internal/testsupport/threadgen"

	"github.com/amp-exporter/amp-exporter/internal/app"
)

// serverWriter changes the threads of an Amp server stand-in as a user
// working in Amp does: new threads, and exchanges appended to existing
// ones. Threads only grow, so a clean run over the final server gives the
// totals any history of it must give.
type serverWriter struct {
	srv   *ampservertest.Server
	gen   *threadgen.Generator
	rng   *rand.Rand
	next  int
	clock int
}

func (w *serverWriter) step() error {
	if w.rng.IntN(4) == 0 || w.next < 5 {
		w.next++
		return w.srv.PutGenerated(w.gen, w.next-1, w.next)
	}
	id := w.srv.IDs()[w.rng.IntN(len(w.srv.IDs()))]
	var doc struct {
		Messages []json.RawMessage `json:"messages"`
	}
	if err := json.Unmarshal(w.srv.Document(id), &doc); err != nil {
		return err
	}
	w.clock++
	sent := time.Date(2031, 1, 1, 0, 0, 0, 0, time.UTC).Add(time.Duration(w.clock) * time.Minute)
	n := len(doc.Messages)
	user, _ := json.Marshal(map[string]any{"role": "user", "messageId": n, "content": []any{map[string]any{"type": "text", "text": "and then?"}},
		"meta": map[string]any{"sentAt": sent.UnixMilli()}})
	answer, _ := json.Marshal(map[string]any{"role": "assistant", "messageId": n + 1, "content": []any{map[string]any{"type": "text", "text": "done"}},
		"state": map[string]any{"type": "complete", "stopReason": "end_turn"},
		"usage": map[string]any{"model": "claude-sonnet-4-5-20250929", "inputTokens": 10, "outputTokens": 100 + w.clock, "maxInputTokens": 200000,
			"totalInputTokens": 10, "timestamp": sent.Add(5 * time.Second).Format(time.RFC3339Nano)}})
	w.srv.AppendMessage(id, user, sent.UnixMilli())
	w.srv.AppendMessage(id, answer, sent.Add(5*time.Second).UnixMilli())
	return nil
}

// ingestBody is one whole stream-json run, under a session id of its own.
func ingestBody(run []string, i int) string {
	id := fmt.Sprintf("T-00000000-0000-4000-9000-%012d", i)
	var b strings.Builder
	for _, line := range run {
		b.WriteString(strings.ReplaceAll(line, "T-019c4811-2a5e-7c3d-8e21-5b6f0a9d4c11", id))
		b.WriteByte('\n')
	}
	return b.String()
}

// post sends one run to the exporter's ingest endpoint; ok is true once it
// was answered 200 (the promise: its counts are saved).
func (v *victim) post(body string) (bool, error) {
	c := &http.Client{Timeout: 10 * time.Second}
	r, err := c.Post(fmt.Sprintf("http://127.0.0.1:%d%s", v.port, app.IngestPath), "application/x-ndjson", strings.NewReader(body))
	if err != nil {
		return false, err
	}
	defer r.Body.Close()
	_, _ = io.Copy(io.Discard, r.Body)
	return r.StatusCode == http.StatusOK, nil
}

// waitSettledSyncs waits until the counters have stood still through
// syncs completed syncs with the Amp server, and every condition given
// holds for them; it returns the counters, or what the test fails with.
// A stream-json run the server does not list is held until two syncs
// have completed after its result line (whose execution is counted as it
// is read, so the counters move then), and counted at the end of the
// second, before the last-sync gauge is set: counters that stood still
// through two syncs have nothing held back. Syncs, not a quiet time,
// because a sync on a loaded machine can take longer than its interval,
// and a first sync over the whole server (a clean state's) much longer,
// while the files' counts stand still.
func (v *victim) waitSettledSyncs(syncs int, conds ...func(counters string) bool) (string, error) {
	deadline := time.Now().Add(90 * time.Second)
	var last string
	var lastSync float64 // the last sync's time, as last scraped
	seen := 0            // syncs completed since the counters last moved
	for time.Now().Before(deadline) {
		time.Sleep(200 * time.Millisecond)
		got, at, ok := v.scrape()
		if !ok {
			continue
		}
		if got != last || at == 0 {
			last, lastSync, seen = got, at, 0
			continue
		}
		if at != lastSync {
			// Two syncs between scrapes count as one: a longer wait,
			// never a shorter.
			lastSync, seen = at, seen+1
		}
		if seen >= syncs && allHold(conds, got) {
			return got, nil
		}
	}
	return "", fmt.Errorf("counters never settled; last scrape:\n%s\noutput:\n%s", last, v.out.String())
}

// TestKillLoopMixedSourcesLosesNoCount is the kill loop over all that the
// state keeps at once: local thread files being added and rewritten,
// stream-json captures growing, threads on an Amp server (the stand-in)
// being added and growing, and stream-json runs POSTed to the ingest
// endpoint. Each ingest is answered before the kill that follows it, so it
// must be counted exactly once however often the exporter is killed. The
// totals after the kills equal those of a clean run over the final files
// and server with the same ingests.
func TestKillLoopMixedSourcesLosesNoCount(t *testing.T) {
	t.Parallel() // most of it is waiting on the victims: it overlaps the other kill loop
	kills := 8
	if testsize.Long() {
		kills = 24
	}
	root := t.TempDir()
	threadsDir, streamsDir := filepath.Join(root, "threads"), filepath.Join(root, "streams")
	for _, d := range []string{threadsDir, streamsDir} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	const key = "sgamp_user_killloop_0123456789abcdef"
	srv := ampservertest.New(key, "loop@example.com")
	defer srv.Close()
	keyFile := filepath.Join(root, "amp-key")
	if err := os.WriteFile(keyFile, []byte(key), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(root, "amp-exporter.yml")
	if err := os.WriteFile(cfg, []byte(fmt.Sprintf(`threads:
  dirs: [%q]
  poll_interval: 100ms
streams:
  dirs: [%q]
  poll_interval: 50ms
amp_server:
  enabled: true
  url: %q
  api_key_file: %q
  sync_interval: 1s
`, threadsDir, streamsDir, srv.URL, keyFile)), 0o644); err != nil {
		t.Fatal(err)
	}
	runData, err := os.ReadFile("../../parser/streamjson/testdata/success-run.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	run := strings.Split(strings.TrimSpace(string(runData)), "\n")
	local := &corpusWriter{
		threads: threadsDir, streams: streamsDir,
		gen: threadgen.New(threadgen.Options{Threads: 2000, TotalBytes: 2000 * 6000, Seed: 21}),
		rng: rand.New(rand.NewPCG(5, 6)),
		run: run,
	}
	remote := &serverWriter{srv: srv, gen: threadgen.New(threadgen.Options{Threads: 2000, TotalBytes: 2000 * 6000, Seed: 22}),
		rng: rand.New(rand.NewPCG(7, 8))}
	for range 80 {
		if err := local.newThread(); err != nil {
			t.Fatal(err)
		}
	}
	for range 40 {
		if err := remote.step(); err != nil {
			t.Fatal(err)
		}
	}

	stopWriters := writeUntilStopped(t, 10*time.Millisecond, func() error {
		if err := local.step(); err != nil {
			return err
		}
		return remote.step()
	})

	storage := filepath.Join(root, "state")
	killer := rand.New(rand.NewPCG(9, 10))
	ingests := 0
	for i := range kills {
		v := startVictim(t, cfg, storage)
		if i%2 == 1 {
			// Up and answering: one run ingested (and answered, so saved),
			// then killed while the sources go on.
			for range 100 {
				if _, ok := v.counters(); ok {
					break
				}
				time.Sleep(50 * time.Millisecond)
			}
			ok, err := v.post(ingestBody(run, ingests))
			if err != nil || !ok {
				v.kill()
				t.Fatalf("kill %d: ingest not answered 200: %v; output:\n%s", i, err, v.out.String())
			}
			ingests++
		}
		time.Sleep(time.Duration(20+killer.IntN(600)) * time.Millisecond)
		v.kill()
		if out := v.out.String(); strings.Contains(out, "panic") || strings.Contains(out, "level=ERROR") {
			t.Fatalf("kill %d: the exporter reported:\n%s", i, out)
		}
	}
	if err := stopWriters(); err != nil {
		t.Fatal(err)
	}
	const syncs = 2 // store's ampServerSyncsToWait: held runs are decided
	// And every run captured or ingested has ended in a counted execution:
	// the tailer counts a capture (megabytes here) once read whole, and
	// /-/ready does not wait for it (see the other kill loop).
	caughtUp := func(c string) bool {
		return hasLine(c, fmt.Sprintf("amp_executions_total{outcome=success} %d", local.runs+ingests))
	}
	// The run after the kills and the clean run read the same final files
	// and server into states of their own: they run side by side, the
	// clean one given the same ingests once it answers (any history of
	// them must count the same).
	v := startVictim(t, cfg, storage)
	defer v.kill()
	clean := startVictim(t, cfg, filepath.Join(root, "clean-state"))
	defer clean.kill()
	for range 200 {
		if _, ok := clean.counters(); ok {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	for i := range ingests {
		if ok, err := clean.post(ingestBody(run, i)); err != nil || !ok {
			t.Fatalf("clean run: ingest %d not answered 200: %v", i, err)
		}
	}
	afterKills, want := settleBoth(t, v, clean, func(v *victim) (string, error) { return v.waitSettledSyncs(syncs, caughtUp) })
	for _, s := range []string{"source=threads", "source=server", "source=stream", "amp_executions_total"} {
		if !strings.Contains(want, s) {
			t.Fatalf("the clean run counted nothing with %s; nothing to compare:\n%s", s, want)
		}
	}
	t.Logf("%d kills, %d ingests, %d local threads, %d server threads, %d captured runs", kills, ingests, len(local.names), len(srv.IDs()), local.runs)
	if afterKills != want {
		t.Errorf("after %d kills the totals differ from a clean run over the final files and server with the same ingests\n%s",
			kills, lineDiff(want, afterKills))
	}
}
