package streams

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	ampstore "github.com/amp-exporter/amp-exporter/store"
)

// counts is what a run adds: output tokens, executions, prompts.
func (e *env) counts() [3]float64 {
	return [3]float64{e.outputTokens(), e.value("amp_executions_total"), e.value("amp_prompts_total", "source", "stream")}
}

// One run, one count, whatever reads it (docs/counting.md, rule 21): the
// same run read twice counts once; two runs of one thread count as two.
// Before, a run posted twice, or tailed and posted, counted twice (300
// output tokens and 2 executions for a run of 150 and 1).
func TestRunReadTwiceCountsOnce(t *testing.T) {
	once := [3]float64{150, 1, 1}
	t.Run("posted twice", func(t *testing.T) {
		e := newEnv(t, nil)
		srv := ingestServer(e, IngestConfig{MaxLineBytes: 1 << 20, MaxBodyBytes: 1 << 20})
		defer srv.Close()
		for range 2 {
			if code, res := post(t, srv.URL, strings.NewReader(runText(runLines...))); code != 200 || res.RunsFinished != 1 {
				t.Fatalf("%d %+v", code, res)
			}
		}
		if got := e.counts(); got != once {
			t.Fatalf("a run posted twice counts %v, want %v", got, once)
		}
	})
	t.Run("tailed and posted meanwhile", func(t *testing.T) {
		// `amp -x --stream-json | tee capture.jsonl | amp-exporter ingest`:
		// the tailer reads the capture while the ingest request goes on.
		dir := t.TempDir()
		e := newEnv(t, nil)
		tl := e.tailer(dir)
		path := filepath.Join(dir, "run.jsonl")
		appendFile(t, path, runText(runLines[:4]...))
		tl.Poll()
		srv := ingestServer(e, IngestConfig{MaxLineBytes: 1 << 20, MaxBodyBytes: 1 << 20})
		defer srv.Close()
		post(t, srv.URL, strings.NewReader(runText(runLines...)))
		appendFile(t, path, runText(runLines[4:]...))
		tl.Poll()
		if got := e.counts(); got != once {
			t.Fatalf("a run tailed and posted counts %v, want %v", got, once)
		}
	})
	t.Run("posted again after a restart", func(t *testing.T) {
		e := newEnv(t, nil)
		srv := ingestServer(e, IngestConfig{MaxLineBytes: 1 << 20, MaxBodyBytes: 1 << 20})
		post(t, srv.URL, strings.NewReader(runText(runLines...)))
		srv.Close()
		raw, err := json.Marshal(e.store.Export())
		if err != nil {
			t.Fatal(err)
		}
		var st ampstore.StreamState
		if err := json.Unmarshal(raw, &st); err != nil {
			t.Fatal(err)
		}
		restored := ampstore.NewStreamStore(ampstore.NewLabelCap(100, nil), nil)
		if err := restored.Import(&st); err != nil {
			t.Fatal(err)
		}
		e = newEnv(t, restored)
		srv = ingestServer(e, IngestConfig{MaxLineBytes: 1 << 20, MaxBodyBytes: 1 << 20})
		defer srv.Close()
		post(t, srv.URL, strings.NewReader(runText(runLines...)))
		if got := e.counts(); got != once {
			t.Fatalf("a run posted before and after a restart counts %v, want %v", got, once)
		}
	})
	t.Run("cut and resent", func(t *testing.T) {
		// The connection drops after the first answer; the client sends
		// the run again, whole. Its lines count once; its one execution
		// is the first reading's (incomplete).
		e := newEnv(t, nil)
		srv := ingestServer(e, IngestConfig{MaxLineBytes: 1 << 20, MaxBodyBytes: 1 << 20})
		defer srv.Close()
		post(t, srv.URL, strings.NewReader(runText(runLines[:3]...)))
		post(t, srv.URL, strings.NewReader(runText(runLines...)))
		if got := e.counts(); got != once {
			t.Fatalf("a run cut and resent counts %v, want %v", got, once)
		}
		if got := e.value("amp_executions_total", "outcome", "incomplete"); got != 1 {
			t.Fatalf("incomplete %v", got)
		}
	})
	t.Run("one body holding the run twice", func(t *testing.T) {
		e := newEnv(t, nil)
		srv := ingestServer(e, IngestConfig{MaxLineBytes: 1 << 20, MaxBodyBytes: 1 << 20})
		defer srv.Close()
		post(t, srv.URL, strings.NewReader(runText(runLines...)+runText(runLines...)))
		if got := e.counts(); got != once {
			t.Fatalf("counts %v, want %v", got, once)
		}
	})
	t.Run("two runs of one thread", func(t *testing.T) {
		e := newEnv(t, nil)
		srv := ingestServer(e, IngestConfig{MaxLineBytes: 1 << 20, MaxBodyBytes: 1 << 20})
		defer srv.Close()
		post(t, srv.URL, strings.NewReader(runText(runLines...)))
		post(t, srv.URL, strings.NewReader(runText(continuedRun(1)...)))
		post(t, srv.URL, strings.NewReader(runText(continuedRun(1)...))) // the second, again
		if got, want := e.counts(), [3]float64{300, 2, 2}; got != want {
			t.Fatalf("two runs of one thread count %v, want %v", got, want)
		}
	})
}

// A tailed run whose head is read over two polls, with a restart of the
// store between them: the held lines are saved with the capture's state
// and counted once.
func TestRunHeadHeldAcrossARestart(t *testing.T) {
	dir := t.TempDir()
	e := newEnv(t, nil)
	path := filepath.Join(dir, "run.jsonl")
	appendFile(t, path, runText(runLines[:2]...)) // init and prompt: the head is not complete
	e.tailer(dir).Poll()
	if got := e.value("amp_prompts_total", "source", "stream"); got != 0 {
		t.Fatalf("prompts %v before the head is complete", got)
	}
	raw, err := json.Marshal(e.store.Export())
	if err != nil {
		t.Fatal(err)
	}
	var st ampstore.StreamState
	if err := json.Unmarshal(raw, &st); err != nil {
		t.Fatal(err)
	}
	restored := ampstore.NewStreamStore(ampstore.NewLabelCap(100, nil), nil)
	if err := restored.Import(&st); err != nil {
		t.Fatal(err)
	}
	e = newEnv(t, restored)
	appendFile(t, path, runText(runLines[2:]...))
	e.tailer(dir).Poll()
	if got, want := e.counts(), [3]float64{150, 1, 1}; got != want {
		t.Fatalf("counts %v, want %v", got, want)
	}
}
