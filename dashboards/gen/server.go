package main

import "fmt"

// serverRow is the overview's row for the Amp server source: what Amp
// bills beside the price-table estimate, the entitlement window and the
// health of the sync.
func (d *dash) serverRow() {
	d.row("Amp server: billed cost and entitlement")
	d.add(d.timeseries("Billed vs estimated",
		"What Amp itself bills for the threads read from the Amp server (amp_billed_cost_usd_total, from threadDisplayCostInfo) beside the price-table estimate for the same threads (amp_cost_usd_total{source=\"server\"}), in US dollars per hour. The billed line is the real figure; a gap shows where the price table is off.",
		"currencyUSD",
		t(fleetRate("", NameBilledCost, "")+perHour, "billed by Amp"),
		t(`sum(max without (host, instance, job) (rate(amp_cost_usd_total{$F,source="server"}[$__rate_interval])))`+perHour, "estimated (price table)")).
		AxisLabel("USD per hour"))
	d.add(d.stacked("Billed by kind",
		"What Amp bills per hour by kind: free (free credits), paid, subscription, or total where Amp gives no breakdown; stacked.",
		"currencyUSD",
		t(fleetRate("kind", NameBilledCost, "")+perHour, "{{kind}}")).
		AxisLabel("USD per hour"))
	d.add(d.stat("Entitlement used",
		"Share of the user's current Amp entitlement window used (amp_entitlement_used_ratio, Amp's percentUsed), by window. Orange from 80 %, red from 95 % (the alert thresholds). Updated whenever a thread changes.",
		"percentunit",
		t(`max by (window) (amp_entitlement_used_ratio{$F})`, "{{window}}")).
		Decimals(1).
		Thresholds(thresholds("green", step(0.8, "orange"), step(0.95, "red"))))
	d.add(d.stat("Entitlement remaining",
		"What is left of the current entitlement window in US dollars (amp_entitlement_remaining_usd), by window.",
		"currencyUSD",
		t(`min by (window) (amp_entitlement_remaining_usd{$F})`, "{{window}}")).
		Decimals(2))
	d.add(d.stat("Time to window reset",
		"Time until the current entitlement window resets (amp_entitlement_window_reset_timestamp_seconds minus now), by window.",
		"s",
		t(`max by (window) (amp_entitlement_window_reset_timestamp_seconds{$F}) - time()`, "{{window}}")))
	d.add(d.stat("Entitlement runway",
		"Time until what is left of the entitlement window (amp_entitlement_remaining_usd) is spent at the recent pace, by window: the lower of the last 15 minutes' and the last 6 hours' spend rate, so one expensive minute hardly moves it. "+
			"The pace is what Amp bills (amp_billed_cost_usd_total) where the exporter reads bills, else the estimate (amp_cost_usd_total), of every user selected together. "+
			"No value while nothing is being spent. Compare it with the time to the window's reset: shorter, and AmpEntitlementExhaustedBeforeReset fires (the recording rule amp:entitlement_runway_seconds keeps it per user).",
		"s",
		t(`min by (window) (amp_entitlement_remaining_usd{$F}) / on() group_left() (`+entitlementPace+` > 0) * 3600`, "{{window}}")))
	d.add(d.stat("Amp server sync",
		"Whether the last sync with the Amp server succeeded (amp_server_up), per instance. A failed sync loses nothing: changed threads are counted at the next one.",
		"short",
		t(`min by (instance) (amp_server_up{$F})`, "{{instance}}")).
		Mappings(valueText("0", "failing", "red", "1", "ok", "green")).
		Thresholds(thresholds("red", step(1, "green"))))
	d.add(d.stacked("Amp server requests by status",
		"Requests to the Amp server per minute by HTTP status code (error: no answer), all methods; stacked. 401/403 mean the key is refused; 429 and 5xx are retried with backoff.",
		"cpm",
		t(`sum by (code) (rate(amp_server_requests_total{$F}[$__rate_interval]))`+perMinute, "{{code}}")))
}

// entitlementPace is the pace the entitlement window is used at, in USD
// per hour, as amp:entitlement_spend_usd_per_hour:pace has it: the lower
// of the 15m and 6h rates of billed spend (else the estimate).
var entitlementPace = func() string {
	rate := func(window string) string {
		billed := fmt.Sprintf(`sum(max without (host, instance, job) (rate(%s{$F}[%s])))`, NameBilledCost, window)
		estimate := fleetSum("", func(m string) string { return fmt.Sprintf(`rate(%s{$F%s}[%s])`, NameCost, m, window) })
		return "(" + billed + " or " + estimate + ")"
	}
	short, long := rate("15m"), rate("6h")
	return fmt.Sprintf(`((%s <= %s or %s) * 3600)`, short, long, long)
}()
