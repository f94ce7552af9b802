// Package check is `amp-exporter workspace check`: with the configured
// credentials it fetches a token and one page of each endpoint of Amp's
// workspace API, and says per endpoint whether it answered, which scopes
// were granted or missing, which fields came against the ones expected,
// and a few decoded totals; Countable tells whether what came back can be
// counted. It prints neither the secret nor the token.
package check

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/amp-exporter/amp-exporter/source/workspace/api"
)

// Options configure a check.
type Options struct {
	// Client is built with Hooks left to the check (New sets them).
	Client api.Options
	// Scopes asked for, as configured (for the report).
	Scopes []string
	// PageSize is the listing's limit.
	PageSize int
	// Now is the present (the listing asks for the last RecentDays).
	Now time.Time
}

// RecentDays is how far back the listing is asked for (after=), so the
// thread whose usage is read is inside the API's 90-day window.
const RecentDays = 30

// usageTries is how many main threads' usage is asked for at most until
// one answers 200.
const usageTries = 3

// Endpoint is what one endpoint answered.
type Endpoint struct {
	Name    string
	Request string // method and path, without the host
	// Status is the last HTTP status ("" when no answer came).
	Statuses []string
	Err      error
	Skipped  string // why it was not asked
	Shape    *api.Shape
	// Totals are decoded figures, in order.
	Totals [][2]string
	// Notes are remarks on the answer (a parameter that seems ignored).
	Notes []string
}

// Report is the whole check.
type Report struct {
	APIURL, TokenURL, ClientAuth string
	Resource                     string
	ScopesAsked, ScopesGranted   []string
	TokenErr                     error
	Endpoints                    []*Endpoint
}

// Run makes the check: a token, one page of the listing, the usage of
// one of its main threads, a week of the daily rollup.
func Run(ctx context.Context, o Options) (*Report, error) {
	r := &Report{APIURL: o.Client.APIURL, TokenURL: o.Client.TokenURL, ClientAuth: o.Client.ClientAuth,
		Resource: o.Client.Resource, ScopesAsked: o.Scopes}
	if r.ClientAuth == "" {
		r.ClientAuth = api.AuthBasic
	}
	eps := map[string]*Endpoint{
		api.EndpointThreads:     {Name: api.EndpointThreads, Request: "GET /api/v2/threads"},
		api.EndpointThreadUsage: {Name: api.EndpointThreadUsage, Request: "GET /api/v2/threads/{id}/usage"},
		api.EndpointDailyUsage:  {Name: api.EndpointDailyUsage, Request: "GET /api/v2/workspace/analytics/daily-usage?lookbackDays=7"},
	}
	r.Endpoints = []*Endpoint{eps[api.EndpointThreads], eps[api.EndpointThreadUsage], eps[api.EndpointDailyUsage]}
	co := o.Client
	co.Hooks = api.Hooks{
		Request: func(endpoint, code string) {
			if e := eps[endpoint]; e != nil {
				e.Statuses = append(e.Statuses, code)
			}
		},
		Shape: func(endpoint string, s *api.Shape) {
			if e := eps[endpoint]; e != nil {
				e.Shape = s
			}
		},
	}
	co.MaxAttempts = 2 // a check should not wait out a long backoff
	c, err := api.New(co)
	if err != nil {
		return nil, err
	}
	if err := c.Token(ctx); err != nil {
		r.TokenErr = err
		for _, e := range r.Endpoints {
			e.Skipped = "no token"
		}
		return r, nil
	}
	r.ScopesGranted = c.GrantedScopes()

	th := eps[api.EndpointThreads]
	after := o.Now.Add(-RecentDays * 24 * time.Hour)
	th.Request = fmt.Sprintf("GET /api/v2/threads?limit=%d&after=(%d days ago)", o.PageSize, RecentDays)
	page, err := c.ListThreads(ctx, api.ListQuery{Limit: o.PageSize, After: after})
	if err == nil && len(page.Threads) == 0 {
		th.Notes = append(th.Notes, fmt.Sprintf("no thread first synced in the last %d days: asked again without after", RecentDays))
		th.Request = fmt.Sprintf("GET /api/v2/threads?limit=%d", o.PageSize)
		page, err = c.ListThreads(ctx, api.ListQuery{Limit: o.PageSize})
	}
	th.Err = err
	var mains []api.Thread
	if err == nil {
		subs := map[string]bool{}
		for _, t := range page.Threads {
			for _, id := range t.SubThreadIDs {
				subs[id] = true
			}
		}
		older, withRepo := 0, 0
		for _, t := range page.Threads {
			if !t.FirstSyncedAt.IsZero() && !t.FirstSyncedAt.After(after) && strings.Contains(th.Request, "after=") {
				older++
			}
			if len(t.Repositories) > 0 {
				withRepo++
			}
			if t.MainThreadID == "" && !subs[t.ID] {
				mains = append(mains, t)
			}
		}
		next := "no"
		if page.NextCursor != "" {
			next = "yes"
		}
		th.Totals = [][2]string{
			{"threads on the page", fmt.Sprint(len(page.Threads))},
			{"main threads", fmt.Sprint(len(mains))},
			{"sub-threads", fmt.Sprint(len(page.Threads) - len(mains))},
			{"with a repository", fmt.Sprint(withRepo)},
			{"next page", next},
		}
		if older > 0 {
			th.Notes = append(th.Notes, fmt.Sprintf("%d threads first synced before the after= bound: is listing_params.after the right name?", older))
		}
	}

	us := eps[api.EndpointThreadUsage]
	switch {
	case th.Err != nil:
		us.Skipped = "the listing failed"
	case len(mains) == 0:
		us.Skipped = "no main thread on the page"
	default:
		// The newest first: the likeliest inside the 90-day window.
		slices.Reverse(mains)
		for i, t := range mains[:min(len(mains), usageTries)] {
			u, err := c.ThreadUsage(ctx, t.ID)
			us.Err = err
			if errors.Is(err, api.ErrNotFound) && i+1 < min(len(mains), usageTries) {
				continue
			}
			if err == nil {
				us.Totals = [][2]string{
					{"$ of the thread", fmt.Sprintf("%.6f", u.USD)},
					{"models", fmt.Sprint(len(u.Models))},
					{"sub-threads", fmt.Sprint(len(u.SubThreadIDs))},
				}
				var tokens uint64
				for _, m := range u.Models {
					tokens += m.InputTokens + m.OutputTokens + m.CacheReadInputTokens + m.CacheCreationInputTokens
				}
				us.Totals = append(us.Totals, [2]string{"tokens", fmt.Sprint(tokens)})
			}
			break
		}
	}

	du := eps[api.EndpointDailyUsage]
	d, err := c.DailyUsage(ctx, "", 7)
	du.Err = err
	if err == nil {
		users := map[string]bool{}
		var usd, modelsUSD float64
		var lines uint64
		for _, day := range d.Days {
			for _, u := range day.Users {
				users[u.UserID] = true
				usd += u.USD
				lines += u.LinesAdded + u.LinesDeleted
				for _, m := range u.Models {
					modelsUSD += m.USD
				}
			}
		}
		du.Totals = [][2]string{
			{"days", fmt.Sprint(len(d.Days))},
			{"users", fmt.Sprint(len(users))},
			{"$ (metrics.usage)", fmt.Sprintf("%.6f", usd)},
			{"$ (models)", fmt.Sprintf("%.6f", modelsUSD)},
			{"lines added and deleted", fmt.Sprint(lines)},
		}
		if d.StartDate != "" {
			du.Totals = append(du.Totals, [2]string{"window", d.StartDate + " to " + d.EndDate})
		}
	}
	return r, nil
}
