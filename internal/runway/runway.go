// Package runway says when the Amp entitlement window runs out at the
// recent pace of spending, as the recording rule
// amp:entitlement_runway_seconds does in Prometheus: the pace is the lower
// of the spend rate over the last 15 minutes and over the last 6 hours, so
// one expensive minute hardly moves it and it falls to 0 within 15 minutes
// of the last spend. The landing page and `amp-exporter statusline` read
// it from here (they cannot ask Prometheus), so the two say the same.
package runway

import (
	"math"
	"strconv"
	"time"
)

// The windows of the two rates, those of the recording rules.
const (
	Short = 15 * time.Minute
	Long  = 6 * time.Hour
)

// maxHours bounds a runway (a tiny pace would overflow a time.Duration):
// past it, "when" means nothing any more.
const maxHours = 100 * 365 * 24

// Spend is what was spent within [Start, End): a bucket of the usage
// ledger. A bucket still open (End after now) was spent between its start
// and now.
type Spend struct {
	Start, End time.Time
	USD        float64
}

// Rate is the USD per hour spent in the window before now. A span that
// lies partly in the window counts by the share of it inside, as if it had
// been spent evenly; spans after now (a skewed clock) and negative or
// non-finite amounts count nothing.
func Rate(spends []Spend, now time.Time, window time.Duration) float64 {
	if window <= 0 {
		return 0
	}
	from := now.Add(-window)
	var usd float64
	for _, s := range spends {
		if !(s.USD > 0) || math.IsInf(s.USD, 0) {
			continue
		}
		end := s.End
		if end.After(now) {
			end = now // still open: spent so far
		}
		span := end.Sub(s.Start)
		if span <= 0 {
			continue
		}
		in := end.Sub(maxTime(s.Start, from))
		if in <= 0 {
			continue
		}
		usd += s.USD * float64(in) / float64(span)
	}
	return usd / window.Hours()
}

// Pace is the USD per hour the window is being used at: the lower of Rate
// over Short and over Long.
func Pace(spends []Spend, now time.Time) float64 {
	return min(Rate(spends, now, Short), Rate(spends, now, Long))
}

// Runway is when what is left of the window is spent at the pace.
type Runway struct {
	RemainingUSD float64
	// PerHour is the pace in USD per hour, above 0.
	PerHour float64
	// Out is when RemainingUSD is spent at PerHour.
	Out time.Time
	// ResetsAt is when the window resets; zero when unknown.
	ResetsAt time.Time
}

// Of is the runway of remaining USD at perHour from now. There is none
// (false) when nothing is being spent, or the remainder is unknown or
// spent already (the window's own figures say so).
func Of(remaining *float64, resetsAt time.Time, perHour float64, now time.Time) (Runway, bool) {
	if remaining == nil || !(*remaining > 0) || math.IsInf(*remaining, 0) || !(perHour > 0) || math.IsInf(perHour, 0) {
		return Runway{}, false
	}
	hours := min(*remaining/perHour, maxHours)
	out := now.Add(time.Duration(math.Round(hours * float64(time.Hour))))
	return Runway{RemainingUSD: *remaining, PerHour: perHour, Out: out, ResetsAt: resetsAt}, true
}

// BeforeReset reports whether the window runs out before it resets (true
// when the reset time is unknown).
func (r Runway) BeforeReset() bool { return r.ResetsAt.IsZero() || r.Out.Before(r.ResetsAt) }

// Phrase is the runway in words at now: "out in ~3h at this pace", or
// "lasts until the reset".
func (r Runway) Phrase(now time.Time) string {
	switch {
	case !r.BeforeReset():
		return "lasts until the reset"
	case !r.Out.After(now):
		return "out now at this pace"
	}
	return "out in " + About(r.Out.Sub(now)) + " at this pace"
}

// About is a duration said roughly: minutes under an hour (at least one),
// hours under two days, days beyond.
func About(d time.Duration) string {
	if m := math.Round(d.Minutes()); m < 60 {
		return "~" + strconv.Itoa(max(1, int(m))) + "m"
	}
	if h := math.Round(d.Hours()); h < 48 {
		return "~" + strconv.Itoa(int(h)) + "h"
	}
	return "~" + strconv.Itoa(int(math.Round(d.Hours()/24))) + "d"
}

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}
