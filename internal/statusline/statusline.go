// Package statusline makes the one line `amp-exporter statusline` prints
// for shell prompts and tmux: what a running exporter says was spent today
// and this month, what is left of the Amp entitlement window and when it
// runs out at the recent pace. The
// exporter does the sums (/api/spend); this only asks and prints, so that
// a prompt never waits for more than one short request.
package statusline

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/amp-exporter/amp-exporter/internal/runway"
	"github.com/amp-exporter/amp-exporter/internal/spend"
)

// SpendPath is where the exporter serves the spend summary.
const SpendPath = "/api/spend"

// maxBytes bounds the answer read (it is a few hundred bytes).
const maxBytes = 64 << 10

// Fetch asks the exporter at base (http://host:port) for its spend
// summary. A user and password in the URL are sent as basic auth.
func Fetch(ctx context.Context, client *http.Client, base string) (spend.JSON, error) {
	var s spend.JSON
	u, err := url.Parse(base)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return s, fmt.Errorf("statusline: not an exporter's URL")
	}
	u.Path = strings.TrimSuffix(u.Path, "/") + SpendPath
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return s, fmt.Errorf("statusline: %w", err)
	}
	resp, err := client.Do(req)
	if err != nil {
		return s, fmt.Errorf("statusline: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return s, fmt.Errorf("statusline: the exporter answered %s", resp.Status)
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, maxBytes)).Decode(&s); err != nil {
		return s, fmt.Errorf("statusline: %w", err)
	}
	if s.Version != spend.JSONVersion {
		return s, fmt.Errorf("statusline: spend version %d, want %d", s.Version, spend.JSONVersion)
	}
	return s, nil
}

// ANSI colors: dim for the words, yellow when less than a fifth of the
// entitlement is left.
const (
	dim   = "\x1b[2m"
	warn  = "\x1b[33m"
	reset = "\x1b[0m"
)

// Format is the line: "$1.23 today · $45.67 month · $7.50 left (1d 4h) ·
// out in ~3h at this pace"; billed dollars in brackets where the exporter
// knows them; the entitlement part only where the Amp server reported a
// window (what is left of it, else the share used), and its runway only
// while something is being spent (yellow when it runs out before the
// reset). The runway is said at now, so a summary a little old still
// counts down.
func Format(s spend.JSON, now time.Time, color bool) string {
	word := func(w string) string {
		if color {
			return dim + w + reset
		}
		return w
	}
	part := func(p spend.PeriodJSON, name string) string {
		out := usd(p.EstimatedUSD)
		if p.BilledUSD != nil {
			out += " (" + usd(*p.BilledUSD) + " billed)"
		}
		return out + " " + word(name)
	}
	parts := []string{part(s.Today, "today"), part(s.Month, "month")}
	if e := s.Entitlement; e != nil && (e.RemainingUSD != nil || e.UsedRatio != nil) {
		var p string
		if e.RemainingUSD != nil {
			left := usd(*e.RemainingUSD)
			if color && e.LimitUSD != nil && *e.LimitUSD > 0 && *e.RemainingUSD < *e.LimitUSD/5 {
				left = warn + left + reset
			}
			p = left + " " + word("left")
		} else {
			// Only the share is known: what is used of the window.
			used := strconv.FormatFloat(*e.UsedRatio*100, 'f', 0, 64) + "%"
			if color && *e.UsedRatio > 0.8 {
				used = warn + used + reset
			}
			p = used + " " + word("used")
		}
		if e.ResetsAt != nil {
			p += " (" + spend.Until(*e.ResetsAt, now) + ")"
		}
		parts = append(parts, p)
		if r := s.Runway; r != nil && e.RemainingUSD != nil {
			rw := runway.Runway{RemainingUSD: *e.RemainingUSD, PerHour: r.USDPerHour, Out: r.RunsOutAt}
			if e.ResetsAt != nil {
				rw.ResetsAt = *e.ResetsAt
			}
			phrase := rw.Phrase(now)
			if color && rw.BeforeReset() {
				phrase = warn + phrase + reset
			}
			parts = append(parts, phrase)
		}
	}
	return strings.Join(parts, " · ")
}

// usd is dollars with cents, grouped by thousands.
func usd(v float64) string {
	s := strconv.FormatFloat(v, 'f', 2, 64)
	whole, cents, _ := strings.Cut(s, ".")
	sign := ""
	if strings.HasPrefix(whole, "-") {
		sign, whole = "-", whole[1:]
	}
	var b strings.Builder
	for i, c := range whole {
		if i > 0 && (len(whole)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	return sign + "$" + b.String() + "." + cents
}
