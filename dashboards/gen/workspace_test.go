package main

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/grafana/grafana-foundation-sdk/go/cog/plugins"
	"github.com/prometheus/prometheus/promql/parser"
)

// The workspace row is checked here on a dashboard of its own as well as
// on the overview: strict schema, descriptions, units, the datasource
// variable, the variable filters on every selector, parsing PromQL, known
// metric names and windows.
func TestWorkspaceRow(t *testing.T) {
	plugins.RegisterDefaultPlugins()
	d := newDash("amp-workspace-row-test", "workspace row", "The workspace row, alone.", commonFilter)
	d.workspaceRow()
	db, err := d.b.Build()
	if err != nil {
		t.Fatal(err)
	}
	db.SchemaVersion = schemaVersion
	raw, err := marshal(db)
	if err != nil {
		t.Fatal(err)
	}
	if errs := strictErrors(raw); len(errs) > 0 {
		t.Fatalf("%d schema errors:\n%s", len(errs), strings.Join(errs, "\n"))
	}
	var dj dashJSON
	if err := json.Unmarshal(raw, &dj); err != nil {
		t.Fatal(err)
	}
	known := func(name string) bool {
		return knownMetric(name)
	}
	p := parser.NewParser(parser.Options{})
	panels := dj.panels()
	if len(panels) != 5 {
		t.Errorf("%d panels, want 5", len(panels))
	}
	titles := map[string]bool{}
	for _, panel := range panels {
		if titles[panel.Title] {
			t.Errorf("panel title %q repeated", panel.Title)
		}
		titles[panel.Title] = true
		if !strings.HasPrefix(panel.Title, "Workspace") {
			t.Errorf("panel %q: titles start with Workspace, apart from the overview's other panels", panel.Title)
		}
		if strings.TrimSpace(panel.Description) == "" || panel.FieldConfig.Defaults.Unit == "" {
			t.Errorf("panel %q: no description or no unit", panel.Title)
		}
		checkDatasource(t, "panel "+panel.Title, panel.Datasource)
		if len(panel.Targets) == 0 {
			t.Errorf("panel %q has no targets", panel.Title)
		}
		for _, tg := range panel.Targets {
			what := fmt.Sprintf("%q / %s", panel.Title, tg.RefID)
			checkDatasource(t, what, tg.Datasource)
			if !strings.Contains(tg.Expr, "workspace") {
				t.Errorf("%s: reads nothing of the workspace source: %s", what, tg.Expr)
			}
			if _, err := p.ParseExpr(substitute(tg.Expr, ".*", ".*", ".*")); err != nil {
				t.Errorf("%s: %v\n%s", what, err, tg.Expr)
				continue
			}
			expr, err := p.ParseExpr(substitute(tg.Expr, jobSentinel, instanceSentinel, upstreamSentinel))
			if err != nil {
				t.Errorf("%s: %v", what, err)
				continue
			}
			checkSelectors(t, what, d.uid, expr, known)
		}
	}
	if len(d.queries) == 0 {
		t.Errorf("no queries recorded")
	}
}

// The inline difference is the recording rule's: the rollup's dollars
// minus the workspace threads' bills per user, and each side alone for a
// user the other lacks; never a sum of the two.
func TestWorkspaceDifferenceExpression(t *testing.T) {
	expr, err := parser.NewParser(parser.Options{}).ParseExpr(substitute(strings.ReplaceAll(wsDifference("$__interval"), "$F", commonFilter), ".*", ".*", ".*"))
	if err != nil {
		t.Fatal(err)
	}
	var subs, adds, ors int
	parser.Inspect(expr, func(node parser.Node, _ []parser.Node) error {
		if b, ok := node.(*parser.BinaryExpr); ok {
			switch b.Op {
			case parser.SUB:
				subs++
			case parser.ADD:
				adds++
			case parser.LOR:
				ors++
			}
		}
		return nil
	})
	if subs != 1 || adds != 0 || ors != 2 {
		t.Errorf("difference %s: %d subtractions, %d additions, %d or; want 1, 0, 2", expr, subs, adds, ors)
	}
	s := expr.String()
	for _, want := range []string{wsDailyUsageMetric, NameBilledCost + `{`, `source="workspace"`, "sum by (user)"} {
		if !strings.Contains(s, want) {
			t.Errorf("difference %s lacks %s", s, want)
		}
	}
}
