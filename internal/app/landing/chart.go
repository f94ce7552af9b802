package landing

import (
	"fmt"
	"html/template"
	"math"
	"strconv"
	"strings"

	"github.com/amp-exporter/amp-exporter/internal/spend"
)

// The chart's geometry, in SVG user units (the SVG scales to the page's
// width, keeping its aspect).
const (
	chartWidth  = 720
	chartHeight = 220
	chartLeft   = 60 // room for the dollar axis
	chartRight  = 8
	chartTop    = 10
	chartBottom = 24 // room for the dates
	chartTicks  = 4
)

// palette holds the series' colors (Okabe and Ito's, told apart with
// the common color vision deficiencies), the last one for OtherModels.
var palette = []string{"#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9"}

const otherColor = "#999999"

// chartCSS colors the series: class sN is the Nth model's, so that the
// bars and the legend agree and no color comes from data.
func chartCSS() string {
	s := "svg.spend { width: 100%; max-width: 720px; height: auto; }\n" +
		"svg.spend text { font: 11px sans-serif; fill: #555; }\n" +
		"svg.spend line { stroke: #ddd; }\n" +
		".legend { list-style: none; padding: 0; margin: 0.3em 0; }\n" +
		".legend li { display: inline-block; margin-right: 1em; }\n" +
		".legend .key { display: inline-block; width: 0.8em; height: 0.8em; margin-right: 0.3em; vertical-align: baseline; }\n"
	for i, c := range append(palette, otherColor) {
		s += fmt.Sprintf(".s%d { fill: %s; background: %s; }\n", i, c, c)
	}
	return s
}

// chartData is what the chart template draws.
type chartData struct {
	Width, Height int
	Title, Desc   string
	Ticks         []chartTick
	Days          []chartDay
	Models        []chartModel
	// Left, Base and PlotWidth place the axis lines.
	Left, Right, Base, Top int
}

type chartTick struct {
	Y     string
	Label string
}

type chartDay struct {
	Date string
	// USD is the day's estimated cost, exact (data-usd).
	USD    string
	Tokens int64
	Title  string
	Label  string // a date under every 7th bar, "" under the others
	LabelX string
	Bars   []chartBar
}

type chartBar struct {
	X, Y, W, H string
	Class      string
	Title      string
}

type chartModel struct {
	Name  string
	Class string
}

// seriesClass is the class of the jth model.
func seriesClass(s spend.Summary, j int) string {
	if s.Models[j] == spend.OtherModels && j == len(s.Models)-1 && len(s.Models) > spend.MaxChartModels {
		return fmt.Sprintf("s%d", len(palette))
	}
	return fmt.Sprintf("s%d", j%len(palette))
}

// niceCeil is the smallest 1, 2, 2.5 or 5 times a power of ten at least v
// (the axis' top; 1 for nothing spent).
func niceCeil(v float64) float64 {
	if v <= 0 {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(v)))
	for _, m := range []float64{1, 2, 2.5, 5, 10} {
		if m*p >= v*(1-1e-12) {
			return m * p
		}
	}
	return 10 * p
}

// axisUSD labels the dollar axis, without cents when there are none.
func axisUSD(v float64) string {
	return strings.TrimSuffix(formatUSD(&v), ".00")
}

func unit(v float64) string { return strconv.FormatFloat(v, 'f', 1, 64) }

// exactUSD writes fixed-point dollars in full (for data-usd).
func exactUSD(v int64) string { return strconv.FormatFloat(spend.USD(v), 'f', -1, 64) }

func money(v int64) string {
	d := spend.USD(v)
	return formatUSD(&d)
}

// chart lays the summary's days out as stacked bars.
func chart(s spend.Summary) chartData {
	c := chartData{Width: chartWidth, Height: chartHeight, Left: chartLeft, Right: chartWidth - chartRight,
		Base: chartHeight - chartBottom, Top: chartTop,
		Title: "Estimated spend per day, last " + strconv.Itoa(len(s.Days)) + " days, by model",
		Desc:  "Days in " + s.Location.String() + ". Each bar is one day; its parts are the models, in the legend's order from the bottom.",
	}
	var top float64
	for _, d := range s.Days {
		top = max(top, spend.USD(d.Estimated))
	}
	top = niceCeil(top)
	plotH := float64(c.Base - c.Top)
	for i := 0; i <= chartTicks; i++ {
		v := top * float64(i) / chartTicks
		c.Ticks = append(c.Ticks, chartTick{Y: unit(float64(c.Base) - plotH*float64(i)/chartTicks), Label: axisUSD(v)})
	}
	for j, name := range s.Models {
		c.Models = append(c.Models, chartModel{Name: name, Class: seriesClass(s, j)})
	}
	slot := float64(c.Right-c.Left) / float64(len(s.Days))
	barW := slot * 0.7
	for i, d := range s.Days {
		x := float64(c.Left) + slot*float64(i) + (slot-barW)/2
		cd := chartDay{Date: d.Date, USD: exactUSD(d.Estimated), Tokens: d.Tokens, Title: d.Date + ": " + money(d.Estimated) + " estimated"}
		if d.Billed != nil {
			cd.Title += ", " + money(*d.Billed) + " billed"
		}
		tokens := float64(d.Tokens)
		cd.Title += "; " + formatNumber(&tokens) + " tokens"
		if (len(s.Days)-1-i)%7 == 0 {
			cd.Label = d.Start.Format("Jan 2")
			cd.LabelX = unit(x + barW/2)
		}
		y := float64(c.Base)
		for j, v := range d.Models {
			if v <= 0 {
				continue
			}
			h := plotH * spend.USD(v) / top
			y -= h
			cd.Bars = append(cd.Bars, chartBar{X: unit(x), Y: unit(y), W: unit(barW), H: unit(h), Class: c.Models[j].Class,
				Title: d.Date + ", " + s.Models[j] + ": " + money(v)})
		}
		c.Days = append(c.Days, cd)
	}
	return c
}

// chartSVG draws the chart: no script, no external reference; every text
// from data (model names) is escaped by html/template.
const chartSVG = `{{define "chart"}}<svg class="spend" xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {{.Width}} {{.Height}}" role="img" aria-labelledby="spend-chart-title spend-chart-desc">
<title id="spend-chart-title">{{.Title}}</title>
<desc id="spend-chart-desc">{{.Desc}}</desc>
{{- range .Ticks}}
<line x1="{{$.Left}}" x2="{{$.Right}}" y1="{{.Y}}" y2="{{.Y}}"/><text x="{{$.Left}}" y="{{.Y}}" dx="-4" dy="4" text-anchor="end">{{.Label}}</text>
{{- end}}
{{- range .Days}}
<g class="day" data-date="{{.Date}}" data-usd="{{.USD}}" data-tokens="{{.Tokens}}"><title>{{.Title}}</title>
{{- range .Bars}}<rect class="{{.Class}}" x="{{.X}}" y="{{.Y}}" width="{{.W}}" height="{{.H}}"><title>{{.Title}}</title></rect>{{end -}}
</g>
{{- if .Label}}<text x="{{.LabelX}}" y="{{$.Height}}" dy="-6" text-anchor="middle">{{.Label}}</text>{{end}}
{{- end}}
</svg>
{{- if .Models}}
<ul class="legend">{{range .Models}}<li><span class="key {{.Class}}"></span>{{.Name}}</li>{{end}}</ul>
{{- end}}{{end}}`

// chartTemplate parses chartSVG into t.
func chartTemplate(t *template.Template) *template.Template {
	return template.Must(t.Parse(chartSVG))
}

func formatFloat1(v float64) string { return strconv.FormatFloat(v, 'f', 1, 64) }
