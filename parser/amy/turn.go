package amy

import (
	"strconv"
	"time"
)

// maxIDsRemembered bounds the ids remembered for a turn whose ids are not
// numbers (the recipe promises monotonic integers; this is the fallback).
const maxIDsRemembered = 100_000

// Turn follows one turn's events across reconnects and readers (a client
// reading through the proxy, and the exporter's own follower): the event id
// is the key, so each event counts once. Its fields are exported so the
// state can be saved with the counters.
type Turn struct {
	LastID    int64           `json:"last_id"`
	HasLastID bool            `json:"has_last_id,omitempty"`
	SeenIDs   map[string]bool `json:"seen_ids,omitempty"`

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
	Record    Record
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
	if t.duplicate(id) {
		return Observation{Duplicate: true, Record: r}
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
// decode), so that a replay of it is a duplicate too and a resume starts
// after it. It reports whether the id was seen before.
func (t *Turn) Skip(id string) (duplicate bool) { return t.duplicate(id) }

// duplicate reports whether an event id was seen, and remembers it.
func (t *Turn) duplicate(id string) bool {
	if id == "" {
		return false
	}
	if n, err := strconv.ParseInt(id, 10, 64); err == nil {
		if t.HasLastID && n <= t.LastID {
			return true
		}
		t.LastID, t.HasLastID = n, true
		return false
	}
	if t.SeenIDs[id] {
		return true
	}
	if t.SeenIDs == nil {
		t.SeenIDs = map[string]bool{}
	}
	if len(t.SeenIDs) < maxIDsRemembered {
		t.SeenIDs[id] = true
	}
	return false
}

// ResumeID is the Last-Event-Id to send when reconnecting ("" for none).
func (t *Turn) ResumeID() string {
	if t.HasLastID {
		return strconv.FormatInt(t.LastID, 10)
	}
	return ""
}
