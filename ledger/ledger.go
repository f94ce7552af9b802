// Package ledger holds the unit of the usage ledger: what was spent, per
// 15-minute bucket of UTC time, thread, model and repository. The exporter
// keeps one as it counts (store.ThreadStore.Ledger), the report command
// builds one from a replay of the sources, and both group it into days,
// months and threads the same way (package report), so a report made
// from a running exporter and one made from the sources are one report.
//
// Every time zone in use today is a whole number of quarter hours away
// from UTC (India +05:30, Nepal +05:45, the Chathams +12:45), so the
// buckets add up to days in any of them exactly.
package ledger

import (
	"cmp"
	"math"
	"strings"
	"time"

	"github.com/amp-exporter/amp-exporter/internal/sat"
)

// Bucket is the ledger's unit of time.
const Bucket = 15 * time.Minute

// BucketMs is Bucket in milliseconds.
const BucketMs = int64(Bucket / time.Millisecond)

// Undated is the Start of usage that carries no time at all (an item of a
// thread without any timestamp): it is in the totals of the exporter's
// counters but in no period.
const Undated = math.MinInt64

// StartOf is the start (epoch ms) of the bucket holding the time at
// (epoch ms); Undated for at <= 0 (no time).
func StartOf(at int64) int64 {
	if at <= 0 {
		return Undated
	}
	return at - at%BucketMs
}

// Usage is what was spent: tokens by type, credits in nano-credits and the
// estimated cost in 1e-10 USD (the store's fixed point: sums are exact
// whatever order they are made in).
type Usage struct {
	Input         int64 `json:"input,omitempty"`
	Output        int64 `json:"output,omitempty"`
	CacheCreation int64 `json:"cache_creation,omitempty"`
	CacheRead     int64 `json:"cache_read,omitempty"`
	// Credits is in 1e-9 credits.
	Credits int64 `json:"credits,omitempty"`
	// Cost is the estimated cost in 1e-10 USD.
	Cost int64 `json:"cost,omitempty"`
	// Commits and PullRequests are what the thread's shell calls made
	// (amp_commits_total, amp_pull_requests_total); their entries name no
	// model (Entry.Model is "").
	Commits      int64 `json:"commits,omitempty"`
	PullRequests int64 `json:"pull_requests,omitempty"`
}

// Add adds u to v. Each figure saturates as the store's counters do: usage
// the store counted at the top of an int64 is not a negative total.
func (v *Usage) Add(u Usage) {
	v.Input = sat.Add(v.Input, u.Input)
	v.Output = sat.Add(v.Output, u.Output)
	v.CacheCreation = sat.Add(v.CacheCreation, u.CacheCreation)
	v.CacheRead = sat.Add(v.CacheRead, u.CacheRead)
	v.Credits = sat.Add(v.Credits, u.Credits)
	v.Cost = sat.Add(v.Cost, u.Cost)
	v.Commits = sat.Add(v.Commits, u.Commits)
	v.PullRequests = sat.Add(v.PullRequests, u.PullRequests)
}

// Tokens is the sum of the four token types (ccusage's totalTokens),
// saturated.
func (v Usage) Tokens() int64 {
	return sat.Add(sat.Add(v.Input, v.Output), sat.Add(v.CacheCreation, v.CacheRead))
}

// IsZero reports whether nothing was spent.
func (v Usage) IsZero() bool { return v == Usage{} }

// Entry is one row of the ledger: what one thread spent on one model in
// one bucket.
type Entry struct {
	// Start is the bucket's start, epoch ms (UTC), or Undated.
	Start int64 `json:"start"`
	// Session is the thread's id.
	Session string `json:"session"`
	Model   string `json:"model"`
	// Repo is the thread's repository as the exporter's repository label
	// gives it; "" for none (or with the label off).
	Repo string `json:"repository,omitempty"`
	Usage
}

// Bill is what the Amp server billed one thread within [Start, End) (epoch
// ms, UTC): the thread's threadDisplayCostInfo asked with start and end.
// Bills are kept per day of the exporter's time zone, so they group into
// days and months of that zone exactly, and into those of another zone by
// the day they start in.
type Bill struct {
	Start   int64  `json:"start"`
	End     int64  `json:"end"`
	Session string `json:"session"`
	Repo    string `json:"repository,omitempty"`
	// USD is in 1e-10 USD.
	USD int64 `json:"usd"`
}

// Compare orders entries by time, thread, model and repository: the order
// ledgers are handed out in. It compares only as far as it must (a
// ledger of a year holds hundreds of thousands of entries to sort).
func Compare(a, b Entry) int {
	if a.Start != b.Start {
		return cmp.Compare(a.Start, b.Start)
	}
	if c := strings.Compare(a.Session, b.Session); c != 0 {
		return c
	}
	if c := strings.Compare(a.Model, b.Model); c != 0 {
		return c
	}
	return strings.Compare(a.Repo, b.Repo)
}
