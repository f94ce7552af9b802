package main

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/amp-exporter/amp-exporter/internal/testsupport/testsize"
	"github.com/amp-exporter/amp-exporter/internal/testsupport/testutil"
	"github.com/amp-exporter/amp-exporter/internal/testsupport/threadgen"
)

// victimEnv makes the test binary run the exporter itself (with the
// arguments in the variable, JSON-encoded), so the kill loop kills a real
// exporter process without needing a separately built binary.
const victimEnv = "AMP_EXPORTER_TEST_VICTIM_ARGS"

func TestMain(m *testing.M) {
	if a := os.Getenv(victimEnv); a != "" {
		var args []string
		if err := json.Unmarshal([]byte(a), &args); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
		os.Exit(run(args, os.Stdout, os.Stderr))
	}
	os.Exit(m.Run())
}

type victim struct {
	cmd  *exec.Cmd
	port int
	// out is written by the process's copying goroutine while the test
	// reads it (a scrape that never settles prints it).
	out *testutil.SyncBuffer
}

func startVictim(t *testing.T, cfg, storage string) *victim {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	args, _ := json.Marshal([]string{
		"--config.file=" + cfg, "--storage.path=" + storage, "--storage.save-interval=20ms",
		fmt.Sprintf("--web.listen-address=127.0.0.1:%d", port), "--log.level=warn",
	})
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, "-test.run=^$")
	if wrapper := os.Getenv("AMP_TEST_EXEC"); wrapper != "" {
		// The test binary is run by an emulator (make test-arm64 runs
		// it under qemu-user): so must the victim be.
		cmd = exec.Command(wrapper, exe, "-test.run=^$")
	}
	cmd.Env = append(os.Environ(), victimEnv+"="+string(args))
	out := &testutil.SyncBuffer{}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	return &victim{cmd: cmd, port: port, out: out}
}

func (v *victim) kill() { _ = v.cmd.Process.Kill(); _ = v.cmd.Wait() }

// counters scrapes the Amp counters (and histograms) of the exporter, as
// "name{labels} value" lines; ok is false until it is ready.
func (v *victim) counters() (string, bool) {
	counters, _, ok := v.scrape()
	return counters, ok
}

// scrape is counters, and the time of the exporter's last completed sync
// with the Amp server (its last-sync gauge; 0 before the first).
func (v *victim) scrape() (counters string, lastSync float64, ok bool) {
	c := &http.Client{Timeout: 2 * time.Second}
	if r, err := c.Get(fmt.Sprintf("http://127.0.0.1:%d/-/ready", v.port)); err != nil {
		return "", 0, false
	} else {
		r.Body.Close()
		if r.StatusCode != http.StatusOK {
			return "", 0, false
		}
	}
	r, err := c.Get(fmt.Sprintf("http://127.0.0.1:%d/metrics", v.port))
	if err != nil {
		return "", 0, false
	}
	defer r.Body.Close()
	p := expfmt.NewTextParser(model.UTF8Validation)
	mfs, err := p.TextToMetricFamilies(r.Body)
	if err != nil {
		return "", 0, false
	}
	for _, m := range mfs["amp_server_last_sync_timestamp_seconds"].GetMetric() {
		lastSync = m.GetGauge().GetValue()
	}
	var lines []string
	for name, mf := range mfs {
		if !strings.HasPrefix(name, "amp_") || strings.HasPrefix(name, "amp_exporter_") ||
			strings.HasPrefix(name, "amp_server_") { // the sync's own requests and bytes, not counts
			continue
		}
		for _, m := range mf.GetMetric() {
			var labels []string
			for _, l := range m.GetLabel() {
				labels = append(labels, l.GetName()+"="+l.GetValue())
			}
			key := name + "{" + strings.Join(labels, ",") + "}"
			switch mf.GetType() {
			case dto.MetricType_COUNTER:
				lines = append(lines, fmt.Sprintf("%s %v", key, m.GetCounter().GetValue()))
			case dto.MetricType_HISTOGRAM:
				h := m.GetHistogram()
				lines = append(lines, fmt.Sprintf("%s count=%d sum=%v", key, h.GetSampleCount(), h.GetSampleSum()))
			}
		}
	}
	sort.Strings(lines)
	return strings.Join(lines, "\n"), lastSync, true
}

// settled waits until the counters are the same on three scrapes in a row
// and every condition given holds for them.
func (v *victim) settled(t *testing.T, conds ...func(counters string) bool) string {
	t.Helper()
	got, err := v.waitSettled(conds...)
	if err != nil {
		t.Fatal(err)
	}
	return got
}

// waitSettled is settled for any goroutine: it returns what settled would
// fail the test with.
func (v *victim) waitSettled(conds ...func(counters string) bool) (string, error) {
	deadline := time.Now().Add(60 * time.Second)
	var last string
	same := 0
	for time.Now().Before(deadline) {
		time.Sleep(200 * time.Millisecond)
		got, ok := v.counters()
		if !ok {
			continue
		}
		if got == last {
			if same++; same >= 2 && allHold(conds, got) {
				return got, nil
			}
		} else {
			last, same = got, 0
		}
	}
	return "", fmt.Errorf("counters never settled; last scrape:\n%s\noutput:\n%s", last, v.out.String())
}

// settleBoth waits for two victims at once (each with wait, in a
// goroutine of its own) and returns what each settled on.
func settleBoth(t *testing.T, a, b *victim, wait func(*victim) (string, error)) (string, string) {
	t.Helper()
	var got [2]string
	var errs [2]error
	var wg sync.WaitGroup
	for i, v := range []*victim{a, b} {
		wg.Go(func() { got[i], errs[i] = wait(v) })
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	return got[0], got[1]
}

func allHold(conds []func(string) bool, counters string) bool {
	for _, c := range conds {
		if !c(counters) {
			return false
		}
	}
	return true
}

// hasLine reports whether counters (as victim.counters returns them)
// hold exactly this line.
func hasLine(counters, line string) bool {
	return slices.Contains(strings.Split(counters, "\n"), line)
}

// corpusWriter changes the watched files the way Amp does: new threads,
// threads rewritten whole with a message more, stream-json runs appended
// (sometimes a line in two writes). Files only grow, so a clean run over
// the final files must give the same totals as any history of them.
type corpusWriter struct {
	threads, streams string
	gen              *threadgen.Generator
	rng              *rand.Rand
	next             int
	names            []string
	run              []string
	runs             int
	clock            int
}

func (w *corpusWriter) writeAtomic(path string, data []byte) error {
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, data, 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

func (w *corpusWriter) newThread() error {
	name, data := w.gen.Thread(w.next)
	w.next++
	w.names = append(w.names, name)
	return w.writeAtomic(filepath.Join(w.threads, name), data)
}

// growThread appends one whole exchange (a prompt and a finished answer,
// later than anything in the thread) to a thread and rewrites it. A new
// exchange leaves what was counted of the earlier ones as it was.
func (w *corpusWriter) growThread() error {
	path := filepath.Join(w.threads, w.names[w.rng.IntN(len(w.names))])
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	var doc map[string]any
	if err := json.Unmarshal(data, &doc); err != nil {
		return err
	}
	msgs, _ := doc["messages"].([]any)
	for _, m := range msgs {
		mm, _ := m.(map[string]any)
		usage, _ := mm["usage"].(map[string]any)
		if mm["role"] != "assistant" || usage == nil {
			continue
		}
		w.clock++
		sent := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC).Add(time.Duration(w.clock) * time.Minute)
		u := map[string]any{}
		for k, v := range usage {
			u[k] = v
		}
		u["timestamp"] = sent.Add(5 * time.Second).Format(time.RFC3339Nano)
		n := len(msgs)
		doc["messages"] = append(msgs,
			map[string]any{"role": "user", "messageId": n, "content": []any{map[string]any{"type": "text", "text": "and then?"}},
				"meta": map[string]any{"sentAt": sent.UnixMilli()}},
			map[string]any{"role": "assistant", "messageId": n + 1, "content": []any{map[string]any{"type": "text", "text": "done"}},
				"state": map[string]any{"type": "complete", "stopReason": "end_turn"}, "usage": u})
		doc["nextMessageId"] = n + 2
		out, err := json.MarshalIndent(doc, "", "  ")
		if err != nil {
			return err
		}
		return w.writeAtomic(path, out)
	}
	return nil
}

func (w *corpusWriter) appendRun() error {
	w.runs++
	id := fmt.Sprintf("T-00000000-0000-4000-8000-%012d", w.runs)
	var b strings.Builder
	for _, line := range w.run {
		b.WriteString(strings.ReplaceAll(line, "T-019c4811-2a5e-7c3d-8e21-5b6f0a9d4c11", id))
		b.WriteByte('\n')
	}
	f, err := os.OpenFile(filepath.Join(w.streams, fmt.Sprintf("cap-%d.jsonl", w.runs%3)), os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	defer f.Close()
	s := b.String()
	cut := w.rng.IntN(len(s))
	if _, err := f.WriteString(s[:cut]); err != nil {
		return err
	}
	_, err = f.WriteString(s[cut:])
	return err
}

func (w *corpusWriter) step() error {
	switch r := w.rng.IntN(10); {
	case r < 2:
		return w.newThread()
	case r < 8:
		return w.growThread()
	default:
		return w.appendRun()
	}
}

// TestKillLoopNeverLosesNorDoubleCounts kills the exporter with SIGKILL
// dozens of times, mid-scan and mid-save (it saves every 20 ms here),
// while thread files are added and rewritten and stream-json captures
// grow; the totals it ends with equal those of a clean run over the final
// files.
func TestKillLoopNeverLosesNorDoubleCounts(t *testing.T) {
	t.Parallel() // most of it is waiting on the victims: it overlaps the other kill loop
	kills := 12
	if testsize.Long() {
		kills = 40
	}
	root := t.TempDir()
	threadsDir, streamsDir := filepath.Join(root, "threads"), filepath.Join(root, "streams")
	for _, d := range []string{threadsDir, streamsDir} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	cfg := filepath.Join(root, "amp-exporter.yml")
	if err := os.WriteFile(cfg, []byte(fmt.Sprintf("threads:\n  dirs: [%q]\n  poll_interval: 100ms\nstreams:\n  dirs: [%q]\n  poll_interval: 50ms\n",
		threadsDir, streamsDir)), 0o644); err != nil {
		t.Fatal(err)
	}
	run, err := os.ReadFile("../../parser/streamjson/testdata/success-run.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	w := &corpusWriter{
		threads: threadsDir, streams: streamsDir,
		gen: threadgen.New(threadgen.Options{Threads: 2000, TotalBytes: 2000 * 6000, Seed: 11}),
		rng: rand.New(rand.NewPCG(1, 2)),
		run: strings.Split(strings.TrimSpace(string(run)), "\n"),
	}
	for range 150 {
		if err := w.newThread(); err != nil {
			t.Fatal(err)
		}
	}

	// The writer runs while victims come and go.
	stopWriter := writeUntilStopped(t, 5*time.Millisecond, w.step)

	storage := filepath.Join(root, "state")
	killer := rand.New(rand.NewPCG(3, 4))
	torn := 0
	for i := range kills {
		v := startVictim(t, cfg, storage)
		// From the middle of start-up (restore, first scan) to well into
		// the saves.
		time.Sleep(time.Duration(20+killer.IntN(600)) * time.Millisecond)
		v.kill()
		out := v.out.String()
		if strings.Contains(out, "panic") || strings.Contains(out, "level=ERROR") {
			t.Fatalf("kill %d: the exporter reported:\n%s", i, out)
		}
		if strings.Contains(out, "save was interrupted") {
			torn++
		}
	}
	t.Logf("%d kills; %d starts found a save cut off by the kill before", kills, torn)
	if err := stopWriter(); err != nil {
		t.Fatal(err)
	}

	// /-/ready says the threads were scanned once, not that the stream
	// tailer has caught up; and it counts a capture once it has read it
	// whole. A capture read late (the last of three, a few hundred KB
	// under -race on a loaded machine, all of it unread when no victim
	// lived to read it) was missing from three scrapes in a row, and the
	// totals differed by exactly that capture's runs. So both runs are
	// compared once every run written has ended in a counted execution.
	caughtUp := func(c string) bool {
		return hasLine(c, fmt.Sprintf("amp_executions_total{outcome=success} %d", w.runs))
	}
	// The run after the kills and the clean run read the same final files
	// into states of their own: they run side by side.
	v := startVictim(t, cfg, storage)
	defer v.kill()
	clean := startVictim(t, cfg, filepath.Join(root, "clean-state"))
	defer clean.kill()
	afterKills, want := settleBoth(t, v, clean, func(v *victim) (string, error) { return v.waitSettled(caughtUp) })
	if !strings.Contains(want, "amp_tokens_total") || !strings.Contains(want, `source=stream`) {
		t.Fatalf("the clean run counted too little to compare:\n%s", want)
	}
	if afterKills != want {
		t.Errorf("after %d kills the totals differ from a clean run over the final files (%d threads, %d runs)\n%s",
			kills, len(w.names), w.runs, lineDiff(want, afterKills))
	}
}

func lineDiff(want, got string) string {
	wl, gl := map[string]bool{}, map[string]bool{}
	for _, l := range strings.Split(want, "\n") {
		wl[l] = true
	}
	for _, l := range strings.Split(got, "\n") {
		gl[l] = true
	}
	var b strings.Builder
	for l := range wl {
		if !gl[l] {
			fmt.Fprintf(&b, "- clean:  %s\n", l)
		}
	}
	for l := range gl {
		if !wl[l] {
			fmt.Fprintf(&b, "+ killed: %s\n", l)
		}
	}
	return b.String()
}

// writeUntilStopped calls step every period in a goroutine of its own
// until the returned function is called (also at the test's cleanup),
// which stops it and returns the first error step returned.
func writeUntilStopped(t *testing.T, period time.Duration, step func() error) func() error {
	stop := make(chan struct{})
	done := make(chan error, 1)
	go func() {
		for {
			select {
			case <-stop:
				done <- nil
				return
			case <-time.After(period):
			}
			if err := step(); err != nil {
				done <- err
				return
			}
		}
	}()
	var once sync.Once
	var err error
	stopped := func() error {
		once.Do(func() { close(stop); err = <-done })
		return err
	}
	t.Cleanup(func() { _ = stopped() })
	return stopped
}
