package streamjson

import (
	"bytes"
	"strconv"
)

// A run's identity. The same run can be read more than once: a client
// that resends after a dropped connection, a capture that is tailed while
// the same lines are piped to the ingest endpoint (`tee`), a capture
// replaced by a copy of itself. Each reading must count the run once, and
// two runs of one thread (a continued thread: the same session_id) must
// count as two.
//
// The CLI's lines carry no message or run id, so a run is known by its
// head: its session_id and the bytes of its lines up to and including
// the first assistant (or result) line. Two readings of one run have the
// same head; two runs of a continued thread differ there at the latest,
// as the first answer of the later run carries the usage of a longer
// context. Each line after the head is known by its place in the run (its
// n-th line), so the store counts a line of a run only where no reading
// got that far before (store.StreamStore). The lines of the head are held
// (in Run, saved with it) until the head is complete; a reading that ends
// first is known by the lines it has.

// RunKey identifies a run: a hash of its session_id and head.
type RunKey = string

// fnv64 is FNV-1a, the hash of a run's head (stable across versions and
// restarts: it is saved).
const (
	fnvOffset = 14695981039346656037
	fnvPrime  = 1099511628211
)

func fnvAdd(h uint64, b []byte) uint64 {
	for _, c := range b {
		h ^= uint64(c)
		h *= fnvPrime
	}
	// A separator, so that lines split differently hash differently.
	h ^= 0xff
	h *= fnvPrime
	return h
}

// ApplyLine is Apply for a line of a run with identity: it tells which run
// the line belongs to (Increments.RunKey) and its place there (RunLine),
// holding the increments of a run's first lines until its head is
// complete. line is the line as read (surrounding white space is not part
// of it).
func (r *Run) ApplyLine(m Message, line []byte) Increments {
	line = bytes.TrimSpace(line)
	if m.Kind == KindSystem && (m.Subtype == "init" || m.Subtype == "") {
		// A new run: the one before ends here (what it held, and its
		// incomplete execution, which Apply reports).
		out := r.closeHead()
		out.Executions = append(out.Executions, r.Apply(m).Executions...)
		r.beginHead(m.SessionID)
		r.noteLine(line)
		return out
	}
	if r.Lines == 0 {
		r.beginHead(m.SessionID) // the first line read, or after a result
	}
	r.noteLine(line)
	inc := r.Apply(m)
	if r.Session == "" {
		r.Lines = 0 // no session, no identity: counted as it comes
		return inc
	}
	if r.Key == "" {
		if m.Kind != KindAssistant && m.Kind != KindResult {
			if r.Held == nil {
				r.Held = &Increments{}
			}
			r.Held.add(inc)
			return Increments{SessionID: r.Session}
		}
		r.Key = r.keyOfHead()
		if r.Held != nil {
			inc.add(*r.Held)
			r.Held = nil
		}
	}
	inc.RunKey, inc.RunLine = r.Key, r.Lines
	if m.Kind == KindResult {
		r.clearHead() // the next line begins a run
	}
	return inc
}

// Finish reports the end of the reading (End, for a run with identity):
// what the run held, and its incomplete execution when it was open.
func (r *Run) Finish() (Increments, bool) {
	out := r.closeHead()
	if ex, open := r.End(); open {
		out.Executions = append(out.Executions, ex)
	}
	return out, !out.empty()
}

func (r *Run) beginHead(session string) {
	r.clearHead()
	r.Session = session
	r.Hash = fnvAdd(fnvOffset, []byte(session))
}

func (r *Run) noteLine(line []byte) {
	r.Lines++
	if r.Key == "" {
		r.Hash = fnvAdd(r.Hash, line)
	}
}

func (r *Run) keyOfHead() RunKey {
	return strconv.FormatUint(fnvAdd(r.Hash, []byte(strconv.Itoa(r.Lines))), 16)
}

// closeHead ends the run read so far: what its head held (keyed by the
// lines it has when the head never completed), or nothing but its key.
func (r *Run) closeHead() Increments {
	if r.Session == "" || r.Lines == 0 {
		r.clearHead()
		return Increments{}
	}
	if r.Key == "" {
		r.Key = r.keyOfHead()
	}
	var out Increments
	if r.Held != nil {
		out = *r.Held
	}
	out.SessionID, out.RunKey, out.RunLine = r.Session, r.Key, r.Lines
	r.clearHead()
	return out
}

func (r *Run) clearHead() {
	r.Session, r.Lines, r.Hash, r.Key, r.Held = "", 0, 0, "", nil
}

// add merges what b adds into inc (held lines: messages, prompts, tool
// calls, executions, denials; never tokens, which only the decisive line
// of a head carries).
func (inc *Increments) add(b Increments) {
	inc.UserMessages += b.UserMessages
	inc.AssistantMessages += b.AssistantMessages
	inc.Prompts += b.Prompts
	inc.ToolCalls = append(inc.ToolCalls, b.ToolCalls...)
	inc.Executions = append(inc.Executions, b.Executions...)
	inc.Denials = append(inc.Denials, b.Denials...)
	inc.Commits += b.Commits
	inc.PullRequests += b.PullRequests
	inc.Pushes += b.Pushes
	inc.FailedPushes += b.FailedPushes
	if b.ShipModel != "" {
		inc.ShipModel = b.ShipModel
	}
	if inc.Tokens == nil && b.Tokens != nil {
		inc.Tokens, inc.Model = b.Tokens, b.Model
	}
	if inc.SessionID == "" {
		inc.SessionID = b.SessionID
	}
}

func (inc Increments) empty() bool {
	return inc.UserMessages == 0 && inc.AssistantMessages == 0 && inc.Prompts == 0 && inc.Tokens == nil &&
		len(inc.ToolCalls) == 0 && len(inc.Executions) == 0 && len(inc.Denials) == 0
}
