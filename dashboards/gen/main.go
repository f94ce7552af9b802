// Command gen writes amp-exporter's Grafana dashboards (dashboards/*.json)
// and the list of their queries (dashboards/queries.txt).
//
//	go -C dashboards/gen run . -out ..     # from the repository root
//	cd dashboards/gen && go run . -out ..
//
// (This is a module of its own, so "go run ./dashboards/gen" from the root
// module does not find it; "go -C" runs it from its directory.)
//
// The JSON is committed; dashboards_test.go regenerates it and fails when
// the committed files differ, so edit this program, never the JSON. The
// end-to-end tests run every line of queries.txt against a real Prometheus.
//
// Conventions: every selector carries job=~"$job",instance=~"$instance"
// (and upstream=~"$upstream" on the Amy dashboard); rates run over
// $__rate_interval; events are shown per minute (unit cpm), dollars per
// hour; every panel has a unit and a description; the datasource is always
// the ${datasource} variable.
//
// "Today" and "this month": a stat panel whose relative time is "now/d"
// (or "now/M") runs a range query from midnight (the first of the month) in
// the dashboard's time zone to now, of
//
//	sum(((c - last_over_time(c[1d] @ start())) >= 0) or c)
//
// for a counter c: each series' value now less its value at the start of
// the range; series born since count whole, a series that went down (a
// reset) counts from zero, series gone since count nothing. The stat shows
// the last point. Unlike increase(c[$__range]) it needs no $__range (it is
// the same whatever the time picker says), counts a new model's first
// dollars, and does not extrapolate; a reset loses the spend before it,
// which the exporter's continuous counters make rare.
package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"

	"github.com/grafana/grafana-foundation-sdk/go/cog"
	"github.com/grafana/grafana-foundation-sdk/go/cog/variants"
	"github.com/grafana/grafana-foundation-sdk/go/common"
	"github.com/grafana/grafana-foundation-sdk/go/dashboard"
	"github.com/grafana/grafana-foundation-sdk/go/prometheus"
	"github.com/grafana/grafana-foundation-sdk/go/stat"
	"github.com/grafana/grafana-foundation-sdk/go/table"
	"github.com/grafana/grafana-foundation-sdk/go/timeseries"
)

// Dashboard uids: links, provisioning and the Helm chart's ConfigMaps rely
// on them, so they never change.
const (
	UIDOverview = "amp-overview"
	UIDAmy      = "amy"
	UIDHealth   = "amp-exporter-health"
)

// Files maps each dashboard uid to the file it is written to, under the
// output directory.
var Files = map[string]string{
	UIDOverview: "amp-overview.json",
	UIDAmy:      "amy.json",
	UIDHealth:   "amp-exporter-health.json",
}

// QueriesFile lists every panel query: uid, panel title, expr, tab-separated.
const QueriesFile = "queries.txt"

// schemaVersion is Grafana 10.4's. The SDK writes 42 (Grafana 12); 39 loads
// unchanged in Grafana 10 and is migrated forward by newer ones, none of
// whose later migrations touch what these dashboards use.
const schemaVersion = 39

// The datasource every panel and target uses: the dashboard's variable,
// never a fixed uid.
const (
	datasourceType = "prometheus"
	datasourceUID  = "${datasource}"
)

func main() {
	out := flag.String("out", "..", "directory to write the dashboards and "+QueriesFile+" into")
	flag.Parse()
	files, err := Generate()
	if err != nil {
		fmt.Fprintln(os.Stderr, "gen:", err)
		os.Exit(1)
	}
	if err := Write(*out, files); err != nil {
		fmt.Fprintln(os.Stderr, "gen:", err)
		os.Exit(1)
	}
}

// Write writes the generated files into dir.
func Write(dir string, files map[string][]byte) error {
	names := make([]string, 0, len(files))
	for name := range files {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		if err := os.WriteFile(filepath.Join(dir, name), files[name], 0o644); err != nil {
			return err
		}
	}
	return nil
}

// Generate builds every dashboard and returns the file contents by name.
func Generate() (map[string][]byte, error) {
	files := map[string][]byte{}
	var queries []string
	for _, build := range []func() *dash{overview, amy, health} {
		d := build()
		db, err := d.b.Build()
		if err != nil {
			return nil, fmt.Errorf("dashboard %s: %w", d.uid, err)
		}
		db.SchemaVersion = schemaVersion
		buf, err := marshal(db)
		if err != nil {
			return nil, fmt.Errorf("dashboard %s: %w", d.uid, err)
		}
		files[Files[d.uid]] = buf
		queries = append(queries, d.queries...)
	}
	sort.Strings(queries)
	files[QueriesFile] = []byte(strings.Join(queries, "\n") + "\n")
	return files, nil
}

// marshal encodes v as indented JSON with PromQL's <, > and & left
// readable: the SDK's own marshallers escape them, so they are unescaped
// here, and the result is checked to decode to the same value.
func marshal(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	escaped := buf.Bytes()
	out := htmlUnescaper.Replace(string(escaped))
	var a, b any
	if err := json.Unmarshal(escaped, &a); err != nil {
		return nil, err
	}
	if err := json.Unmarshal([]byte(out), &b); err != nil {
		return nil, err
	}
	if !reflect.DeepEqual(a, b) {
		return nil, fmt.Errorf("unescaping <, >, & changed the JSON")
	}
	return []byte(out), nil
}

var htmlUnescaper = strings.NewReplacer(`\u003c`, "<", `\u003e`, ">", `\u0026`, "&")

// dash is a dashboard under construction.
//
// The SDK marks its v1 dashboard deprecated in favour of dashboardv2, the
// schema of Grafana 12; Grafana 10 and 11 load only v1.
type dash struct {
	uid string
	//lint:ignore SA1019 v1 is the schema Grafana 10 and 11 load.
	b       *dashboard.DashboardBuilder
	filter  string // what "$F" in an expression stands for
	nextID  uint32
	queries []string
}

// Variable filters every selector carries: "$F" in an expression is
// replaced by the dashboard's filter.
const (
	commonFilter = `job=~"$job",instance=~"$instance",user=~"$user",host=~"$host"`
	amyFilter    = commonFilter + `,upstream=~"$upstream"`
)

func newDash(uid, title, description, filter string) *dash {
	//lint:ignore SA1019 v1 is the schema Grafana 10 and 11 load.
	b := dashboard.NewDashboardBuilder(title).
		Uid(uid).
		Description(description).
		Tags([]string{"amp-exporter"}).
		Editable().
		Tooltip(dashboard.DashboardCursorSyncCrosshair).
		Refresh("1m").
		Time("now-24h", "now").
		Timezone("browser").
		WithVariable(dashboard.NewDatasourceVariableBuilder("datasource").
			Label("Data source").
			Type(datasourceType)).
		WithVariable(dashboard.NewQueryVariableBuilder("job").
			Label("job").
			Datasource(dsRef()).
			Query(dashboard.StringOrMap{String: cog.ToPtr(`label_values(amp_exporter_build_info, job)`)}).
			Definition(`label_values(amp_exporter_build_info, job)`).
			Refresh(dashboard.VariableRefreshOnTimeRangeChanged).
			Sort(dashboard.VariableSortAlphabeticalAsc).
			Multi(true).
			IncludeAll(true).
			AllValue(".*").
			Current(allOption())).
		WithVariable(dashboard.NewQueryVariableBuilder("instance").
			Label("instance").
			Datasource(dsRef()).
			Query(dashboard.StringOrMap{String: cog.ToPtr(`label_values(amp_exporter_build_info{job=~"$job"}, instance)`)}).
			Definition(`label_values(amp_exporter_build_info{job=~"$job"}, instance)`).
			Refresh(dashboard.VariableRefreshOnTimeRangeChanged).
			Sort(dashboard.VariableSortAlphabeticalAsc).
			Multi(true).
			IncludeAll(true).
			AllValue(".*").
			Current(allOption()))
	fleetVariables(b)
	return &dash{uid: uid, b: b, filter: filter}
}

func allOption() dashboard.VariableOption {
	return dashboard.VariableOption{
		Selected: cog.ToPtr(true),
		Text:     dashboard.StringOrArrayOfString{String: cog.ToPtr("All")},
		Value:    dashboard.StringOrArrayOfString{String: cog.ToPtr("$__all")},
	}
}

func dsRef() common.DataSourceRef {
	return common.DataSourceRef{Type: cog.ToPtr(datasourceType), Uid: cog.ToPtr(datasourceUID)}
}

func (d *dash) id() uint32 {
	d.nextID++
	return d.nextID
}

func (d *dash) row(title string) {
	d.b.WithRow(dashboard.NewRowBuilder(title).Id(d.id()))
}

// add places a panel; panels fill rows of 24 columns left to right.
func (d *dash) add(p cog.Builder[dashboard.Panel]) { d.b.WithPanel(p) }

// target is one query of a panel. "$F" in expr stands for the dashboard's
// variable filter.
type target struct {
	expr   string
	legend string
}

func t(expr, legend string) target { return target{expr: expr, legend: legend} }

type queryKind int

const (
	rangeQuery queryKind = iota
	instantQuery
	tableQuery
)

// targets builds a panel's queries and records them for queries.txt.
func (d *dash) targets(title string, kind queryKind, ts []target) []cog.Builder[variants.Dataquery] {
	out := make([]cog.Builder[variants.Dataquery], 0, len(ts))
	for i, tg := range ts {
		expr := strings.ReplaceAll(tg.expr, "$F", d.filter)
		q := prometheus.NewDataqueryBuilder().
			Datasource(dsRef()).
			RefId(string(rune('A' + i))).
			Expr(expr).
			EditorMode(prometheus.QueryEditorModeCode)
		switch kind {
		case rangeQuery:
			q.Range()
		case instantQuery:
			q.Instant()
		case tableQuery:
			q.Instant().Format(prometheus.PromQueryFormatTable)
		}
		if tg.legend != "" {
			q.LegendFormat(tg.legend)
		} else if kind != tableQuery {
			q.LegendFormat("__auto")
		}
		out = append(out, q)
		d.queries = append(d.queries, d.uid+"\t"+title+"\t"+expr)
	}
	return out
}

// timeseries is a line chart, half the width, with a table legend.
func (d *dash) timeseries(title, description, unit string, ts ...target) *timeseries.PanelBuilder {
	return timeseries.NewPanelBuilder().
		Id(d.id()).
		Title(title).
		Description(description).
		Datasource(dsRef()).
		Unit(unit).
		Span(12).
		Height(8).
		Targets(d.targets(title, rangeQuery, ts)).
		FillOpacity(10).
		ShowPoints(common.VisibilityModeNever).
		Legend(common.NewVizLegendOptionsBuilder().
			ShowLegend(true).
			DisplayMode(common.LegendDisplayModeTable).
			Placement(common.LegendPlacementBottom).
			Calcs([]string{"mean", "max", "lastNotNull"})).
		Tooltip(common.NewVizTooltipOptionsBuilder().
			Mode(common.TooltipDisplayModeMulti).
			Sort(common.SortOrderDescending))
}

// stacked is a timeseries whose series stack (parts of a whole).
func (d *dash) stacked(title, description, unit string, ts ...target) *timeseries.PanelBuilder {
	return d.timeseries(title, description, unit, ts...).
		FillOpacity(60).
		LineWidth(1).
		Stacking(common.NewStackingConfigBuilder().Mode(common.StackingModeNormal))
}

// ratio is a timeseries of 0–1 ratios.
func (d *dash) ratio(title, description string, ts ...target) *timeseries.PanelBuilder {
	return d.timeseries(title, description, "percentunit", ts...).Min(0).Max(1)
}

// stat shows one number per series, a quarter of the width. Its queries
// are instant: only the newest value is shown.
func (d *dash) stat(title, description, unit string, ts ...target) *stat.PanelBuilder {
	return d.statPanel(title, description, unit, instantQuery, ts)
}

func (d *dash) statPanel(title, description, unit string, kind queryKind, ts []target) *stat.PanelBuilder {
	return stat.NewPanelBuilder().
		Id(d.id()).
		Title(title).
		Description(description).
		Datasource(dsRef()).
		Unit(unit).
		Span(6).
		Height(4).
		Targets(d.targets(title, kind, ts)).
		GraphMode(common.BigValueGraphModeNone).
		Orientation(common.VizOrientationAuto).
		ColorMode(common.BigValueColorModeValue).
		TextMode(common.BigValueTextModeAuto).
		ReduceOptions(common.NewReduceDataOptionsBuilder().Calcs([]string{"lastNotNull"})).
		Thresholds(thresholds("green"))
}

// sinceStart is the increase of a counter since the start of the panel's
// time range, summed: each series' value now, less its last value at the
// start (from the day before it, so a short scrape gap at midnight does not
// matter). A series born since counts whole; a series that went down (a
// reset) counts from zero. It needs a range query: start() is the query's
// start, which the panel's relative-time override ("now/d", "now/M") pins
// to midnight or the first of the month.
func sinceStart(metric string) string {
	if fleetCounted[metric] {
		return fleetSum("", func(m string) string {
			s := metric + "{$F" + m + "}"
			return fmt.Sprintf(`((%s - last_over_time(%s[1d] @ start())) >= 0) or %s`, s, s, s)
		})
	}
	s := metric + "{$F}"
	return fmt.Sprintf(`sum(((%s - last_over_time(%s[1d] @ start())) >= 0) or %s)`, s, s, s)
}

// sinceStartStat shows sinceStart(metric) over the calendar period that
// timeFrom names ("now/d": today so far, "now/M": this month so far).
func (d *dash) sinceStartStat(title, description, unit, metric, timeFrom string) *stat.PanelBuilder {
	return d.statPanel(title, description, unit, rangeQuery, []target{t(sinceStart(metric), title)}).
		TimeFrom(timeFrom).
		HideTimeOverride(false).
		// The query's start is aligned down to a multiple of its step:
		// many points keep the step, and so that error, small (≤ 5 min for
		// a month). The expression is cheap per point.
		MaxDataPoints(10000)
}

// table shows instant label sets (info metrics), half the width.
func (d *dash) table(title, description string, hide []string, ts ...target) *table.PanelBuilder {
	exclude := map[string]any{"Time": true, "Value": true, "__name__": true}
	for _, h := range hide {
		exclude[h] = true
	}
	return table.NewPanelBuilder().
		Id(d.id()).
		Title(title).
		Description(description).
		Datasource(dsRef()).
		Unit("none").
		Span(12).
		Height(6).
		Targets(d.targets(title, tableQuery, ts)).
		// The SDK's default footer has a null reducer, which its own
		// schema rejects.
		Footer(common.NewTableFooterOptionsBuilder().Show(false).Reducer([]string{"sum"})).
		WithTransformation(dashboard.DataTransformerConfig{
			Id:      "organize",
			Options: map[string]any{"excludeByName": exclude},
		})
}

func thresholds(base string, steps ...dashboard.Threshold) cog.Builder[dashboard.ThresholdsConfig] {
	return dashboard.NewThresholdsConfigBuilder().
		Mode(dashboard.ThresholdsModeAbsolute).
		Steps(append([]dashboard.Threshold{{Value: nil, Color: base}}, steps...))
}

func step(v float64, color string) dashboard.Threshold {
	return dashboard.Threshold{Value: cog.ToPtr(v), Color: color}
}

// valueText maps exact values to a text and a colour.
func valueText(pairs ...string) []dashboard.ValueMapping {
	opts := map[string]dashboard.ValueMappingResult{}
	for i := 0; i+2 < len(pairs); i += 3 {
		opts[pairs[i]] = dashboard.ValueMappingResult{
			Text:  cog.ToPtr(pairs[i+1]),
			Color: cog.ToPtr(pairs[i+2]),
			Index: cog.ToPtr(int32(i / 3)),
		}
	}
	return []dashboard.ValueMapping{{ValueMap: &dashboard.ValueMap{Type: dashboard.MappingTypeValueToText, Options: opts}}}
}

// Percentiles shown for histograms.
var quantiles = []struct {
	q    string
	name string
}{{"0.5", "p50"}, {"0.9", "p90"}, {"0.99", "p99"}}

// percentiles returns p50, p90 and p99 targets of a histogram, grouped by
// the given labels (besides le); extraMatchers follow "$F" in the _bucket
// selector.
func percentiles(metric, by, extraMatchers string) []target {
	group := "le"
	legendBy := ""
	if by != "" {
		group = "le, " + by
		for _, l := range strings.Split(by, ", ") {
			legendBy += " {{" + l + "}}"
		}
	}
	var out []target
	for _, q := range quantiles {
		out = append(out, t(
			fmt.Sprintf(`histogram_quantile(%s, sum by (%s) (rate(%s_bucket{$F%s}[$__rate_interval])))`, q.q, group, metric, extraMatchers),
			q.name+legendBy))
	}
	return out
}
