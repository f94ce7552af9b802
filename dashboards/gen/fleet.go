package main

import (
	"fmt"

	"github.com/grafana/grafana-foundation-sdk/go/cog"
	"github.com/grafana/grafana-foundation-sdk/go/dashboard"
)

// Fleets: laptops push with remote-write, labelled user and host
// (docs/team.md). Every dashboard filters on both; where no series has
// them (a plain scrape), "All" is ".*", which matches the absent label, so
// every panel works unchanged.
//
//lint:ignore SA1019 v1 is the schema Grafana 10 and 11 load.
func fleetVariables(b *dashboard.DashboardBuilder) {
	for _, v := range []struct{ name, query, help string }{
		{"user", `label_values(amp_exporter_build_info{job=~"$job", instance=~"$instance"}, user)`,
			"The user external label of pushing exporters (remote_write); empty where exporters are scraped."},
		{"host", `label_values(amp_exporter_build_info{job=~"$job", instance=~"$instance", user=~"$user"}, host)`,
			"The host external label of pushing exporters (remote_write); empty where exporters are scraped."},
	} {
		b.WithVariable(dashboard.NewQueryVariableBuilder(v.name).
			Label(v.name).
			Description(v.help).
			Datasource(dsRef()).
			Query(dashboard.StringOrMap{String: cog.ToPtr(v.query)}).
			Definition(v.query).
			Refresh(dashboard.VariableRefreshOnTimeRangeChanged).
			Sort(dashboard.VariableSortAlphabeticalAsc).
			Multi(true).
			IncludeAll(true).
			AllValue(".*").
			Current(allOption()))
	}
}

// fleetCounted are the counters whose since-start stats count Amp server
// threads once per user (sinceStart).
var fleetCounted = map[string]bool{
	NameCost:           true,
	NameCredits:        true,
	NameUnpricedTokens: true,
}

// fleetSum sums a per-series expression by the labels in by ("" for one
// total), counting each thread once as the shipped fleet rules do
// (deploy/rules: user:*:fleet): Amp server series (source="server") are
// the user's, the same on each of the user's hosts, so they are taken once
// — the max over host, instance and job — and every other series is
// summed. perSeries gets the extra matcher to put after "$F". The
// dashboards apply the rule inline rather than read the recorded series:
// those drop host, job and instance (which the variables filter on), and a
// plain scrape without the rules loaded must work too.
func fleetSum(by string, perSeries func(matcher string) string) string {
	clause := ""
	if by != "" {
		clause = " by (" + by + ")"
	}
	return fmt.Sprintf(`sum%s (max without (host, instance, job) (%s) or %s)`,
		clause, perSeries(`,source="server"`), perSeries(`,source!="server"`))
}

// fleetRate is fleetSum of the per-second rate of metric, with extra
// matchers (",token_type=\"x\"") after "$F".
func fleetRate(by, metric, extra string) string {
	return fleetSum(by, func(m string) string {
		return fmt.Sprintf(`rate(%s{$F%s%s}[$__rate_interval])`, metric, extra, m)
	})
}
