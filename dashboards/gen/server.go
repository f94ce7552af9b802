package main

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
