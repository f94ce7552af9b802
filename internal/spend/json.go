package spend

import (
	"strconv"
	"time"
)

// JSONVersion is the version of /api/spend's JSON; a field is never
// renamed or given another meaning without a new version.
const JSONVersion = 1

// JSON is what /api/spend serves: the periods' figures, worked out by the
// exporter so that a statusline only prints them.
type JSON struct {
	Version int `json:"version"`
	// Timezone is the zone the days and months are taken in.
	Timezone string `json:"timezone"`
	// Now is when the summary was made (RFC 3339, in that zone).
	Now   time.Time  `json:"now"`
	Today PeriodJSON `json:"today"`
	Last7 PeriodJSON `json:"last_7_days"`
	Month PeriodJSON `json:"month"`
	// Entitlement is absent when the Amp server source has reported none.
	Entitlement *EntitlementJSON `json:"entitlement,omitempty"`
	// Runway is absent when nothing is being spent, or what is left of
	// the entitlement is unknown or spent (Summary.Runway).
	Runway *RunwayJSON `json:"runway,omitempty"`
}

// RunwayJSON is when the entitlement window runs out at the recent pace
// of spend (billed where known, else estimated).
type RunwayJSON struct {
	// USDPerHour is the pace: the lower of the last 15 minutes' and the
	// last 6 hours' rate.
	USDPerHour float64 `json:"usd_per_hour"`
	// RunsOutAt is when what is left is spent at that pace.
	RunsOutAt time.Time `json:"runs_out_at"`
	// BeforeReset says whether that comes before the window resets (true
	// when the reset time is unknown).
	BeforeReset bool `json:"before_reset"`
}

// PeriodJSON is what was spent since From (YYYY-MM-DD) until now.
type PeriodJSON struct {
	From         string  `json:"from"`
	EstimatedUSD float64 `json:"estimated_usd"`
	// BilledUSD is absent when the exporter knows no bills.
	BilledUSD *float64 `json:"billed_usd,omitempty"`
}

// EntitlementJSON is the Amp account's current entitlement window.
type EntitlementJSON struct {
	Window       string     `json:"window"`
	LimitUSD     *float64   `json:"limit_usd,omitempty"`
	RemainingUSD *float64   `json:"remaining_usd,omitempty"`
	UsedRatio    *float64   `json:"used_ratio,omitempty"`
	ResetsAt     *time.Time `json:"resets_at,omitempty"`
}

// JSON is the summary as /api/spend serves it.
func (s Summary) JSON() JSON {
	j := JSON{
		Version:  JSONVersion,
		Timezone: s.Location.String(),
		Now:      s.Now.In(s.Location).Truncate(time.Second),
		Today:    period(s.TodayDate, s.Today),
		Last7:    period(s.Last7From, s.Last7),
		Month:    period(s.MonthFrom, s.Month),
	}
	if e := s.Entitlement; e != nil {
		j.Entitlement = &EntitlementJSON{Window: e.Window, LimitUSD: e.LimitUSD, RemainingUSD: e.RemainingUSD, UsedRatio: e.UsedRatio}
		if !e.ResetsAt.IsZero() {
			t := e.ResetsAt.In(s.Location).Truncate(time.Second)
			j.Entitlement.ResetsAt = &t
		}
	}
	if r, ok := s.Runway(); ok {
		j.Runway = &RunwayJSON{USDPerHour: r.PerHour, RunsOutAt: r.Out.In(s.Location).Truncate(time.Second), BeforeReset: r.BeforeReset()}
	}
	return j
}

func period(from string, a Amount) PeriodJSON {
	p := PeriodJSON{From: from, EstimatedUSD: USD(a.Estimated)}
	if a.Billed != nil {
		v := USD(*a.Billed)
		p.BilledUSD = &v
	}
	return p
}

// Until says how long until t from now, in days and hours, hours and
// minutes, or minutes ("now" when past).
func Until(t, now time.Time) string {
	d := t.Sub(now)
	if d <= 0 {
		return "now"
	}
	d = d.Round(time.Minute)
	days, hours, mins := int(d/(24*time.Hour)), int(d%(24*time.Hour)/time.Hour), int(d%time.Hour/time.Minute)
	switch {
	case days > 0:
		return strconv.Itoa(days) + "d " + strconv.Itoa(hours) + "h"
	case hours > 0:
		return strconv.Itoa(hours) + "h " + strconv.Itoa(mins) + "m"
	}
	return strconv.Itoa(mins) + "m"
}
