package streamjson

import (
	"sort"

	"github.com/amp-exporter/amp-exporter/parser/shellcmd"
	"github.com/amp-exporter/amp-exporter/parser/toolname"
)

// UnknownModel labels assistant lines without message.model (the CLI does
// not emit it yet).
const UnknownModel = "unknown"

// Execution outcomes (amp_executions_total{outcome}).
const (
	OutcomeSuccess    = "success"
	OutcomeError      = "error"
	OutcomeIncomplete = "incomplete" // the stream ended, or a new run began, before a result line
)

// maxPendingTools bounds the tool_use ids a run remembers while it waits
// for their results; a hostile stream cannot grow it without limit.
const maxPendingTools = 4096

// Run follows one stream of lines (a tailed file, an ingest request) and
// turns each message into increments. Its state is what must survive a
// restart to count the rest of a run correctly, so it is exported.
type Run struct {
	Open bool `json:"open"` // a run has started and not ended with a result
	// SawUsage: an assistant line of this run carried usage, so a result's
	// (cumulative, SDK-declared) usage would count it twice.
	SawUsage bool `json:"saw_usage"`
	// Pending maps tool_use ids to tool names until their result arrives.
	Pending map[string]string `json:"pending,omitempty"`
	// Intents maps the tool_use ids of pending shell calls that can
	// commit, push or open a pull request to what they can do.
	Intents map[string]shellcmd.Intent `json:"intents,omitempty"`
	// Models maps the same ids to the model of the assistant line that
	// made the call, so that what it commits counts under that model.
	Models map[string]string `json:"models,omitempty"`

	// The run's identity (identity.go), for ApplyLine: its session, how
	// many of its lines were read, the hash of its head while the head is
	// read, its key once known, and what the head's lines add until then.
	Session string      `json:"session,omitempty"`
	Lines   int         `json:"lines,omitempty"`
	Hash    uint64      `json:"hash,omitempty"`
	Key     RunKey      `json:"key,omitempty"`
	Held    *Increments `json:"held,omitempty"`
}

// ToolCall is one finished tool call.
type ToolCall struct{ Tool, Status string }

// Execution is a finished (or abandoned) run.
type Execution struct {
	Outcome     string
	Seconds     float64
	HasDuration bool
	Turns       float64
	HasTurns    bool
}

// Increments are what one message adds to the counters.
type Increments struct {
	UserMessages      int
	AssistantMessages int
	Prompts           int
	Model             string // for Tokens and Finished
	Tokens            *Usage
	StopReason        string // set for assistant lines
	ToolCalls         []ToolCall
	Executions        []Execution // a result, and/or an abandoned previous run
	Denials           []string    // normalized tool names
	// Commits, PullRequests, Pushes and FailedPushes are what the line's
	// shell results whose run is done did (parser/shellcmd).
	Commits      int `json:",omitempty"`
	PullRequests int `json:",omitempty"`
	Pushes       int `json:",omitempty"`
	FailedPushes int `json:",omitempty"`
	// ShipModel is the model of the assistant line whose tool_use made the
	// shell call that committed or opened a pull request (the last such
	// call's when the line carries several results).
	ShipModel string `json:",omitempty"`
	// SessionID is the session_id of the line (the run's Amp thread id),
	// and Result says the line was the run's result.
	SessionID string `json:"-"`
	Result    bool   `json:"-"`
	// RunKey is the run the line belongs to and RunLine its place there
	// (ApplyLine); "" for a line read without identity.
	RunKey  RunKey `json:"-"`
	RunLine int    `json:"-"`
}

// Apply counts one message of the run.
func (r *Run) Apply(m Message) Increments {
	inc := Increments{SessionID: m.SessionID, Result: m.Kind == KindResult}
	switch m.Kind {
	case KindSystem:
		if m.Subtype == "init" || m.Subtype == "" {
			if r.Open {
				inc.Executions = append(inc.Executions, Execution{Outcome: OutcomeIncomplete})
			}
			r.reset()
			r.Open = true
		}
	case KindUser:
		r.Open = true
		inc.UserMessages = 1
		if m.Prompt {
			inc.Prompts = 1
		}
		for _, tr := range m.ToolResults {
			name, ok := r.Pending[tr.ToolUseID]
			if ok {
				delete(r.Pending, tr.ToolUseID)
			} else {
				name = ""
			}
			inc.ToolCalls = append(inc.ToolCalls, ToolCall{Tool: toolname.Normalize(name), Status: tr.Status})
			in, ok := r.Intents[tr.ToolUseID]
			if !ok {
				continue
			}
			delete(r.Intents, tr.ToolUseID)
			model := r.Models[tr.ToolUseID]
			delete(r.Models, tr.ToolUseID)
			if model == "" {
				model = UnknownModel // saved by a version that kept no model
			}
			if tr.Status != "done" {
				continue
			}
			exit := tr.Exit
			if !tr.HasExit {
				exit = -1 // no exit code: read as failed (shellcmd.Recognize)
			}
			res := in.Result(tr.Proof, exit)
			inc.Commits += res.Commits
			inc.PullRequests += res.PullRequests
			inc.Pushes += res.Pushes
			inc.FailedPushes += res.FailedPushes
			if res.Commits > 0 || res.PullRequests > 0 {
				inc.ShipModel = model
			}
		}
	case KindAssistant:
		r.Open = true
		inc.AssistantMessages = 1
		inc.Model = m.Model
		if inc.Model == "" {
			inc.Model = UnknownModel
		}
		inc.StopReason = m.StopReason
		if inc.StopReason == "" {
			inc.StopReason = "unknown"
		}
		if m.Usage != nil {
			inc.Tokens = m.Usage
			r.SawUsage = true
		}
		for _, tu := range m.ToolUses {
			if tu.ID == "" {
				continue
			}
			if r.Pending == nil {
				r.Pending = map[string]string{}
			}
			if len(r.Pending) < maxPendingTools {
				r.Pending[tu.ID] = tu.Name
			}
			if tu.Intent.Any() && toolname.Normalize(tu.Name) == toolname.Bash && len(r.Intents) < maxPendingTools {
				if r.Intents == nil {
					r.Intents = map[string]shellcmd.Intent{}
				}
				r.Intents[tu.ID] = tu.Intent
				if r.Models == nil {
					r.Models = map[string]string{}
				}
				r.Models[tu.ID] = inc.Model
			}
		}
	case KindResult:
		ex := Execution{Outcome: OutcomeSuccess}
		if m.IsError || (m.Subtype != "" && m.Subtype != "success") {
			ex.Outcome = OutcomeError
		}
		if m.HasDuration {
			ex.Seconds, ex.HasDuration = float64(m.DurationMs)/1000, true
		}
		if m.HasTurns {
			ex.Turns, ex.HasTurns = float64(m.NumTurns), true
		}
		inc.Executions = append(inc.Executions, ex)
		if m.ResultUsage != nil && !r.SawUsage {
			inc.Model = UnknownModel
			inc.Tokens = m.ResultUsage
		}
		inc.Denials = denials(m)
		r.reset()
	}
	return inc
}

// End reports the stream's end: a run still open never got its result (the
// process was killed, the upload was cut).
func (r *Run) End() (Execution, bool) {
	if !r.Open {
		return Execution{}, false
	}
	r.reset()
	return Execution{Outcome: OutcomeIncomplete}, true
}

func (r *Run) reset() {
	r.Open, r.SawUsage, r.Pending, r.Intents, r.Models = false, false, nil, nil, nil
}

// denials merges permission_denials with the tools named in the CLI's
// approval error, normalized and without repeats.
func denials(m Message) []string {
	set := map[string]bool{}
	for _, t := range m.PermissionDenials {
		set[toolname.Normalize(t)] = true
	}
	for _, t := range deniedTools(m.Error) {
		set[toolname.Normalize(t)] = true
	}
	out := make([]string, 0, len(set))
	for t := range set {
		out = append(out, t)
	}
	sort.Strings(out)
	return out
}
