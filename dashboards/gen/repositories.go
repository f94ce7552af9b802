package main

import (
	"fmt"

	"github.com/grafana/grafana-foundation-sdk/go/bargauge"
	"github.com/grafana/grafana-foundation-sdk/go/cog"
	"github.com/grafana/grafana-foundation-sdk/go/common"
	"github.com/grafana/grafana-foundation-sdk/go/dashboard"
	"github.com/grafana/grafana-foundation-sdk/go/table"
	"github.com/grafana/grafana-foundation-sdk/go/timeseries"
)

// topRepositories is how many repositories the "top" panels draw.
const topRepositories = 10

// noRemote is how the panels name repository="" (threads whose workspace
// has no git remote, or exporters with the label turned off): an empty
// legend or table cell reads as a missing value.
const noRemote = "(no remote)"

// namedRepository gives repository="" a readable name.
func namedRepository(expr string) string {
	return fmt.Sprintf(`label_replace(%s, "repository", %q, "repository", "")`, expr, noRemote)
}

// fleetIncrease is fleetSum of the increase of metric over window (a
// Grafana variable such as $__range), with extra matchers after "$F".
func fleetIncrease(by, metric, extra, window string) string {
	return fleetSum(by, func(m string) string {
		return fmt.Sprintf(`increase(%s{$F%s%s}[%s])`, metric, extra, m, window)
	})
}

const linesCaveat = `Lines are not value: a deleted directory or a regenerated lock file is thousands of lines, a careful one-line fix is one, and reading, reviewing and answering questions change none. ` +
	`Compare a repository with itself over time; never rank people or teams by it.`

const commitsCaveat = `A commit is not value: one agent commits every step, another once a day, and a pull request may be a one-line fix or a week's work. ` +
	`Compare a repository with itself over time; never rank people or teams by it.`

const linesHelp = `Lines the agents' edit tools added and removed (amp_lines_changed_total: edit_file by a line diff of old_str and new_str, create_file by the lines of content, apply_patch by the patch; only calls that ran to the end), counted as Amp's own UI counts them.`

// repositoriesRow is the overview's row for chargeback: where the money
// goes by repository (the thread's git remote as host/path, or the name a
// repositories: rule gives it), and what the agents changed there.
func (d *dash) repositoriesRow() {
	d.row("Where the money goes: repositories")
	d.add(d.timeseries("Top repositories by spend",
		fmt.Sprintf(`Estimated spend rate (amp_cost_usd_total: tokens times list prices) of the %d repositories that spend most at each point in time, in US dollars per hour; each Amp server thread counted once per user across their machines. `+
			`A repository is the git remote of the thread's workspace as host/path, or the project name a repositories: rule maps it to; %s: threads outside a git checkout with a remote; other: the repositories past limits.max_label_values together.`, topRepositories, noRemote),
		"currencyUSD",
		t(fmt.Sprintf(`topk(%d, %s)`, topRepositories, namedRepository(fleetRate("repository", NameCost, "")+perHour)), "{{repository}}")).
		AxisLabel("USD per hour"))
	d.add(d.timeseries("Top repositories by lines changed",
		fmt.Sprintf(`Lines added plus removed per hour in the %d repositories with the most changes at each point in time. `, topRepositories)+linesHelp,
		"short",
		t(fmt.Sprintf(`topk(%d, %s)`, topRepositories, namedRepository(fleetRate("repository", NameLinesChanged, "")+perHour)), "{{repository}}")).
		AxisLabel("lines per hour"))
	d.add(d.perDay("Spend per day",
		"Estimated spend (amp_cost_usd_total) and what Amp bills for the Amp server's threads (amp_billed_cost_usd_total) per day: each bar is the increase over the day before it (the panel's minimum interval is one day; zoomed out further, a bar covers several days).",
		"currencyUSD",
		t(fleetIncrease("", NameCost, "", "$__interval"), "estimated"),
		t(fleetIncrease("", NameBilledCost, "", "$__interval"), "billed by Amp")))
	d.add(d.perDay("Lines changed per day",
		"Lines added and removed per day, beside the spend per day: each bar is the increase over the day before it. "+linesHelp,
		"short",
		t(fleetIncrease("kind", NameLinesChanged, "", "$__interval"), "{{kind}}")))
	d.add(d.repositoryTable("Spend by repository",
		"Per repository over the dashboard's time range: tokens, estimated USD (tokens times list prices), billed USD (what Amp bills, for threads read from the Amp server; empty for the rest), lines added and removed. "+
			"Each Amp server thread counted once per user across their machines. The figures are increase() over the range: a repository seen for the first time within the range counts from its second scrape on, so on an exporter's first start its history is not shown as the range's. "+
			fmt.Sprintf("%s: threads without a git remote; other: the repositories past limits.max_label_values together.", noRemote),
		[]repoColumn{
			{"Tokens", "short", fleetIncrease("repository", NameTokens, "", "$__range")},
			{"Estimated USD", "currencyUSD", fleetIncrease("repository", NameCost, "", "$__range")},
			{"Billed USD", "currencyUSD", fleetIncrease("repository", NameBilledCost, "", "$__range")},
			{"Lines added", "short", fleetIncrease("repository", NameLinesChanged, `,kind="added"`, "$__range")},
			{"Lines removed", "short", fleetIncrease("repository", NameLinesChanged, `,kind="removed"`, "$__range")},
		}))
	cost := fleetIncrease("repository", NameCost, "", "$__range")
	lines := fleetIncrease("repository", NameLinesChanged, "", "$__range")
	d.add(d.barGauge("USD per 100 lines changed",
		fmt.Sprintf("Estimated spend per 100 lines added or removed over the dashboard's time range, for the %d repositories where it is highest (the recording rule amp:usd_per_100_lines_changed_by_repository:ratio1d keeps it over a rolling day). ", topRepositories)+
			"Repositories without changed lines have no bar (no division by zero). By model: the panel beside it. "+linesCaveat,
		"currencyUSD",
		t(fmt.Sprintf(`topk(%d, %s)`, topRepositories, namedRepository(fmt.Sprintf(`%s / (%s > 0) * 100`, cost, lines))), "{{repository}}")))
	modelCost := fleetIncrease("model", NameCost, "", "$__range")
	modelLines := fleetIncrease("model", NameLinesChangedByModel, "", "$__range")
	d.add(d.barGauge("USD per 100 lines changed by model",
		fmt.Sprintf("Estimated spend of each model (amp_cost_usd_total) per 100 lines its edit calls added or removed (amp_lines_changed_by_model_total: the lines of amp_lines_changed_total by the model of the message that made the call) over the dashboard's time range, for the %d models where it is highest (the recording rule amp:usd_per_100_lines_changed_by_model:ratio1d keeps it over a rolling day). ", topRepositories)+
			"The spend is all of the model's spend, on turns that changed nothing too; models without changed lines have no bar (no division by zero). "+
			"Models do different work: one that plans, reads and reviews for another that writes shows a high figure for good reasons. "+linesCaveat,
		"currencyUSD",
		t(fmt.Sprintf(`topk(%d, %s / (%s > 0) * 100)`, topRepositories, modelCost, modelLines), "{{model}}")))
	commits := fleetIncrease("repository", NameCommits, "", "$__range")
	prs := fleetIncrease("repository", NamePullRequests, "", "$__range")
	d.add(d.barGauge("USD per commit",
		fmt.Sprintf("Estimated spend (amp_cost_usd_total) per commit the agents made (amp_commits_total: a git commit that succeeded; not dry runs, not amends) over the dashboard's time range, for the %d repositories where it is highest (the recording rule amp:usd_per_commit_by_repository:ratio1d keeps it over a rolling day). ", topRepositories)+
			"Repositories without commits have no bar (no division by zero). The spend is all of the repository's spend, on turns that committed nothing too. By model: the panel USD per commit by model. "+commitsCaveat,
		"currencyUSD",
		t(fmt.Sprintf(`topk(%d, %s)`, topRepositories, namedRepository(fmt.Sprintf(`%s / (%s > 0)`, cost, commits))), "{{repository}}")))
	d.add(d.barGauge("USD per pull request",
		fmt.Sprintf("Estimated spend (amp_cost_usd_total) per pull or merge request the agents opened (amp_pull_requests_total: gh pr create and the like that succeeded and printed the request's URL) over the dashboard's time range, for the %d repositories where it is highest (the recording rule amp:usd_per_pull_request_by_repository:ratio1d keeps it over a rolling day). ", topRepositories)+
			"Repositories without pull requests have no bar. By model: the panel USD per pull request by model. "+commitsCaveat,
		"currencyUSD",
		t(fmt.Sprintf(`topk(%d, %s)`, topRepositories, namedRepository(fmt.Sprintf(`%s / (%s > 0)`, cost, prs))), "{{repository}}")))
	modelCommits := fleetIncrease("model", NameCommitsByModel, "", "$__range")
	modelPRs := fleetIncrease("model", NamePullRequestsByModel, "", "$__range")
	d.add(d.barGauge("USD per commit by model",
		fmt.Sprintf("Estimated spend of each model (amp_cost_usd_total) per commit its shell calls made (amp_commits_by_model_total: the commits of amp_commits_total by the model of the message that made the call) over the dashboard's time range, for the %d models where it is highest (the recording rule amp:usd_per_commit_by_model:ratio1d keeps it over a rolling day). ", topRepositories)+
			"The spend is all of the model's spend, on turns that committed nothing too; models without commits have no bar (no division by zero). "+
			"Models do different work: one that plans, reads and reviews for another that commits shows a high figure for good reasons. "+commitsCaveat,
		"currencyUSD",
		t(fmt.Sprintf(`topk(%d, %s / (%s > 0))`, topRepositories, modelCost, modelCommits), "{{model}}")))
	d.add(d.barGauge("USD per pull request by model",
		fmt.Sprintf("Estimated spend of each model (amp_cost_usd_total) per pull or merge request its shell calls opened (amp_pull_requests_by_model_total: the pull requests of amp_pull_requests_total by the model of the message that made the call) over the dashboard's time range, for the %d models where it is highest (the recording rule amp:usd_per_pull_request_by_model:ratio1d keeps it over a rolling day). ", topRepositories)+
			"The spend is all of the model's spend; models without pull requests have no bar. "+commitsCaveat,
		"currencyUSD",
		t(fmt.Sprintf(`topk(%d, %s / (%s > 0))`, topRepositories, modelCost, modelPRs), "{{model}}")))
	d.add(d.barGauge("Top users by spend",
		fmt.Sprintf("Estimated spend (amp_cost_usd_total) over the dashboard's time range of the %d users who spent most: the user label their exporters push with (remote_write external_labels, docs/team.md), each user's Amp server threads counted once across their machines. %s: exporters without a user label (a scraped exporter).", topRepositories, noUser),
		"currencyUSD",
		t(fmt.Sprintf(`topk(%d, label_replace(%s, "user", %q, "user", ""))`, topRepositories, fleetIncrease("user", NameCost, "", "$__range"), noUser), "{{user}}")))
}

// noUser names user="" in the per-user panels.
const noUser = "(no user label)"

// perDay is a bar chart of increase(...[$__interval]) with a minimum
// interval of one day: one bar per day.
func (d *dash) perDay(title, description, unit string, ts ...target) *timeseries.PanelBuilder {
	return d.timeseries(title, description, unit, ts...).
		Interval("1d").
		DrawStyle(common.GraphDrawStyleBars).
		FillOpacity(80).
		Min(0)
}

// repoColumn is one column of the repository table: an instant query
// summed by repository.
type repoColumn struct {
	name, unit, expr string
}

// repositoryTable joins one instant query per column on the repository
// label (Grafana's merge transformation), full width, sorted by the
// estimated spend.
func (d *dash) repositoryTable(title, description string, cols []repoColumn) *table.PanelBuilder {
	ts := make([]target, 0, len(cols))
	rename := map[string]any{"repository": "Repository"}
	order := map[string]any{"repository": 0}
	p := table.NewPanelBuilder()
	for i, c := range cols {
		ts = append(ts, t(namedRepository(c.expr), ""))
		value := "Value #" + string(rune('A'+i))
		rename[value] = c.name
		order[value] = i + 1
		props := []dashboard.DynamicConfigValue{{Id: "unit", Value: c.unit}}
		if c.unit == "short" {
			// Counts: increase() extrapolates to fractions.
			props = append(props, dashboard.DynamicConfigValue{Id: "decimals", Value: 0})
		}
		p.OverrideByName(c.name, props)
	}
	return p.
		Id(d.id()).
		Title(title).
		Description(description).
		Datasource(dsRef()).
		Unit("short").
		Decimals(2).
		Span(24).
		Height(8).
		Targets(d.targets(title, tableQuery, ts)).
		Footer(common.NewTableFooterOptionsBuilder().Show(false).Reducer([]string{"sum"})).
		SortBy([]cog.Builder[common.TableSortByFieldState]{
			common.NewTableSortByFieldStateBuilder().DisplayName("Estimated USD").Desc(true),
		}).
		WithTransformation(dashboard.DataTransformerConfig{Id: "merge", Options: map[string]any{}}).
		WithTransformation(dashboard.DataTransformerConfig{
			Id: "organize",
			Options: map[string]any{
				"excludeByName": map[string]any{"Time": true},
				"renameByName":  rename,
				"indexByName":   order,
			},
		})
}

// barGauge shows one horizontal bar per series of an instant query, half
// the width.
func (d *dash) barGauge(title, description, unit string, ts ...target) *bargauge.PanelBuilder {
	return bargauge.NewPanelBuilder().
		Id(d.id()).
		Title(title).
		Description(description).
		Datasource(dsRef()).
		Unit(unit).
		Decimals(2).
		Span(12).
		Height(8).
		Targets(d.targets(title, instantQuery, ts)).
		Orientation(common.VizOrientationHorizontal).
		DisplayMode(common.BarGaugeDisplayModeGradient).
		ReduceOptions(common.NewReduceDataOptionsBuilder().Calcs([]string{"lastNotNull"}).Values(false)).
		Thresholds(thresholds("green"))
}
