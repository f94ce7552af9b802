package store

import "time"

// Thread watcher fallback reasons: the values of
// amp_exporter_watcher_fallbacks_total's reason label. The watcher
// (source/threads) reports them; the exporter's metrics start each at zero.
const (
	FallbackOverflow   = "overflow"
	FallbackWatchError = "watch_error"
	FallbackAddFailed  = "add_failed"
)

// FallbackReasons lists the fallback reasons.
var FallbackReasons = []string{FallbackOverflow, FallbackWatchError, FallbackAddFailed}

// Entitlement is the Amp user's current entitlement window as the server
// source reports it; nil fields are unknown.
type Entitlement struct {
	Window       string
	LimitUSD     *float64
	RemainingUSD *float64
	UsedRatio    *float64
	ResetsAt     time.Time
}
