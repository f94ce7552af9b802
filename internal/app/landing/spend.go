package landing

import (
	"html/template"
	"io"

	"github.com/amp-exporter/amp-exporter/internal/spend"
)

// spendCSS styles the spend section.
const spendCSS = `
table.spend { border-collapse: collapse; margin: 0.5em 0; }
table.spend th, table.spend td { border: 1px solid #ccc; padding: 0.3em 0.6em; text-align: left; }
table.spend td.num { text-align: right; font-variant-numeric: tabular-nums; }
`

// spendView is what the spend section shows.
type spendView struct {
	Zone    string
	Periods []spendPeriod
	Billed  bool
	Chart   chartData
	Repos   []spendRepo
	More    int
	Ent     *entView
	Undated string
	// Coarse says what long threads' ledgers coarsened; nil for nothing.
	Coarse *coarseView
}

type coarseView struct {
	From, To string
	// Inexact counts the days that may be off in the zone, First and
	// Last the first and last of them.
	Inexact     int
	First, Last string
}

type spendPeriod struct {
	ID, Name, From string
	Estimated      string
	EstimatedExact string
	Billed         string // "" when unknown
	BilledExact    string
}

type spendRepo struct {
	Name, Estimated, Exact string
}

type entView struct {
	Window            string
	Remaining, Limit  string // "" when unknown
	Used              string
	ResetsAt, ResetIn string
	Runway            *runwayView
}

// runwayView is the runway line: what is left, when it runs out at the
// recent pace (or that it lasts until the reset), and that pace.
type runwayView struct {
	Left, Phrase, PerHour string
	Before                bool
}

func view(s spend.Summary) spendView {
	v := spendView{Zone: s.Location.String(), Billed: s.Today.Billed != nil, Chart: chart(s), More: s.MoreRepositories}
	for _, p := range []struct {
		id, name, from string
		a              spend.Amount
	}{
		{"spend-today", "Today", s.TodayDate, s.Today},
		{"spend-7d", "Last 7 days", s.Last7From, s.Last7},
		{"spend-month", "This month", s.MonthFrom, s.Month},
	} {
		sp := spendPeriod{ID: p.id, Name: p.name, From: p.from, Estimated: money(p.a.Estimated), EstimatedExact: exactUSD(p.a.Estimated)}
		if p.a.Billed != nil {
			sp.Billed, sp.BilledExact = money(*p.a.Billed), exactUSD(*p.a.Billed)
		}
		v.Periods = append(v.Periods, sp)
	}
	for _, r := range s.Repositories {
		name := r.Name
		if name == "" {
			name = "(no repository)"
		}
		v.Repos = append(v.Repos, spendRepo{Name: name, Estimated: money(r.Estimated), Exact: exactUSD(r.Estimated)})
	}
	if s.Undated > 0 {
		v.Undated = money(s.Undated)
	}
	if s.CoarsenedFrom != "" {
		v.Coarse = &coarseView{From: s.CoarsenedFrom, To: s.CoarsenedTo, Inexact: len(s.InexactDays)}
		if n := len(s.InexactDays); n > 0 {
			v.Coarse.First, v.Coarse.Last = s.InexactDays[0], s.InexactDays[n-1]
		}
	}
	if e := s.Entitlement; e != nil {
		ev := &entView{Window: e.Window}
		if e.RemainingUSD != nil {
			ev.Remaining = formatUSD(e.RemainingUSD)
		}
		if e.LimitUSD != nil {
			ev.Limit = formatUSD(e.LimitUSD)
		}
		if e.UsedRatio != nil {
			ev.Used = formatPercent(*e.UsedRatio)
		}
		if !e.ResetsAt.IsZero() {
			ev.ResetsAt = e.ResetsAt.In(s.Location).Format("2006-01-02 15:04 MST")
			ev.ResetIn = spend.Until(e.ResetsAt, s.Now)
		}
		if r, ok := s.Runway(); ok {
			ev.Runway = &runwayView{Left: formatUSD(&r.RemainingUSD), Phrase: r.Phrase(s.Now), PerHour: formatUSD(&r.PerHour), Before: r.BeforeReset()}
		}
		v.Ent = ev
	}
	return v
}

func formatPercent(r float64) string {
	v := r * 100
	return groupThousands(trimZero(v)) + "%"
}

func trimZero(v float64) string {
	s := formatFloat1(v)
	if len(s) > 2 && s[len(s)-2:] == ".0" {
		return s[:len(s)-2]
	}
	return s
}

var spendSection = chartTemplate(template.New("spend").Funcs(template.FuncMap{})).New("section")

func init() {
	template.Must(spendSection.Parse(`<h3>Spend</h3>
<table class="spend">
<thead><tr><th>Period</th><th>Since</th><th>Estimated USD</th>{{if .Billed}}<th>Billed USD</th>{{end}}</tr></thead>
<tbody>
{{- range .Periods}}
<tr><th>{{.Name}}</th><td>{{.From}}</td><td class="num" id="{{.ID}}" data-usd="{{.EstimatedExact}}">{{.Estimated}}</td>{{if $.Billed}}<td class="num" data-usd="{{.BilledExact}}">{{.Billed}}</td>{{end}}</tr>
{{- end}}
</tbody>
</table>
{{- with .Ent}}
<p id="spend-entitlement">Amp entitlement{{if .Window}} ({{.Window}} window){{end}}:
{{- if .Remaining}} <strong>{{.Remaining}} left</strong>{{if .Limit}} of {{.Limit}}{{end}}{{else if .Used}} {{.Used}} used{{else}} not known yet{{end}}
{{- if .ResetsAt}}; resets {{.ResetsAt}} (in {{.ResetIn}}){{end}}.</p>
{{- with .Runway}}
<p id="spend-runway">{{.Left}} left · {{if .Before}}<strong>{{.Phrase}}</strong>{{else}}{{.Phrase}}{{end}} ({{.PerHour}}/h: the lower of the last 15 minutes' and the last 6 hours' spend, billed where known).</p>
{{- end}}
{{- end}}
<figure>
{{template "chart" .Chart}}
</figure>
{{- if .Repos}}
<table class="spend" id="spend-repositories">
<thead><tr><th>Repository (this month)</th><th>Estimated USD</th></tr></thead>
<tbody>
{{- range .Repos}}
<tr><td>{{.Name}}</td><td class="num" data-usd="{{.Exact}}">{{.Estimated}}</td></tr>
{{- end}}
</tbody>
</table>
{{- if .More}}<p class="note">and {{.More}} more.</p>{{end}}
{{- end}}
<p class="note">From the usage ledger: days in {{.Zone}} (ledger.timezone). Estimated: tokens times list prices.
{{- if .Billed}} Billed: what the Amp server bills for each thread and day.{{end}}
{{- if .Undated}} {{.Undated}} of usage carries no time and is in no period.{{end}}
{{- with .Coarse}} <span id="spend-coarsened">Long threads keep only hourly or daily detail of their oldest days, between {{.From}} and {{.To}}: their days in {{$.Zone}} stay exact
{{- if .Inexact}}, but for {{.Inexact}} day{{if gt .Inexact 1}}s{{end}} between {{.First}} and {{.Last}}, coarsened in the days of another zone before ledger.timezone changed, whose spend may be off{{end}}.</span>{{end}}</p>
`))
}

// renderSpend writes the spend section.
func renderSpend(w io.Writer, s spend.Summary) error {
	return spendSection.Execute(w, view(s))
}
