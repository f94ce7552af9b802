package amyturn

import (
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"sort"
	"strconv"
	"time"
)

// Bounds of what one turn remembers to deduplicate its events: untrusted
// input (an upstream, or a client reading through the proxy) is bounded
// before it is stored.
const (
	// MaxIDBytes is the longest event id accepted; a longer one is
	// refused (counted, not stored).
	MaxIDBytes = 256
	// maxRanges bounds the ranges of seen numeric ids (16 bytes each); a
	// monotonic stream needs one, a resume from the middle two.
	maxRanges = 1024
	// maxHashes bounds the ids that are not numbers (16 bytes each).
	maxHashes = 4096
	// MaxStoredHashes is maxHashes, for a store trimming old state.
	MaxStoredHashes = maxHashes
	// turnOverhead is what a turn costs besides its ids (fields, map
	// entry, JSON), for the store's byte budget.
	turnOverhead = 256
)

// Reasons an event is refused rather than counted.
const (
	RefusedIDTooLong  = "event_id_too_long"
	RefusedTurnBudget = "turn_budget"
	// RefusedStateBudget is the store's: its budget for all turns is spent.
	RefusedStateBudget = "state_budget"
	// RefusedTooLarge is the stream's: the event was over the size limit.
	RefusedTooLarge = "event_too_large"
)

// IDRange is a run of seen numeric event ids, Lo..Hi inclusive.
type IDRange struct {
	Lo int64 `json:"lo"`
	Hi int64 `json:"hi"`
}

// IDHash is a fixed-size digest of an event id that is not a number.
type IDHash [16]byte

// Turn follows one turn's events across reconnects and readers (a client
// reading through the proxy, and the exporter's own follower): the event id
// is the key, so each event counts once, and an event is a replay only if
// its own id was seen (not merely a higher one). Numeric ids are kept as
// ranges, other ids as fixed-size hashes, both bounded. Its fields are
// exported so the state can be saved with the counters.
type Turn struct {
	Seen   []IDRange `json:"seen,omitempty"`
	Hashes []IDHash  `json:"hashes,omitempty"`

	// LastID, HasLastID and SeenIDs are read from state written by
	// earlier versions (a high-water mark and whole ids), and converted.
	LastID    int64           `json:"last_id,omitempty"`
	HasLastID bool            `json:"has_last_id,omitempty"`
	SeenIDs   map[string]bool `json:"seen_ids,omitempty"`

	hashSet map[IDHash]struct{} // index of Hashes, built on first use

	Started bool `json:"started,omitempty"`
	// StartedAt is turn.started's `at`; StartedRecv when the exporter
	// received it. Durations use the turn's own timestamps when both ends
	// carry one, the exporter's clock otherwise.
	StartedAt   time.Time `json:"started_at,omitzero"`
	StartedRecv time.Time `json:"started_recv,omitzero"`
	FirstToken  bool      `json:"first_token,omitempty"`
	Finished    bool      `json:"finished,omitempty"`
}

// Observation is what one event means for the counters.
type Observation struct {
	Duplicate bool
	// Refused says why an event was neither counted nor remembered
	// (one of the Refused* reasons), "" when it was not.
	Refused string
	Record  Record
	// Started is set by the turn's first turn.started.
	Started bool
	// Outcome is "completed" or "failed" on the turn's first terminal
	// event.
	Outcome     string
	Duration    time.Duration
	HasDuration bool
	// TTFT is turn.started → the first synthesis_delta.
	TTFT    time.Duration
	HasTTFT bool
}

// Turn outcomes.
const (
	OutcomeCompleted = "completed"
	OutcomeFailed    = "failed"
)

// Observe counts one event with SSE id `id` (empty when the server sent
// none, which cannot be deduplicated), received at `received`.
func (t *Turn) Observe(id string, r Record, received time.Time) Observation {
	return t.ObserveWithin(id, r, received, true)
}

// ObserveWithin is Observe for a caller with a budget: when grow is false,
// an id that would need more memory (a new range, a new hash) is refused
// with RefusedStateBudget.
func (t *Turn) ObserveWithin(id string, r Record, received time.Time, grow bool) Observation {
	dup, refused := t.remember(id, grow)
	if dup {
		return Observation{Duplicate: true, Record: r}
	}
	if refused != "" {
		return Observation{Refused: refused, Record: r}
	}
	o := Observation{Record: r}
	switch r.Name {
	case EventTurnStarted:
		if !t.Started {
			t.Started, t.StartedAt, t.StartedRecv = true, r.At, received
			o.Started = true
		}
	case EventSynthesisDelta:
		if t.Started && !t.FirstToken {
			t.FirstToken = true
			o.TTFT, o.HasTTFT = nonNegative(received.Sub(t.StartedRecv))
		}
	case EventTurnCompleted, EventTurnFailed:
		if t.Finished {
			break
		}
		t.Finished = true
		o.Outcome = OutcomeCompleted
		if r.Name == EventTurnFailed {
			o.Outcome = OutcomeFailed
		}
		if t.Started {
			if !t.StartedAt.IsZero() && !r.At.IsZero() {
				o.Duration, o.HasDuration = nonNegative(r.At.Sub(t.StartedAt))
			} else {
				o.Duration, o.HasDuration = nonNegative(received.Sub(t.StartedRecv))
			}
		}
	}
	return o
}

func nonNegative(d time.Duration) (time.Duration, bool) {
	if d < 0 {
		return 0, false
	}
	return d, true
}

// Skip remembers the id of an event that is not observed (its data did not
// decode, or it was too large), so that a replay of it is a duplicate too
// and a resume starts after it. It reports whether the id was seen before,
// or why it could not be remembered.
func (t *Turn) Skip(id string, grow bool) (duplicate bool, refused string) {
	return t.remember(id, grow)
}

// Bytes is what the turn's state costs, for byte budgets: the same figure
// in memory and, roughly, in the state file.
func (t *Turn) Bytes() int {
	return turnOverhead + 16*len(t.Seen) + 16*len(t.Hashes)
}

// remember reports whether an event id was seen, and remembers it.
func (t *Turn) remember(id string, grow bool) (dup bool, refused string) {
	t.upgrade()
	if id == "" {
		return false, ""
	}
	if len(id) > MaxIDBytes {
		return false, RefusedIDTooLong
	}
	if n, err := strconv.ParseInt(id, 10, 64); err == nil {
		return t.rememberNumber(n, grow)
	}
	h := hashID(id)
	if t.hashSet == nil {
		t.hashSet = make(map[IDHash]struct{}, len(t.Hashes))
		for _, x := range t.Hashes {
			t.hashSet[x] = struct{}{}
		}
	}
	if _, ok := t.hashSet[h]; ok {
		return true, ""
	}
	switch {
	case len(t.Hashes) >= maxHashes:
		return false, RefusedTurnBudget
	case !grow:
		return false, RefusedStateBudget
	}
	t.Hashes = append(t.Hashes, h)
	t.hashSet[h] = struct{}{}
	return false, ""
}

// rememberNumber keeps Seen sorted and disjoint, merging adjacent ranges.
func (t *Turn) rememberNumber(n int64, grow bool) (dup bool, refused string) {
	i := sort.Search(len(t.Seen), func(i int) bool { return t.Seen[i].Hi >= n })
	if i < len(t.Seen) && t.Seen[i].Lo <= n {
		return true, ""
	}
	// n lies between Seen[i-1] and Seen[i] (either may be absent).
	joinsLeft := i > 0 && t.Seen[i-1].Hi == n-1
	joinsRight := i < len(t.Seen) && t.Seen[i].Lo == n+1
	switch {
	case joinsLeft && joinsRight:
		t.Seen[i-1].Hi = t.Seen[i].Hi
		t.Seen = append(t.Seen[:i], t.Seen[i+1:]...)
	case joinsLeft:
		t.Seen[i-1].Hi = n
	case joinsRight:
		t.Seen[i].Lo = n
	default:
		if len(t.Seen) >= maxRanges {
			return false, RefusedTurnBudget
		}
		if !grow {
			return false, RefusedStateBudget
		}
		t.Seen = append(t.Seen, IDRange{})
		copy(t.Seen[i+1:], t.Seen[i:])
		t.Seen[i] = IDRange{Lo: n, Hi: n}
	}
	return false, ""
}

// upgrade converts state of earlier versions: everything up to the old
// high-water mark counts as seen, and whole ids become hashes.
func (t *Turn) upgrade() {
	if t.HasLastID {
		if t.LastID >= 0 && len(t.Seen) == 0 {
			t.Seen = []IDRange{{Lo: 0, Hi: t.LastID}}
		}
		t.LastID, t.HasLastID = 0, false
	}
	if t.SeenIDs != nil {
		for id := range t.SeenIDs {
			if len(t.Hashes) < maxHashes {
				t.Hashes = append(t.Hashes, hashID(id))
			}
		}
		t.SeenIDs = nil
		t.hashSet = nil
	}
}

func hashID(id string) IDHash {
	sum := sha256.Sum256([]byte(id))
	var h IDHash
	copy(h[:], sum[:])
	return h
}

// MarshalText stores a hash compactly in the state file.
func (h IDHash) MarshalText() ([]byte, error) {
	return []byte(base64.RawStdEncoding.EncodeToString(h[:])), nil
}

// UnmarshalText reads a hash written by MarshalText.
func (h *IDHash) UnmarshalText(b []byte) error {
	n, err := base64.RawStdEncoding.Decode(h[:], b)
	if err != nil || n != len(h) {
		return fmt.Errorf("event id hash %q: not %d base64 bytes", b, len(h))
	}
	return nil
}

// ResumeID is the Last-Event-Id to send when reconnecting ("" for none):
// the end of the run of ids seen from the turn's start (0 or 1). When the
// start was never seen (a client resumed mid-turn through the proxy), the
// whole turn is read again and what was seen is dropped as replays.
func (t *Turn) ResumeID() string {
	t.upgrade()
	if len(t.Seen) > 0 && t.Seen[0].Lo <= 1 {
		return strconv.FormatInt(t.Seen[0].Hi, 10)
	}
	return ""
}
