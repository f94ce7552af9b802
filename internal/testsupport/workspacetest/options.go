package workspacetest

import "time"

// Options are the answers' shape: each open question about the real API
// is one of them, with the spec's best guess as the zero value's meaning
// (docs/workspace.md lists them).
type Options struct {
	// ClientAuth is how the token endpoint accepts the client's
	// credentials. Both at once are always refused.
	ClientAuth ClientAuth
	// Resource is what the token endpoint does with a `resource`
	// parameter.
	Resource ResourceRule
	// ScopeRequired refuses a token request without `scope`
	// (invalid_scope); otherwise such a token carries every granted scope.
	ScopeRequired bool
	// UngrantedScopeRefused refuses a token request that asks for a scope
	// the application was not granted (invalid_scope); otherwise the
	// token carries only the granted ones.
	UngrantedScopeRefused bool
	// TokenLifetime is expires_in (default one hour).
	TokenLifetime time.Duration
	// ExpireEarly, when > 0, makes tokens stop working after that long
	// while expires_in still says TokenLifetime.
	ExpireEarly time.Duration
	// TokenType is token_type (default "Bearer").
	TokenType string
	// TokenErrorPlain makes a token error the API's {"error": message}
	// instead of OAuth's {"error": code, "error_description": …}.
	TokenErrorPlain bool

	// Params are the query parameters' names.
	Params ParamNames
	// StrictParams refuses (400) a query parameter the endpoint does not
	// know; otherwise unknown parameters are ignored.
	StrictParams bool
	// ClampLimit clamps a `limit` over 100 to 100; otherwise it is 400.
	ClampLimit bool
	// SortDescByDefault lists newest first when no sort is given.
	SortDescByDefault bool

	// NullItems puts a null item into every array of every answer.
	NullItems bool
	// OmitOptional leaves out the optional fields: a thread's title,
	// createdAt, updatedAt, firstSyncedAt, repositories, subThreads (and
	// parentThreadID); a usage's subThreadIDs when empty and its list-price
	// estimate; the rollup's e-mails and metadata.activeUsers/totalUsers.
	// mainThreadID is kept: a sub-thread without it is a different
	// workspace, not a different shape.
	OmitOptional bool
	// NullOptional sends those fields as null instead of leaving them out.
	NullOptional bool
	// ExtraFields adds fields no client knows to every object.
	ExtraFields bool
	// ParentThreadID adds parentThreadID (= mainThreadID) to sub-threads.
	ParentThreadID bool

	// SubThreads is how the listing shows sub-threads.
	SubThreads SubThreadListing
	// SubThreadsAsIDs makes a nested subThreads a list of ids instead of
	// summaries.
	SubThreadsAsIDs bool
	// RepositoriesAsStrings makes repositories a list of URLs instead of
	// {url, dir} objects.
	RepositoriesAsStrings bool
	// UnsyncedEvery, when n > 0, lists every n-th main thread without
	// firstSyncedAt.
	UnsyncedEvery int
	// FilterMatchesUnsynced makes after/before match a thread listed
	// without firstSyncedAt; otherwise a filtered listing leaves it out.
	FilterMatchesUnsynced bool
	// FilterInclusive makes after and before include their bounds.
	FilterInclusive bool

	// RetentionFrom is what a thread's age for the usage window is
	// measured from.
	RetentionFrom AgeFrom
	// RetentionDays is the usage window (default 90).
	RetentionDays int
	// PastWindowStatus answers usage past the window (default 404); its
	// body is PastWindowError (default the same as an unknown thread's).
	PastWindowStatus int
	PastWindowError  string
	// ThreadUsageRounded makes a thread's usage answer carry its total
	// rounded to cents, so it is not the sum of its models' (which stay
	// exact).
	ThreadUsageRounded bool
	// TotalTokens is what the rollup's totalTokens counts.
	TotalTokens TotalTokensMode
	// SubThreadUsage is what a sub-thread's own usage request answers.
	SubThreadUsage SubThreadUsage
	// ListPrice is where estimatedProviderCostAtListPriceUSD is.
	ListPrice ListPricePlacement

	// DefaultLookback is lookbackDays when not given (default 30).
	DefaultLookback int
	// WindowOneDayLonger makes the window [endDate−lookbackDays,
	// endDate] instead of [endDate−lookbackDays+1, endDate].
	WindowOneDayLonger bool
	// MaxAge365 leaves out days more than 365 days before today (a
	// retention limit, not only a window size).
	MaxAge365 bool
	// UserIDFilter honours userID; otherwise it is ignored (or refused
	// with StrictParams).
	UserIDFilter bool
	// SkipEmptyDays leaves days without usage out of data[]; otherwise
	// they are there with no users.
	SkipEmptyDays bool
	// ZeroUsers lists every member on every day, with zeros where there
	// was no activity.
	ZeroUsers bool
	// DailyMaxBytes, when > 0, refuses (400) a rollup answer larger than
	// that.
	DailyMaxBytes int

	// GrowEachRequest makes today's figures grow before each API request
	// is answered (Grow).
	GrowEachRequest bool
	// RateLimitHeaders sends X-RateLimit-Limit/-Remaining/-Reset.
	RateLimitHeaders bool
	// Members serves GET /api/v2/workspace/members (a guess at its shape:
	// {members: [{id, email}], nextCursor}).
	Members bool
}

// ClientAuth is how the token endpoint takes client credentials.
type ClientAuth int

const (
	// AuthEither accepts HTTP Basic or the form body.
	AuthEither ClientAuth = iota
	// AuthBasic accepts only HTTP Basic.
	AuthBasic
	// AuthPost accepts only client_id and client_secret in the form.
	AuthPost
)

// ResourceRule is what the token endpoint does with `resource`.
type ResourceRule int

const (
	// ResourceAllowed ignores it.
	ResourceAllowed ResourceRule = iota
	// ResourceRequired refuses a request without
	// resource=https://ampcode.com/api/v2.
	ResourceRequired
	// ResourceRejected refuses a request with one.
	ResourceRejected
)

// ResourceURL is the `resource` the user-flow clients send.
const ResourceURL = "https://ampcode.com/api/v2"

// SubThreadListing is how sub-threads appear in the listing.
type SubThreadListing int

const (
	// SubThreadsRowsAndNested: rows of their own and in the parent's
	// subThreads.
	SubThreadsRowsAndNested SubThreadListing = iota
	// SubThreadsRowsOnly: rows of their own; the parent's subThreads is
	// empty.
	SubThreadsRowsOnly
	// SubThreadsNestedOnly: only in the parent's subThreads.
	SubThreadsNestedOnly
)

// AgeFrom is what the usage window counts from.
type AgeFrom int

const (
	// AgeFromCreated counts from createdAt.
	AgeFromCreated AgeFrom = iota
	// AgeFromFirstSynced counts from firstSyncedAt.
	AgeFromFirstSynced
	// AgeFromLastActivity counts from updatedAt.
	AgeFromLastActivity
)

// SubThreadUsage is what a sub-thread's usage answers.
type SubThreadUsage int

const (
	// SubUsageOwn: its own spend only.
	SubUsageOwn SubThreadUsage = iota
	// SubUsageNotFound: 404.
	SubUsageNotFound
	// SubUsageParent: its main thread's whole usage (a trap for a client
	// that adds it).
	SubUsageParent
)

// TotalTokensMode is what the rollup's totalTokens is.
type TotalTokensMode int

const (
	// TotalTokensAll: the four token counts added up.
	TotalTokensAll TotalTokensMode = iota
	// TotalTokensNoCache: input and output tokens only.
	TotalTokensNoCache
	// TotalTokensAbsent: the field is not sent.
	TotalTokensAbsent
)

// ListPricePlacement is where the list-price estimate sits.
type ListPricePlacement int

const (
	// ListPriceNone leaves it out.
	ListPriceNone ListPricePlacement = iota
	// ListPriceOnThread puts it on the usage answer.
	ListPriceOnThread
	// ListPriceOnModels puts it on each model entry of the usage answer.
	ListPriceOnModels
	// ListPriceEverywhere puts it on both and on the rollup's model entries.
	ListPriceEverywhere
)

// ParamNames are the query parameters' names (only limit's is certain).
type ParamNames struct {
	Limit, Cursor, After, Before, Sort string
	// NextCursor is the answer's field naming the next page.
	NextCursor                    string
	LookbackDays, EndDate, UserID string
}

func (o Options) withDefaults() Options {
	if o.TokenLifetime <= 0 {
		o.TokenLifetime = time.Hour
	}
	if o.TokenType == "" {
		o.TokenType = "Bearer"
	}
	if o.RetentionDays <= 0 {
		o.RetentionDays = 90
	}
	if o.PastWindowStatus == 0 {
		o.PastWindowStatus = 404
	}
	if o.PastWindowError == "" {
		o.PastWindowError = "thread not found"
	}
	if o.DefaultLookback <= 0 {
		o.DefaultLookback = 30
	}
	p := &o.Params
	for _, f := range []struct {
		v   *string
		def string
	}{{&p.Limit, "limit"}, {&p.Cursor, "cursor"}, {&p.After, "after"}, {&p.Before, "before"}, {&p.Sort, "sort"},
		{&p.NextCursor, "nextCursor"}, {&p.LookbackDays, "lookbackDays"}, {&p.EndDate, "endDate"}, {&p.UserID, "userID"}} {
		if *f.v == "" {
			*f.v = f.def
		}
	}
	return o
}
