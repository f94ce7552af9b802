package collector

import (
	"bufio"
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	sharedtest "github.com/amp-exporter/amp-exporter/internal/testsupport/testutil"
	"github.com/amp-exporter/amp-exporter/otlp"
	"github.com/amp-exporter/amp-exporter/parser/amyturn"
	"github.com/amp-exporter/amp-exporter/parser/thread"
	"github.com/amp-exporter/amp-exporter/remotewrite"
	"github.com/amp-exporter/amp-exporter/store"
)

// outputGolden pins the whole /metrics output of a realistic fixture, as
// node_exporter's collector/fixtures/e2e-output.txt does: every family, its
// HELP and TYPE, and every series. Any change to the exposition shows here;
// go test ./collector -update rewrites it (and docs/metrics.md).
const outputGolden = "testdata/output.prom"

// fixtureRegistry is a registry with every collector and instrument of the
// exporter, fed from the parsers' fixtures: thread files, server threads
// (one of them also a local file), stream-json captures, Amy turn streams,
// and the exporter's and the server source's own metrics set as a running
// exporter sets them. The Go and process collectors and the build info are
// left out: their values are the machine's.
func fixtureRegistry(t *testing.T) *prometheus.Registry {
	t.Helper()
	reg := prometheus.NewPedanticRegistry()
	registerFixture(t, reg)
	return reg
}

// registerFixture registers the fixture's collectors and instruments on reg.
func registerFixture(t *testing.T, reg prometheus.Registerer) {
	t.Helper()
	now := func() time.Time { return fixedNow }
	labels := store.NewLabelCap(100, nil)
	owners := store.NewOwners()
	local := store.NewThreadStore(store.StoreOptions{Labels: labels, Now: now})
	server := store.NewThreadStore(store.StoreOptions{Labels: labels, Now: now})
	local.SetClaim(owners, store.SourceThreads)
	server.SetClaim(owners, store.SourceAmpServer)
	prices := embeddedPrices(t)
	local.SetPrices(prices)
	server.SetPrices(prices)
	loadThreadFixtures(t, local)

	// Server threads: one also present as a local file (counted there),
	// two only on the server, one of them billed.
	server.Apply(store.AmpServerPath("T-1"), store.FileVersion{AmpServerV: 2}, summaryOf(t, withTail("")))
	for _, id := range []string{"T-s1", "T-s2"} {
		doc := strings.Replace(withTail(""), `"T-1"`, `"`+id+`"`, 1)
		doc = strings.Replace(doc, `"m1"`, `"claude-sonnet-4-5-20250929"`, 1)
		server.Apply(store.AmpServerPath(id), store.FileVersion{AmpServerV: 5}, summaryOf(t, doc))
	}
	server.ApplyBilled("T-s1", map[string]float64{"paid": 0.42, "free": 0.08})
	// A server thread run in fast mode: its message is billed at Opus
	// 4.6's fast multiple, the premium in amp_speed_premium_usd_total.
	fast := strings.Replace(withTail(""), `"T-1"`, `"T-s3"`, 1)
	fast = strings.Replace(fast, `"model":"m1"`, `"model":"claude-opus-4-6","features":["fast"]`, 1)
	server.Apply(store.AmpServerPath("T-s3"), store.FileVersion{AmpServerV: 3}, summaryOf(t, fast))
	local.Apply("/threads/T-1.json", store.FileVersion{Size: 1}, summaryOf(t, withTail("")))

	amp := NewAmpCollector(local, streamStore(t))
	amp.SetAmpServerStore(server)
	reg.MustRegister(amp, NewAmyCollector(amyFixtureStore(t, labels)))

	em := NewExporterMetrics(reg)
	em.ConfigLoaded(true, fixedNow)
	em.PricingInUse("genai-prices", "test")
	em.Parsed(store.SourceThreads, 3*time.Millisecond)
	em.Parsed(store.SourceThreads, 40*time.Millisecond)
	em.ParseFailed(store.SourceThreads, thread.ReasonTruncated)
	em.WatcherPolling(false)
	em.DirsMissing(0)

	sm := NewAmpServerMetrics(reg, []string{"getUserInfo", "listThreads", "getThreadTail", "threadDisplayCostInfo"})
	for range 3 {
		sm.Request("listThreads", "200")
	}
	sm.Request("getThreadTail", "429")
	sm.Up(true)
	sm.Synced(fixedNow)
	limit, remaining, used := 20.0, 12.5, 0.375
	sm.SetEntitlement(store.Entitlement{Window: "daily", LimitUSD: &limit, RemainingUSD: &remaining, UsedRatio: &used, ResetsAt: fixedNow.Add(6 * time.Hour)})

	remotewrite.NewMetrics(reg, NewCounterVec(NameRemoteWriteSamples), NewGaugeVec(NameRemoteWriteLastOK))
	otlp.NewMetrics(reg, NewCounterVec(NameOTLPDatapoints), NewGaugeVec(NameOTLPLastOK))
}

// loadThreadFixtures applies every thread fixture of the parser that parses.
func loadThreadFixtures(t *testing.T, s *store.ThreadStore) {
	t.Helper()
	for _, f := range sharedtest.ThreadFixtures(t) {
		s.Apply("/threads/"+f.Name, store.FileVersion{Size: int64(len(f.Data))}, f.Summary)
	}
}

// amyFixtureStore feeds the parser's recorded Amy turn streams into a store
// under upstream "prod", one second apart on the exporter's clock, and a
// reconnect, a replay and a bad event as the client would report them.
func amyFixtureStore(t *testing.T, labels *store.LabelCap) *store.AmyStore {
	t.Helper()
	s := store.NewAmyStore(labels, func() time.Time { return fixedNow })
	s.SetUpstreams([]string{"prod"})
	files, _ := filepath.Glob("../parser/amyturn/testdata/*.sse")
	if len(files) < 2 {
		t.Fatalf("only %d Amy fixtures", len(files))
	}
	d := amyturn.NewDecoder()
	at := fixedNow
	for i, f := range files {
		turn := "turn-" + filepath.Base(f)
		events := readSSE(t, f)
		for _, e := range events {
			at = at.Add(time.Second)
			r, err := d.Decode(e.event, e.data)
			if err != nil {
				s.BadEvent("prod", turn, e.id, at)
				continue
			}
			s.Observe("prod", turn, e.id, r, at)
		}
		if i == 0 && len(events) > 0 { // a reconnect that replays the last event
			s.Reconnected("prod", store.ReconnectEOF)
			last := events[len(events)-1]
			if r, err := d.Decode(last.event, last.data); err == nil {
				s.Observe("prod", turn, last.id, r, at)
			}
		}
	}
	s.SetUp("prod", "turn-"+filepath.Base(files[0]), true)
	return s
}

type sseEvent struct{ id, event, data string }

// readSSE reads the simple SSE of the fixtures: id, event and one data line
// per event, comments and retry ignored.
func readSSE(t *testing.T, path string) []sseEvent {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []sseEvent
	var cur sseEvent
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "":
			if cur.event != "" || cur.data != "" {
				out = append(out, cur)
			}
			cur = sseEvent{}
		case strings.HasPrefix(line, "id: "):
			cur.id = line[4:]
		case strings.HasPrefix(line, "event: "):
			cur.event = line[7:]
		case strings.HasPrefix(line, "data: "):
			cur.data = line[6:]
		}
	}
	if cur.event != "" || cur.data != "" {
		out = append(out, cur)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// exposition is the registry's whole output in the text format.
func exposition(t *testing.T, reg prometheus.Gatherer) []byte {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	for _, mf := range mfs {
		if err := writeText(&buf, mf); err != nil {
			t.Fatal(err)
		}
	}
	return buf.Bytes()
}

func TestWholeOutputGolden(t *testing.T) {
	reg := fixtureRegistry(t)
	got := exposition(t, WithoutEmptyRepository(reg))
	if *update {
		if err := os.WriteFile(outputGolden, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(outputGolden)
	if err != nil {
		t.Fatalf("%v (go test ./collector -update writes it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("the /metrics output differs from %s (go test ./collector -update rewrites it; review the diff):\n%s", outputGolden, lineDiff(string(want), string(got)))
	}
	// Every family of the contract's sources is in the fixture's output,
	// so the golden file pins each of them.
	for _, m := range Metrics {
		if m.Family != "" && !bytes.Contains(got, []byte("\n# TYPE "+m.Name+" ")) && !bytes.HasPrefix(got, []byte("# HELP "+m.Name+" ")) {
			t.Errorf("the fixture renders no series of %s", m.Name)
		}
	}
	problems, err := testutil.GatherAndLint(reg)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Errorf("lint: %s: %s", p.Metric, p.Text)
	}
}

// lineDiff lists the lines only in want (-) and only in got (+), at most
// 40 of them.
func lineDiff(want, got string) string {
	in := func(s string) map[string]bool {
		m := map[string]bool{}
		for _, l := range strings.Split(s, "\n") {
			m[l] = true
		}
		return m
	}
	w, g := in(want), in(got)
	var out []string
	for _, l := range strings.Split(want, "\n") {
		if !g[l] {
			out = append(out, "- "+l)
		}
	}
	for _, l := range strings.Split(got, "\n") {
		if !w[l] {
			out = append(out, "+ "+l)
		}
	}
	if len(out) > 40 {
		out = append(out[:40], "…")
	}
	return strings.Join(out, "\n")
}
