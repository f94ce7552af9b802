// Package landing renders the exporter's landing page: exporter-toolkit's
// page (name, version, links) with a table that answers "is it working?"
// — per source what is configured, its state and what it has counted.
//
// Sources plug in as Providers: a function from a snapshot of the
// exporter's metrics to the rows of that source. The page is plain HTML
// (html/template), no JavaScript; the spend section's chart is an inline
// SVG drawn here.
package landing

import (
	"bytes"
	"fmt"
	"html/template"
	"net/http"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/exporter-toolkit/web"

	"github.com/amp-exporter/amp-exporter/internal/spend"
)

// SourceStatus is one row of the table.
type SourceStatus struct {
	// Source names the source ("Thread files", "Amp server", …).
	Source string
	// Configured says what is configured, one entry per line (directories,
	// with whether each exists; the account followed; upstreams).
	Configured []Setting
	// State is one word or a few: watching, polling, missing,
	// unauthorized, connected, not configured, …
	State string
	// Attention marks a State that needs the user (shown in bold red).
	Attention bool
	// Note explains the state in a sentence, when it needs one.
	Note string
	// LastSync is when the source last saw its data change (or last
	// synced); zero: never.
	LastSync time.Time
	// Counted holds what the source has counted so far.
	Counted Counts
	// Pending: the source's first pass is running and its counts are not
	// shown yet (a part of a total is not the total).
	Pending bool
}

// Setting is one configured item and what is known about it.
type Setting struct {
	Value string
	// Problem, when set, is shown next to Value ("missing").
	Problem string
}

// Counts are the figures a person checks first. A nil field is not
// applicable to the source (shown as "—"); zero is a real zero.
type Counts struct {
	Threads      *float64
	Tokens       *float64
	EstimatedUSD *float64
	BilledUSD    *float64
	// LinesAdded and LinesRemoved are what the agents' edit tools changed
	// (nil for sources that read no edits).
	LinesAdded   *float64
	LinesRemoved *float64
}

// Provider returns the rows of one source, reading what it needs from a
// snapshot of the exporter's metrics and its own configuration.
type Provider func(m Metrics) []SourceStatus

// NotConfigured is the State of a source that is not set up.
const NotConfigured = "not configured"

// marker is where the table goes in the toolkit's page.
const marker = "<!--amp-exporter:sources-->"

const css = `
table.sources { border-collapse: collapse; margin: 1em 0; }
table.sources th, table.sources td { border: 1px solid #ccc; padding: 0.3em 0.6em; text-align: left; vertical-align: top; }
table.sources td.num { text-align: right; font-variant-numeric: tabular-nums; }
.attention { color: #b00020; font-weight: bold; }
table.sources .note { color: #555; font-size: 0.9em; }
table.sources ul { margin: 0; padding-left: 1.1em; }
`

var table = template.Must(template.New("sources").Funcs(template.FuncMap{
	"num":   formatNumber,
	"usd":   formatUSD,
	"when":  formatWhen,
	"lines": formatLines,
}).Parse(`<h3>Sources</h3>
{{with .Summary}}{{if .Tokens}}<p>Counted so far: <strong>{{num .Tokens}} tokens</strong>, {{usd .EstimatedUSD}} estimated
{{- if .LinesAdded}}; the agents' edits added <strong>{{num .LinesAdded}} lines</strong> and removed {{num .LinesRemoved}}{{end}}.</p>
{{- else if .Pending}}<p>Reading what is there; the totals are shown when the first pass is complete.</p>
{{- else}}<p class="attention">Nothing counted yet: no source has seen any usage (the table says why).</p>{{end}}
{{- with .Pending}}<p>First pass running: {{range $i, $s := .}}{{if $i}}; {{end}}{{$s}}{{end}} (not in the totals yet).</p>{{end}}
{{- with .Attention}}<p class="attention">Needs attention: {{range $i, $s := .}}{{if $i}}; {{end}}{{$s}}{{end}}.</p>{{end}}{{end}}
<table class="sources">
<thead><tr><th>Source</th><th>Configured</th><th>State</th><th>Last change</th><th>Threads</th><th>Tokens</th><th>Estimated USD</th><th>Billed USD</th><th>Lines added / removed</th></tr></thead>
<tbody>
{{- range .Rows}}
<tr>
<td>{{.Source}}</td>
<td>{{if .Configured}}<ul>{{range .Configured}}<li>{{.Value}}{{if .Problem}} <span class="attention">({{.Problem}})</span>{{end}}</li>{{end}}</ul>{{else}}—{{end}}</td>
<td><span{{if .Attention}} class="attention"{{end}}>{{.State}}</span>{{if .Note}}<div class="note">{{.Note}}</div>{{end}}</td>
<td>{{when .LastSync $.Now}}</td>
<td class="num">{{num .Counted.Threads}}</td>
<td class="num">{{num .Counted.Tokens}}</td>
<td class="num">{{usd .Counted.EstimatedUSD}}</td>
<td class="num">{{usd .Counted.BilledUSD}}</td>
<td class="num">{{lines .Counted.LinesAdded .Counted.LinesRemoved}}</td>
</tr>
{{- end}}
</tbody>
</table>
<p class="note">Estimated USD: tokens times list prices (an estimate, not a bill). Billed USD: what the service itself reports. Lines: added and removed by the agents' edit tools, as Amp counts them; lines are not value. The page does not refresh itself; reload it.</p>
`))

// Page is the landing page handler.
type Page struct {
	head, tail []byte // the toolkit's page around the table
	prefix     string // the toolkit's route prefix ("/")
	gatherer   prometheus.Gatherer
	providers  []Provider
	now        func() time.Time
	// spend, when set, sums the usage ledger for the spend section.
	spend func() spend.Summary
}

// SetSpend shows the spend section above the sources, summed by f at
// every request (call before serving).
func (p *Page) SetSpend(f func() spend.Summary) { p.spend = f }

// New builds the page from the toolkit's configuration (its links, name,
// version) and the providers, in the order their rows appear. Metrics
// come from g at every request; now is the clock (nil: time.Now).
func New(cfg web.LandingConfig, g prometheus.Gatherer, now func() time.Time, providers ...Provider) (*Page, error) {
	if strings.Contains(cfg.ExtraHTML, marker) {
		return nil, fmt.Errorf("landing: ExtraHTML already holds the marker")
	}
	cfg.ExtraHTML = marker + cfg.ExtraHTML
	cfg.ExtraCSS += css + spendCSS + chartCSS()
	toolkit, err := web.NewLandingPage(cfg)
	if err != nil {
		return nil, fmt.Errorf("landing page: %w", err)
	}
	prefix := cfg.RoutePrefix
	if prefix == "" {
		prefix = "/"
	}
	if !strings.HasSuffix(prefix, "/") {
		prefix += "/"
	}
	// The toolkit renders its page once; take it and split at the marker.
	var w capture
	toolkit.ServeHTTP(&w, &http.Request{Method: http.MethodGet, URL: mustURL(prefix)})
	head, tail, ok := bytes.Cut(w.body.Bytes(), []byte(marker))
	if !ok {
		return nil, fmt.Errorf("landing: the toolkit's page has no place for extra HTML")
	}
	if now == nil {
		now = time.Now
	}
	return &Page{head: head, tail: tail, prefix: prefix, gatherer: g, providers: providers, now: now}, nil
}

// Rows gathers the metrics once and asks every provider for its rows.
func (p *Page) Rows() []SourceStatus {
	m := Gather(p.gatherer)
	var rows []SourceStatus
	for _, pr := range p.providers {
		rows = append(rows, pr(m)...)
	}
	return rows
}

// ServeHTTP implements http.Handler.
func (p *Page) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != p.prefix {
		http.NotFound(w, r)
		return
	}
	var buf bytes.Buffer
	buf.Write(p.head)
	if p.spend != nil {
		if err := renderSpend(&buf, p.spend()); err != nil {
			http.Error(w, "cannot render the landing page: "+err.Error(), http.StatusInternalServerError)
			return
		}
	}
	rows := p.Rows()
	if err := table.Execute(&buf, struct {
		Rows    []SourceStatus
		Summary Summary
		Now     time.Time
	}{rows, Summarize(rows), p.now()}); err != nil {
		http.Error(w, "cannot render the landing page: "+err.Error(), http.StatusInternalServerError)
		return
	}
	buf.Write(p.tail)
	w.Header().Set("Content-Type", "text/html; charset=UTF-8")
	w.Header().Set("Cache-Control", "no-store")
	_, _ = w.Write(buf.Bytes())
}

// Summary is the line above the table: what all sources have counted,
// and which need attention.
type Summary struct {
	Tokens       *float64 // nil: nothing counted
	EstimatedUSD *float64
	// LinesAdded and LinesRemoved: nil when no source reads edits.
	LinesAdded, LinesRemoved *float64
	Attention                []string // "Thread files: missing"
	Pending                  []string // sources whose first pass is running
}

// Summarize adds up the rows.
func Summarize(rows []SourceStatus) Summary {
	var s Summary
	var tokens, usd, added, removed float64
	linesKnown := false
	for _, r := range rows {
		if r.Counted.LinesAdded != nil || r.Counted.LinesRemoved != nil {
			linesKnown = true
			added += deref(r.Counted.LinesAdded)
			removed += deref(r.Counted.LinesRemoved)
		}
		if r.Counted.Tokens != nil {
			tokens += *r.Counted.Tokens
		}
		if r.Counted.EstimatedUSD != nil {
			usd += *r.Counted.EstimatedUSD
		}
		if r.Pending {
			s.Pending = append(s.Pending, r.Source)
		}
		if r.Attention {
			s.Attention = append(s.Attention, r.Source+": "+r.State)
		}
	}
	if tokens > 0 {
		s.Tokens, s.EstimatedUSD = &tokens, &usd
		if linesKnown {
			s.LinesAdded, s.LinesRemoved = &added, &removed
		}
	}
	return s
}

func deref(v *float64) float64 {
	if v == nil {
		return 0
	}
	return *v
}

// formatLines shows lines added and removed as "12 / 3" (the column says
// which is which); a dash when the source reads no edits.
func formatLines(added, removed *float64) string {
	if added == nil && removed == nil {
		return "—"
	}
	a, r := deref(added), deref(removed)
	return formatNumber(&a) + " / " + formatNumber(&r)
}

func formatNumber(v *float64) string {
	if v == nil {
		return "—"
	}
	return groupThousands(fmt.Sprintf("%.0f", *v))
}

func formatUSD(v *float64) string {
	if v == nil {
		return "—"
	}
	s := fmt.Sprintf("%.2f", *v)
	whole, frac, _ := strings.Cut(s, ".")
	return "$" + groupThousands(whole) + "." + frac
}

// groupThousands puts commas into a run of digits (with an optional sign).
func groupThousands(s string) string {
	sign := ""
	if strings.HasPrefix(s, "-") {
		sign, s = "-", s[1:]
	}
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	return sign + b.String()
}

func formatWhen(t, now time.Time) string {
	if t.IsZero() {
		return "never"
	}
	ago := now.Sub(t).Round(time.Second)
	if ago < 0 {
		ago = 0
	}
	return fmt.Sprintf("%s (%s ago)", t.UTC().Format("2006-01-02 15:04:05 UTC"), ago)
}
