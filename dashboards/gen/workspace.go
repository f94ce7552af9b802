package main

import (
	"fmt"

	"github.com/grafana/grafana-foundation-sdk/go/common"
)

// The workspace source's own families the row draws (docs/metrics.md).
const (
	wsDailyUsageMetric = NameWorkspaceDailyUsage
	wsLinesMetric      = NameWorkspaceLines
)

// topUsers is how many users the workspace's "top" panels draw.
const topUsers = 10

// wsDifference is, per user, the daily rollup's dollars minus the
// threads' bills over window: the recording rule
// amp:workspace_usage_difference_usd:increase1d, inline so that it keeps
// the dashboard's filters (the rule's output has no job or instance) and
// works without the rules loaded. A user in one view only is compared
// with 0.
func wsDifference(window string) string {
	rollup := fmt.Sprintf(`sum by (user) (increase(%s{$F}[%s]))`, wsDailyUsageMetric, window)
	threads := fmt.Sprintf(`sum by (user) (increase(%s{$F,source="workspace"}[%s]))`, NameBilledCost, window)
	return fmt.Sprintf(`(%s - %s) or %s or -%s`, rollup, threads, rollup, threads)
}

// workspaceRow is the overview's row for the workspace source (Amp's
// workspace API: every member's threads from one exporter, its series
// labelled source="workspace" and user). The end-to-end dashboards test
// runs the workspace source on a stand-in, so that every panel of the row
// shows data there like the overview's others.
func (d *dash) workspaceRow() {
	d.row("The workspace: spend and lines per member")
	d.add(d.perDay("Workspace spend per user per day",
		fmt.Sprintf("What the workspace's members spent per day as Amp reports it (amp_cost_usd_total{source=\"workspace\"}: Amp's own dollars per thread and model, not the price table's estimate), for the %d users who spent most on each day. "+
			"user is Amp's user id, the member's e-mail or empty, as amp_workspace.user_label says; each bar is the increase over the day before it. %s: user_label off.", topUsers, noUser),
		"currencyUSD",
		t(fmt.Sprintf(`topk(%d, label_replace(sum by (user) (increase(%s{$F,source="workspace"}[$__interval])), "user", %q, "user", ""))`,
			topUsers, NameCost, noUser), "{{user}}")))
	d.add(d.barGauge("Workspace top users by spend",
		fmt.Sprintf("The %d members who spent most over the dashboard's time range, in Amp's own dollars (amp_cost_usd_total{source=\"workspace\"}). A member first seen within the range counts from the exporter's second scrape of their series on.", topUsers),
		"currencyUSD",
		t(fmt.Sprintf(`topk(%d, label_replace(sum by (user) (increase(%s{$F,source="workspace"}[$__range])), "user", %q, "user", ""))`,
			topUsers, NameCost, noUser), "{{user}}")))
	d.add(d.perDay("Workspace lines per day",
		"Lines added, deleted and modified per day in the whole workspace, from Amp's daily rollup (amp_workspace_lines_total, per member and day; not the edit tools' amp_lines_changed_total of the other sources, and never added to it). "+linesCaveat,
		"short",
		t(fmt.Sprintf(`sum by (kind) (increase(%s{$F}[$__interval]))`, wsLinesMetric), "{{kind}}")))
	d.add(d.barGauge("Workspace lines per user",
		fmt.Sprintf("Lines added plus deleted over the dashboard's time range of the %d members with the most, from Amp's daily rollup (amp_workspace_lines_total; modified lines left out, as Amp may count them in both). ", topUsers)+linesCaveat,
		"short",
		t(fmt.Sprintf(`topk(%d, label_replace(sum by (user) (increase(%s{$F,kind=~"added|deleted"}[$__range])), "user", %q, "user", ""))`,
			topUsers, wsLinesMetric, noUser), "{{user}}")))
	d.add(d.timeseries("Workspace: rollup minus threads per day",
		fmt.Sprintf("Amp's two views of the same spend compared per day: the daily rollup's dollars (amp_workspace_daily_usage_usd_total) minus the threads' bills (amp_billed_cost_usd_total{source=\"workspace\"}), over all members and for the %d members whose difference is largest. "+
			"About 0 when the views agree; the recording rule amp:workspace_usage_difference_usd:increase1d keeps the same per user over a rolling day. The two are never added. "+
			"Ignore the first day after the exporter's first start (the history and the threads are still being read); a member up and another down by the same amount is a sub-thread run in another member's thread; docs/team.md says what else to check.", topUsers),
		"currencyUSD",
		t(fmt.Sprintf(`sum(%s)`, wsDifference("$__interval")), "all members"),
		t(fmt.Sprintf(`%s and on (user) topk(%d, abs(%s))`, wsDifference("$__interval"), topUsers, wsDifference("$__interval")), "{{user}}")).
		Interval("1d").
		DrawStyle(common.GraphDrawStyleBars).
		FillOpacity(80))
}
