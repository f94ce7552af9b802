// Package api is the client of Amp's workspace API (the Enterprise
// "External API v2", docs/workspace.md): a client-credentials token, GET
// requests only, within a request budget, with Retry-After and backoff,
// and lenient decoders that count every answer whose shape was not
// expected instead of failing on it.
package api

import "time"

// Thread is one row of the thread listing.
type Thread struct {
	ID             string
	CreatorUserID  string
	MainThreadID   string // set on a sub-thread
	ParentThreadID string
	// Zero when absent.
	CreatedAt, UpdatedAt, FirstSyncedAt time.Time
	// Repositories are the raw URLs, in the order listed (empty without
	// the contents scope).
	Repositories []string
	// SubThreadIDs are the ids of the nested subThreads, if any.
	SubThreadIDs []string
}

// ThreadPage is one page of the listing; NextCursor is "" on the last.
type ThreadPage struct {
	Threads    []Thread
	NextCursor string
}

// ModelUsage is a thread's usage of one model.
type ModelUsage struct {
	Provider, Model                                                                     string
	Requests, InputTokens, OutputTokens, CacheReadInputTokens, CacheCreationInputTokens uint64
	// USD is Amp's figure for this model.
	USD float64
}

// ThreadUsage is a thread's usage, its sub-threads rolled in.
type ThreadUsage struct {
	ThreadID     string
	SubThreadIDs []string
	USD          float64
	Models       []ModelUsage
}

// DailyUsage is the daily rollup over a window of days.
type DailyUsage struct {
	StartDate, EndDate string
	Days               []Day
}

// Day is one day of the rollup (its zone is not documented).
type Day struct {
	Date  string // YYYY-MM-DD
	Users []UserDay
}

// UserDay is one member's day.
type UserDay struct {
	UserID, Email                           string
	LinesAdded, LinesDeleted, LinesModified uint64
	// USD is metrics.usage.
	USD    float64
	Models []DayModel
}

// DayModel is one member's use of one model on one day.
type DayModel struct {
	Model                                                                                            string
	Requests, InputTokens, OutputTokens, CacheReadInputTokens, CacheCreationInputTokens, TotalTokens uint64
	USD                                                                                              float64
}

// ListQuery is a listing request; zero fields are not sent.
type ListQuery struct {
	Cursor        string
	After, Before time.Time
	Limit         int
}

// Endpoint names, the endpoint label of the client's hooks.
const (
	EndpointToken       = "token"
	EndpointThreads     = "threads"
	EndpointThreadUsage = "thread_usage"
	EndpointDailyUsage  = "daily_usage"
)

// Endpoints are the API's endpoints the exporter calls (the token
// endpoint is apart), for series that start at zero.
var Endpoints = []string{EndpointThreads, EndpointThreadUsage, EndpointDailyUsage}

// Reasons an answer's shape was not expected.
const (
	ReasonUnknownField   = "unknown_field"
	ReasonMissingField   = "missing_field"
	ReasonTypeMismatch   = "type_mismatch"
	ReasonNullItem       = "null_item"
	ReasonSumMismatch    = "sum_mismatch"
	ReasonOutOfRange     = "out_of_range"
	ReasonRepeatedCursor = "repeated_cursor"
)

// Reasons lists every reason, for series that start at zero.
var Reasons = []string{ReasonUnknownField, ReasonMissingField, ReasonTypeMismatch, ReasonNullItem,
	ReasonSumMismatch, ReasonOutOfRange, ReasonRepeatedCursor}
