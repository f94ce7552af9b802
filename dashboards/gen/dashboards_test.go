package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/grafana/grafana-foundation-sdk/go/cog"
	"github.com/grafana/grafana-foundation-sdk/go/cog/plugins"
	"github.com/grafana/grafana-foundation-sdk/go/dashboard"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql/parser"
)

// committedDir holds the committed dashboards and queries.txt.
const committedDir = ".."

const regenerate = "regenerate with: go -C dashboards/gen run . -out .."

func readCommitted(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(committedDir, name))
	if err != nil {
		t.Fatalf("%v (%s)", err, regenerate)
	}
	return b
}

// (a) The committed files are exactly what the generator writes.
func TestCommittedFilesAreGenerated(t *testing.T) {
	files, err := Generate()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := Write(dir, files); err != nil {
		t.Fatal(err)
	}
	for name := range files {
		fresh, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(fresh, readCommitted(t, name)) {
			t.Errorf("dashboards/%s differs from the generator's output: %s", name, regenerate)
		}
	}
	// No dashboard in the directory that the generator does not write.
	committed, err := filepath.Glob(filepath.Join(committedDir, "*.json"))
	if err != nil {
		t.Fatal(err)
	}
	for _, path := range committed {
		if _, ok := files[filepath.Base(path)]; !ok {
			t.Errorf("dashboards/%s is not generated: add it to the generator or remove it", filepath.Base(path))
		}
	}
	if len(Files) != 3 {
		t.Errorf("expected 3 dashboards, the generator has %d", len(Files))
	}
}

// (b) Each committed dashboard decodes strictly into the Grafana schema
// (unknown or mistyped fields, panel options and Prometheus targets).
func TestDashboardsValidateStrictly(t *testing.T) {
	plugins.RegisterDefaultPlugins()
	for uid, name := range Files {
		t.Run(uid, func(t *testing.T) {
			if errs := strictErrors(readCommitted(t, name)); len(errs) > 0 {
				t.Errorf("%s: %d schema errors:\n%s", name, len(errs), strings.Join(errs, "\n"))
			}
		})
	}
}

// strictErrors returns what UnmarshalJSONStrict finds wrong. It returns a
// typed-nil cog.BuildErrors on success, so the error is never nil.
func strictErrors(raw []byte) []string {
	//lint:ignore SA1019 v1 is the schema Grafana 10 and 11 load.
	var db dashboard.Dashboard
	err := db.UnmarshalJSONStrict(raw)
	if err == nil {
		return nil
	}
	var be cog.BuildErrors
	if !errors.As(err, &be) {
		return []string{err.Error()}
	}
	var out []string
	for _, e := range be {
		out = append(out, e.Error())
	}
	return out
}

// The strict check is live: a misspelt panel field, panel option, target
// field and a mistyped custom field config are each reported. (Unknown
// keys in fieldConfig.defaults itself are not.)
func TestStrictValidationCatchesMistakes(t *testing.T) {
	plugins.RegisterDefaultPlugins()
	raw := readCommitted(t, Files[UIDOverview])
	for name, mutate := range map[string]func(p map[string]any){
		"option": func(p map[string]any) { p["options"].(map[string]any)["legendd"] = true },
		"panel":  func(p map[string]any) { p["descriptionn"] = "x" },
		"custom": func(p map[string]any) {
			p["fieldConfig"].(map[string]any)["defaults"].(map[string]any)["custom"].(map[string]any)["fillOpacity"] = "x"
		},
		"target": func(p map[string]any) { p["targets"].([]any)[0].(map[string]any)["exprr"] = "up" },
	} {
		t.Run(name, func(t *testing.T) {
			var d map[string]any
			if err := json.Unmarshal(raw, &d); err != nil {
				t.Fatal(err)
			}
			for _, p := range d["panels"].([]any) {
				if p.(map[string]any)["type"] == "timeseries" {
					mutate(p.(map[string]any))
					break
				}
			}
			broken, err := json.Marshal(d)
			if err != nil {
				t.Fatal(err)
			}
			if len(strictErrors(broken)) == 0 {
				t.Error("strict validation accepted a broken dashboard")
			}
		})
	}
}

// The shape read with plain encoding/json: the strictly decoded struct has
// no panels to walk.
type dsJSON struct {
	Type string `json:"type"`
	UID  string `json:"uid"`
}

type targetJSON struct {
	Datasource *dsJSON `json:"datasource"`
	Expr       string  `json:"expr"`
	RefID      string  `json:"refId"`
}

type panelJSON struct {
	ID          int          `json:"id"`
	Type        string       `json:"type"`
	Title       string       `json:"title"`
	Description string       `json:"description"`
	Collapsed   bool         `json:"collapsed"`
	Datasource  *dsJSON      `json:"datasource"`
	Targets     []targetJSON `json:"targets"`
	Panels      []panelJSON  `json:"panels"`
	GridPos     struct {
		H, W, X, Y int
	} `json:"gridPos"`
	FieldConfig struct {
		Defaults struct {
			Unit string `json:"unit"`
		} `json:"defaults"`
	} `json:"fieldConfig"`
}

type variableJSON struct {
	Type       string  `json:"type"`
	Name       string  `json:"name"`
	Query      any     `json:"query"`
	Datasource *dsJSON `json:"datasource"`
	Multi      bool    `json:"multi"`
	IncludeAll bool    `json:"includeAll"`
}

type dashJSON struct {
	UID        string      `json:"uid"`
	Title      string      `json:"title"`
	Tags       []string    `json:"tags"`
	Panels     []panelJSON `json:"panels"`
	Templating struct {
		List []variableJSON `json:"list"`
	} `json:"templating"`
}

func loadDashboard(t *testing.T, uid string) dashJSON {
	t.Helper()
	var d dashJSON
	if err := json.Unmarshal(readCommitted(t, Files[uid]), &d); err != nil {
		t.Fatalf("%s: %v", Files[uid], err)
	}
	return d
}

// panels returns every panel that is not a row, rows' nested ones too.
func (d dashJSON) panels() []panelJSON {
	var out []panelJSON
	var walk func([]panelJSON)
	walk = func(ps []panelJSON) {
		for _, p := range ps {
			if p.Type == "row" {
				walk(p.Panels)
				continue
			}
			out = append(out, p)
		}
	}
	walk(d.Panels)
	return out
}

// filters are the variable matchers every selector of a dashboard carries.
func filters(uid string) []string {
	f := []string{`job=~"$job"`, `instance=~"$instance"`, `user=~"$user"`, `host=~"$host"`}
	if uid == UIDAmy {
		f = append(f, `upstream=~"$upstream"`)
	}
	return f
}

// (c) Every panel and target, read with plain encoding/json.
func TestPanelsAndTargets(t *testing.T) {
	for uid := range Files {
		t.Run(uid, func(t *testing.T) {
			d := loadDashboard(t, uid)
			if d.UID != uid {
				t.Errorf("uid %q, want %q", d.UID, uid)
			}
			if !contains(d.Tags, "amp-exporter") {
				t.Errorf("tags %v lack amp-exporter", d.Tags)
			}
			checkVariables(t, uid, d.Templating.List)
			ids := map[int]bool{}
			titles := map[string]bool{}
			var grid [][24]bool
			for _, p := range d.Panels {
				if p.ID == 0 || ids[p.ID] {
					t.Errorf("panel %q: id %d missing or repeated", p.Title, p.ID)
				}
				ids[p.ID] = true
				if p.Type == "row" && (p.Collapsed || len(p.Targets) > 0) {
					t.Errorf("row %q: collapsed or with targets", p.Title)
				}
				// Within the 24 columns, overlapping nothing.
				g := p.GridPos
				if g.W <= 0 || g.H <= 0 || g.X < 0 || g.X+g.W > 24 {
					t.Errorf("panel %q: gridPos %+v outside the grid", p.Title, g)
					continue
				}
				for y := g.Y; y < g.Y+g.H; y++ {
					for len(grid) <= y {
						grid = append(grid, [24]bool{})
					}
					for x := g.X; x < g.X+g.W; x++ {
						if grid[y][x] {
							t.Errorf("panel %q overlaps another at (%d,%d)", p.Title, x, y)
						}
						grid[y][x] = true
					}
				}
			}
			ps := d.panels()
			if len(ps) < 10 {
				t.Errorf("only %d panels", len(ps))
			}
			for _, p := range ps {
				if titles[p.Title] {
					t.Errorf("panel title %q repeated (queries.txt is keyed by title)", p.Title)
				}
				titles[p.Title] = true
				if strings.TrimSpace(p.Description) == "" {
					t.Errorf("panel %q has no description", p.Title)
				}
				if p.FieldConfig.Defaults.Unit == "" {
					t.Errorf("panel %q has no unit (fieldConfig.defaults.unit)", p.Title)
				}
				checkDatasource(t, "panel "+p.Title, p.Datasource)
				if len(p.Targets) == 0 {
					t.Errorf("panel %q has no targets", p.Title)
				}
				for _, tg := range p.Targets {
					what := fmt.Sprintf("panel %q target %s", p.Title, tg.RefID)
					checkDatasource(t, what, tg.Datasource)
					for _, f := range filters(uid) {
						if !strings.Contains(tg.Expr, f) {
							t.Errorf("%s: expr lacks %s: %s", what, f, tg.Expr)
						}
					}
				}
			}
		})
	}
}

func checkDatasource(t *testing.T, what string, ds *dsJSON) {
	t.Helper()
	if ds == nil || ds.UID != "${datasource}" || ds.Type != "prometheus" {
		t.Errorf("%s: datasource %+v, want {prometheus ${datasource}}", what, ds)
	}
}

func checkVariables(t *testing.T, uid string, vars []variableJSON) {
	t.Helper()
	want := []string{"datasource", "job", "instance", "user", "host"}
	if uid == UIDAmy {
		want = append(want, "upstream")
	}
	var got []string
	byName := map[string]variableJSON{}
	for _, v := range vars {
		got = append(got, v.Name)
		byName[v.Name] = v
	}
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("variables %v, want %v", got, want)
	}
	if v := byName["datasource"]; v.Type != "datasource" || v.Query != "prometheus" {
		t.Errorf("variable datasource: type %q query %v, want datasource/prometheus", v.Type, v.Query)
	}
	wantQuery := map[string]string{
		"job":      `label_values(amp_exporter_build_info, job)`,
		"instance": `label_values(amp_exporter_build_info{job=~"$job"}, instance)`,
		"user":     `label_values(amp_exporter_build_info{job=~"$job", instance=~"$instance"}, user)`,
		"host":     `label_values(amp_exporter_build_info{job=~"$job", instance=~"$instance", user=~"$user"}, host)`,
		"upstream": `label_values(amy_turns_started_total{job=~"$job", instance=~"$instance"}, upstream)`,
	}
	for _, name := range want[1:] {
		v := byName[name]
		if v.Type != "query" || !v.Multi || !v.IncludeAll {
			t.Errorf("variable %s: type %q multi %v includeAll %v, want a multi-value query with All", name, v.Type, v.Multi, v.IncludeAll)
		}
		if v.Query != wantQuery[name] {
			t.Errorf("variable %s: query %v, want %s", name, v.Query, wantQuery[name])
		}
		checkDatasource(t, "variable "+name, v.Datasource)
	}
}

// No datasource uid other than the variable anywhere in the JSON.
func TestNoFixedDatasourceUID(t *testing.T) {
	uidField := regexp.MustCompile(`"uid":\s*"([^"]*)"`)
	for uid, name := range Files {
		for _, m := range uidField.FindAllStringSubmatch(string(readCommitted(t, name)), -1) {
			if m[1] != uid && m[1] != "${datasource}" {
				t.Errorf("%s: fixed uid %q", name, m[1])
			}
		}
	}
}

// The durations the window variables stand for in the checks: distinct, so
// that a window's variable can be told from a fixed window.
const (
	rateIntervalStandIn = 5 * time.Minute  // $__rate_interval
	rangeStandIn        = 61 * time.Minute // $__range: tables and bars over the time range
	intervalStandIn     = 59 * time.Minute // $__interval: per-day bars
)

// Substitutions that make a dashboard expression plain PromQL ($user and
// $host take the instance value).
func substitute(expr, job, instance, upstream string) string {
	return strings.NewReplacer(
		"$__rate_interval", "5m",
		"$__range", "61m",
		"$__interval", "59m",
		"$job", job,
		"$instance", instance,
		"$user", instance,
		"$host", instance,
		"$upstream", upstream,
	).Replace(expr)
}

// The sentinels a second parse puts in place of the variables, to find
// each selector's variable matchers.
const (
	jobSentinel      = "JOB_VARIABLE"
	instanceSentinel = "INSTANCE_VARIABLE"
	upstreamSentinel = "UPSTREAM_VARIABLE"
)

// (d) Every expression parses as PromQL; every selector in it carries the
// variable filters; rates run over $__rate_interval, increases over the
// time range ($__range) or the bar's interval ($__interval), or over the
// fixed day of the calendar-period stats.
func TestExpressionsParse(t *testing.T) {
	p := parser.NewParser(parser.Options{})
	n := 0
	for uid := range Files {
		d := loadDashboard(t, uid)
		for _, panel := range d.panels() {
			for _, tg := range panel.Targets {
				n++
				what := fmt.Sprintf("%s / %q / %s", uid, panel.Title, tg.RefID)
				plain := substitute(tg.Expr, ".*", ".*", ".*")
				if strings.Contains(plain, "$") {
					t.Errorf("%s: unknown variable left in %s", what, plain)
				}
				if _, err := p.ParseExpr(plain); err != nil {
					t.Errorf("%s: %v\n%s", what, err, plain)
					continue
				}
				if strings.Contains(tg.Expr, "[5m]") {
					t.Errorf("%s: a fixed [5m] window; use $__rate_interval", what)
				}
				expr, err := p.ParseExpr(substitute(tg.Expr, jobSentinel, instanceSentinel, upstreamSentinel))
				if err != nil {
					t.Errorf("%s: %v", what, err)
					continue
				}
				checkSelectors(t, what, uid, expr, knownMetric)
			}
		}
	}
	if n == 0 {
		t.Fatal("no expressions found")
	}
	// The variables' own selectors parse too.
	for _, q := range []string{
		`amp_exporter_build_info`,
		`amp_exporter_build_info{job=~".*"}`,
		`amy_turns_started_total{job=~".*", instance=~".*"}`,
		`amp_exporter_build_info{job=~".*", instance=~".*", user=~".*"}`,
	} {
		if _, err := p.ParseExpr(q); err != nil {
			t.Errorf("variable selector %s: %v", q, err)
		}
	}
}

// checkSelectors: every selector of expr names a metric known says the
// exporter has, carries the dashboard's variable matchers, and runs over
// an allowed window.
func checkSelectors(t *testing.T, what, uid string, expr parser.Expr, known func(string) bool) {
	t.Helper()
	parser.Inspect(expr, func(node parser.Node, path []parser.Node) error {
		switch n := node.(type) {
		case *parser.VectorSelector:
			if (strings.HasPrefix(n.Name, "amp_") || strings.HasPrefix(n.Name, "amy_")) && !known(n.Name) {
				t.Errorf("%s: %s is not a metric of the exporter (collector/metrics.go)", what, n.Name)
			}
			want := map[string]string{"job": jobSentinel, "instance": instanceSentinel, "user": instanceSentinel, "host": instanceSentinel}
			if uid == UIDAmy || strings.HasPrefix(n.Name, "amy_") {
				want["upstream"] = upstreamSentinel
			}
			for _, m := range n.LabelMatchers {
				if v, ok := want[m.Name]; ok && m.Type == labels.MatchRegexp && m.Value == v {
					delete(want, m.Name)
				}
			}
			if len(want) > 0 {
				t.Errorf("%s: selector %s lacks the variable matchers for %v", what, n, keys(want))
			}
		case *parser.MatrixSelector:
			fixedDay := n.Range == 24*time.Hour && n.VectorSelector.(*parser.VectorSelector).StartOrEnd == parser.START
			switch {
			case fixedDay, n.Range == rateIntervalStandIn:
			case n.Range == rangeStandIn || n.Range == intervalStandIn:
				// Only increase() over the range or the interval: a rate
				// over it would be a fixed window in disguise.
				if call, ok := parentCall(path); !ok || call != "increase" {
					t.Errorf("%s: $__range or $__interval outside increase()", what)
				}
			default:
				t.Errorf("%s: range %s; use $__rate_interval", what, n.Range)
			}
		}
		return nil
	})
}

// parentCall names the function whose argument the last node of path is.
func parentCall(path []parser.Node) (string, bool) {
	for i := len(path) - 1; i >= 0; i-- {
		switch n := path[i].(type) {
		case *parser.Call:
			return n.Func.Name, true
		case *parser.ParenExpr:
			continue
		default:
			return "", false
		}
	}
	return "", false
}

// (e) queries.txt lists exactly the committed dashboards' targets, sorted.
func TestQueriesFile(t *testing.T) {
	var want []string
	for uid := range Files {
		for _, p := range loadDashboard(t, uid).panels() {
			for _, tg := range p.Targets {
				if strings.ContainsAny(p.Title+tg.Expr, "\t\n") {
					t.Errorf("%s / %q: a tab or newline would break queries.txt", uid, p.Title)
				}
				want = append(want, uid+"\t"+p.Title+"\t"+tg.Expr)
			}
		}
	}
	sort.Strings(want)
	got := strings.Split(strings.TrimSuffix(string(readCommitted(t, QueriesFile)), "\n"), "\n")
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("dashboards/%s does not list the dashboards' queries: %s", QueriesFile, regenerate)
	}
	if !sort.StringsAreSorted(got) {
		t.Errorf("dashboards/%s is not sorted", QueriesFile)
	}
}

// knownMetric reports whether name is a series name of the exporter's
// metrics: a family, or a histogram's _bucket, _sum or _count.
func knownMetric(name string) bool {
	if _, ok := metricTypes[name]; ok {
		return true
	}
	for _, suffix := range []string{"_bucket", "_sum", "_count"} {
		if base, ok := strings.CutSuffix(name, suffix); ok && metricTypes[base] == "histogram" {
			return true
		}
	}
	return false
}

// TestKnownMetricCatchesMistakes: the check of the selectors' names fails
// on a name the exporter does not expose.
func TestKnownMetricCatchesMistakes(t *testing.T) {
	for name, want := range map[string]bool{
		NameCost: true, NameContextWindowUtilization + "_bucket": true, NameAmyTurnCost + "_sum": true,
		"amp_cost_total": false, NameCost + "_bucket": false, "amp_threads_count": false,
	} {
		if got := knownMetric(name); got != want {
			t.Errorf("knownMetric(%q) = %v, want %v", name, got, want)
		}
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func keys(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
