// Package amyturn decodes the events of an Amy turn stream (the `event:` name
// and JSON `data:` of each Server-Sent Event) into typed records, and
// follows a turn's state so that each event counts once. It is pure: the
// caller passes the time an event was received.
//
// The catalogue and payloads are in docs/formats/amy-turn-events.md §3;
// fields marked assumed there are read when present and never required.
package amyturn

import (
	"errors"
	"fmt"
	"time"

	"github.com/amp-exporter/amp-exporter/internal/jsonscan"
)

// The event catalogue.
const (
	EventTurnStarted     = "turn.started"
	EventPhase           = "phase"
	EventRouting         = "routing"
	EventRephrase        = "rephrase"
	EventAgentStart      = "agent_start"
	EventAgentEnd        = "agent_end"
	EventValidationStart = "validation_start"
	EventValidationEnd   = "validation_end"
	EventSynthesisDelta  = "synthesis_delta"
	EventSynthesisDone   = "synthesis_done"
	EventFactCheck       = "fact_check"
	EventMemory          = "memory"
	EventCost            = "cost"
	EventCostWarning     = "cost_warning"
	EventTurnCompleted   = "turn.completed"
	EventTurnFailed      = "turn.failed"
	// EventUnknown labels events outside the catalogue.
	EventUnknown = "unknown"
)

// Catalogue lists every known event name.
var Catalogue = []string{
	EventTurnStarted, EventPhase, EventRouting, EventRephrase, EventAgentStart, EventAgentEnd,
	EventValidationStart, EventValidationEnd, EventSynthesisDelta, EventSynthesisDone,
	EventFactCheck, EventMemory, EventCost, EventCostWarning, EventTurnCompleted, EventTurnFailed,
}

var known = func() map[string]bool {
	m := map[string]bool{}
	for _, e := range Catalogue {
		m[e] = true
	}
	return m
}()

// Verdicts of validation_end.
const (
	VerdictValidated   = "validated"
	VerdictConditional = "conditional"
	VerdictRejected    = "rejected"
)

// Record is one decoded event.
type Record struct {
	// Name is the event name, or EventUnknown for one outside the
	// catalogue (an SSE event without `event:` is "message", unknown too).
	Name string

	At    time.Time // turn.started / turn.completed / turn.failed `at`, when present
	Agent string    // agent_start, agent_end, phase

	MainAgent  string // routing
	Supporting int    // routing: len(supporting_agents)

	CostUSD    float64 // agent_end cost_usd, turn.completed result.cost_usd, cost usd
	HasCost    bool
	DurationMs float64 // agent_end
	HasDur     bool

	Verdict     string // validation_end
	GatesPassed int64
	GatesTotal  int64
	HasGates    bool

	Issues  int // fact_check
	Entries int // memory

	CumulativeUSD float64 // cost_warning
}

// ErrBadData reports an event whose data is not a JSON object.
var ErrBadData = errors.New("amy event data is not a JSON object")

// Decoder decodes events, reusing its scanner.
type Decoder struct{ sc *jsonscan.Scanner }

// NewDecoder returns a decoder.
func NewDecoder() *Decoder { return &Decoder{sc: jsonscan.NewBytes(nil)} }

// Decode turns one event into a record. Unknown event names and fields are
// tolerated; data that is not JSON is an error wrapping ErrBadData (the
// caller counts it and the stream goes on). Events whose payload carries
// nothing counted (synthesis_done may have none) accept empty data.
func (d *Decoder) Decode(name, data string) (Record, error) {
	r := Record{Name: name}
	if !known[name] {
		r.Name = EventUnknown
	}
	if data == "" {
		return r, nil
	}
	sc := d.sc
	sc.ResetBytes([]byte(data))
	defer sc.ResetBytes(nil)
	if sc.Peek() != jsonscan.Object {
		return r, fmt.Errorf("%w (event %q)", ErrBadData, name)
	}
	obj := sc.Object()
	for key, ok := obj.Next(); ok; key, ok = obj.Next() {
		switch string(key) {
		case "at":
			if v, ok := sc.String(); ok {
				if t, err := time.Parse(time.RFC3339Nano, string(v)); err == nil {
					r.At = t
				}
			}
		case "agent":
			if v, ok := sc.String(); ok {
				r.Agent = string(v)
			}
		case "decision":
			d.decision(&r)
		case "cost_usd", "usd":
			r.CostUSD, r.HasCost = sc.Float()
		case "duration_ms":
			r.DurationMs, r.HasDur = sc.Float()
		case "verdict":
			if v, ok := sc.String(); ok {
				r.Verdict = string(v)
			}
		case "gates_passed":
			var ok bool
			if r.GatesPassed, ok = sc.Int(); ok {
				r.HasGates = true
			}
		case "gates_total":
			r.GatesTotal, _ = sc.Int()
		case "issues":
			r.Issues = d.count()
		case "entries":
			r.Entries = d.count()
		case "cumulative_usd":
			r.CumulativeUSD, _ = sc.Float()
		case "result":
			d.result(&r)
		default:
			sc.Skip() // text, claim, question, preview, error: not counted
		}
	}
	if err := sc.Err(); err != nil {
		return Record{Name: r.Name}, fmt.Errorf("%w (event %q): %v", ErrBadData, name, err)
	}
	if !sc.AtEOF() {
		return Record{Name: r.Name}, fmt.Errorf("%w (event %q): data after the JSON object", ErrBadData, name)
	}
	if r.Name != EventAgentEnd && r.Name != EventTurnCompleted && r.Name != EventCost {
		r.CostUSD, r.HasCost = 0, false
	}
	return r, nil
}

func (d *Decoder) decision(r *Record) {
	sc := d.sc
	obj := sc.Object()
	for key, ok := obj.Next(); ok; key, ok = obj.Next() {
		switch string(key) {
		case "main_agent":
			if v, ok := sc.String(); ok {
				r.MainAgent = string(v)
			}
		case "supporting_agents":
			r.Supporting = d.count()
		default:
			sc.Skip()
		}
	}
}

func (d *Decoder) result(r *Record) {
	sc := d.sc
	obj := sc.Object()
	for key, ok := obj.Next(); ok; key, ok = obj.Next() {
		if string(key) == "cost_usd" {
			r.CostUSD, r.HasCost = sc.Float()
			continue
		}
		sc.Skip() // answer: the bulk
	}
}

// count returns the length of an array value (anything else counts 0).
func (d *Decoder) count() int {
	n := 0
	arr := d.sc.Array()
	for arr.Next() {
		d.sc.Skip()
		n++
	}
	return n
}
