package collector

import (
	"bytes"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	versioncollector "github.com/prometheus/client_golang/prometheus/collectors/version"

	"github.com/amp-exporter/amp-exporter/store"
)

// metricsDoc is the generated reference of every metric.
const metricsDoc = "../docs/metrics.md"

// notYetRegistered are rows of the table that no code of this tree
// registers yet (the contract has them; their instruments are being added).
// Remove a name once its instrument is registered by registerFixture.
var notYetRegistered = map[string]bool{
	NameServerResponseBytes:  true,
	NameServerThreadsSkipped: true,
	NameStateBytesWritten:    true,
	NameStateCompactions:     true,
	NameStateSaveDuration:    true,
}

// unexposed are the store families kept for counting only.
var unexposed = map[store.Family]bool{store.FamTokensLong: true}

// docSections group the table's rows in docs/metrics.md.
var docSections = []struct {
	title, intro string
	in           func(name string) bool
}{
	{"Amp usage", "Counted from Amp thread files (`source=\"threads\"`), threads read from the Amp server (`source=\"server\"`) and `amp -x --stream-json` output (`source=\"stream\"`). Each thread, message, tool call and run counts once, whichever source reads it.",
		func(n string) bool {
			return strings.HasPrefix(n, "amp_") && !strings.HasPrefix(n, "amp_exporter_") && !strings.HasPrefix(n, "amp_server_") && !strings.HasPrefix(n, "amp_entitlement_")
		}},
	{"The Amp server source", "The state of the sync with the Amp server and the user's entitlement, as the server reports it.",
		func(n string) bool {
			return strings.HasPrefix(n, "amp_server_") || strings.HasPrefix(n, "amp_entitlement_")
		}},
	{"Amy turn streams", "`upstream` is the configured name of the Amy endpoint. Each event counts once per turn, whatever the reconnects and however many readers.",
		func(n string) bool { return strings.HasPrefix(n, "amy_") }},
	{"The exporter itself", "", func(n string) bool { return strings.HasPrefix(n, "amp_exporter_") }},
}

// renderMetricsDoc writes docs/metrics.md from the table.
func renderMetricsDoc() []byte {
	var b bytes.Buffer
	b.WriteString(`# Metrics

<!-- Generated from the table in collector/metrics.go by
     go test ./collector -run TestMetricsDoc -update (or go generate ./collector).
     Do not edit by hand: TestMetricsDoc fails when this file is stale. -->

Every family amp-exporter exposes on ` + "`/metrics`" + `, with its type, its
labels and what it counts. Names and labels are stable: dashboards, alert
rules and queries depend on them. Series whose label values are known in
advance (roles, outcomes, verdicts, reasons, configured upstreams) start at
zero, so ` + "`rate()`" + ` and alerts work from the first scrape. Label values that
come from data (` + "`model`, `tool`, `agent`, `agent_mode`, `stop_reason`" + `) are capped by
` + "`limits.max_label_values`" + `; values past the cap are counted under ` + "`other`" + `.
The Go runtime and process collectors (` + "`go_*`, `process_*`" + `) are exposed too and
are not listed here.

`)
	for _, sec := range docSections {
		fmt.Fprintf(&b, "## %s\n\n", sec.title)
		if sec.intro != "" {
			b.WriteString(sec.intro + "\n\n")
		}
		b.WriteString("| name | type | labels | from | meaning |\n|---|---|---|---|---|\n")
		for _, m := range Metrics {
			if !sec.in(m.Name) {
				continue
			}
			labels := make([]string, 0, len(m.AllLabels()))
			for _, l := range m.AllLabels() {
				labels = append(labels, "`"+l+"`")
			}
			meaning := strings.ReplaceAll(m.Help, "|", "\\|")
			if len(m.Buckets) > 0 {
				bounds := make([]string, len(m.Buckets))
				for i, v := range m.Buckets {
					bounds[i] = strconv.FormatFloat(v, 'g', -1, 64)
				}
				meaning += " Buckets: " + strings.Join(bounds, ", ") + "."
			}
			fmt.Fprintf(&b, "| `%s` | %s | %s | %s | %s |\n", m.Name, m.Type, strings.Join(labels, ", "), m.Source, meaning)
		}
		b.WriteString("\n")
	}
	return b.Bytes()
}

// recorder is a Registerer that keeps what is registered on it.
type recorder struct {
	prometheus.Registerer
	collectors []prometheus.Collector
}

func (r *recorder) Register(c prometheus.Collector) error {
	r.collectors = append(r.collectors, c)
	return r.Registerer.Register(c)
}

func (r *recorder) MustRegister(cs ...prometheus.Collector) {
	r.collectors = append(r.collectors, cs...)
	r.Registerer.MustRegister(cs...)
}

var descRE = regexp.MustCompile(`^Desc\{fqName: ("(?:[^"\\]|\\.)*"), help: ("(?:[^"\\]|\\.)*"), (?:unit: "[^"]*", )?constLabels: \{([^}]*)\}, variableLabels: \{([^}]*)\}\}$`)

var constLabelRE = regexp.MustCompile(`(?:^|,)([a-zA-Z_][a-zA-Z0-9_]*)=`)

// TestMetricsDoc: every family any part of the exporter registers has its
// row in the table, with the same HELP, labels and type; every row is
// registered (or listed in notYetRegistered); and docs/metrics.md is the
// table's rendering.
func TestMetricsDoc(t *testing.T) {
	reg := prometheus.NewPedanticRegistry()
	rec := &recorder{Registerer: reg}
	registerFixture(t, rec)
	rec.MustRegister(versioncollector.NewCollector("amp_exporter"))

	seen := map[string]bool{}
	ch := make(chan *prometheus.Desc, 64)
	go func() {
		for _, c := range rec.collectors {
			c.Describe(ch)
		}
		close(ch)
	}()
	for d := range ch {
		sm := descRE.FindStringSubmatch(d.String())
		if sm == nil {
			t.Fatalf("cannot read descriptor %s", d)
		}
		name, _ := strconv.Unquote(sm[1])
		help, _ := strconv.Unquote(sm[2])
		var labels []string
		for _, kv := range constLabelRE.FindAllStringSubmatch(sm[3], -1) {
			labels = append(labels, kv[1])
		}
		if sm[4] != "" {
			labels = append(labels, strings.Split(sm[4], ",")...)
		}
		seen[name] = true
		m := byName[name]
		if m == nil {
			t.Errorf("%s is registered but has no row in the table (collector/metrics.go)", name)
			continue
		}
		if help != m.Help {
			t.Errorf("%s: HELP %q, the table says %q", name, help, m.Help)
		}
		want := slices.Clone(m.AllLabels())
		slices.Sort(want)
		slices.Sort(labels)
		if !slices.Equal(labels, want) {
			t.Errorf("%s: labels %v, the table says %v", name, labels, want)
		}
	}
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if m := byName[mf.GetName()]; m != nil && !strings.EqualFold(mf.GetType().String(), string(m.Type)) {
			t.Errorf("%s: type %s, the table says %s", mf.GetName(), mf.GetType(), m.Type)
		}
	}
	for _, m := range Metrics {
		if !seen[m.Name] && !notYetRegistered[m.Name] {
			t.Errorf("%s has a row in the table but nothing registers it", m.Name)
		}
		if seen[m.Name] && notYetRegistered[m.Name] {
			t.Errorf("%s is registered now: remove it from notYetRegistered", m.Name)
		}
		n := 0
		for _, sec := range docSections {
			if sec.in(m.Name) {
				n++
			}
		}
		if n != 1 {
			t.Errorf("%s is in %d sections of docs/metrics.md", m.Name, n)
		}
	}

	// Every store family is rendered by a row, but the ones kept only for
	// counting.
	for _, f := range store.Families() {
		if byFamily[f] == nil && !unexposed[f] {
			t.Errorf("store family %s has no row in the table (collector/metrics.go)", f)
		}
	}

	doc := renderMetricsDoc()
	if *update {
		if err := os.WriteFile(metricsDoc, doc, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := os.ReadFile(metricsDoc)
	if err != nil {
		t.Fatalf("%v (go test ./collector -run TestMetricsDoc -update writes it)", err)
	}
	if !bytes.Equal(got, doc) {
		t.Errorf("%s is stale: go test ./collector -run TestMetricsDoc -update rewrites it from the table:\n%s", metricsDoc, lineDiff(string(got), string(doc)))
	}
}
