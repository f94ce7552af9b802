package amyturn

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"io"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"testing/iotest"
	"time"

	"github.com/amp-exporter/amp-exporter/parser/sse"
)

var update = flag.Bool("update", false, "rewrite testdata/golden/*.json")

// recvBase is the receipt time of a golden stream's first event; event i
// (0-based) is received i seconds later.
var recvBase = time.Date(2025, 6, 3, 9, 14, 7, 0, time.UTC)

// goldenStep is one dispatched SSE event and what it meant.
type goldenStep struct {
	ID        string         `json:"id"`
	SSEEvent  string         `json:"sse_event"`
	Error     string         `json:"error,omitempty"`
	Record    map[string]any `json:"record,omitempty"`
	Duplicate bool           `json:"duplicate,omitempty"`
	Started   bool           `json:"started,omitempty"`
	Outcome   string         `json:"outcome,omitempty"`
	Duration  string         `json:"duration,omitempty"`
	TTFT      string         `json:"ttft,omitempty"`
}

type goldenResult struct {
	Steps    []goldenStep   `json:"steps"`
	Counts   map[string]int `json:"counts"` // per Record.Name, duplicates and bad data excluded
	Bad      int            `json:"bad"`
	Turn     Turn           `json:"turn"`
	ResumeID string         `json:"resume_id"`
	SSEError string         `json:"sse_error,omitempty"`
}

// recordFields renders a Record with its zero fields left out.
func recordFields(r Record) map[string]any {
	out := map[string]any{}
	v := reflect.ValueOf(r)
	for i := 0; i < v.NumField(); i++ {
		f := v.Field(i)
		if f.IsZero() {
			continue
		}
		name := v.Type().Field(i).Name
		if t, ok := f.Interface().(time.Time); ok {
			out[name] = t.UTC().Format(time.RFC3339Nano)
			continue
		}
		out[name] = f.Interface()
	}
	return out
}

// run decodes a whole stream: parser/sse, then Decoder, then Turn.Observe,
// with the stream fed twice (the second time replaying everything, as a
// reconnect without Last-Event-ID would) when replay is set.
func run(r io.Reader, replay []byte) goldenResult {
	res := goldenResult{Steps: []goldenStep{}, Counts: map[string]int{}}
	var turn Turn
	dec := NewDecoder()
	i := 0
	feed := func(r io.Reader) {
		p := sse.NewParser(r, sse.Options{})
		for {
			ev, err := p.Next()
			if err != nil {
				if !errors.Is(err, io.EOF) {
					res.SSEError = err.Error()
				}
				return
			}
			step := goldenStep{ID: ev.ID, SSEEvent: ev.Event}
			rec, derr := dec.Decode(ev.Event, ev.Data)
			if derr != nil {
				if !errors.Is(derr, ErrBadData) {
					step.Error = "NOT ErrBadData: "
				}
				step.Error += derr.Error()
				turn.Skip(ev.ID, true) // as the store does: a resume goes on after it
				res.Bad++
				res.Steps = append(res.Steps, step)
				i++
				continue
			}
			o := turn.Observe(ev.ID, rec, recvBase.Add(time.Duration(i)*time.Second))
			i++
			step.Record = recordFields(o.Record)
			step.Duplicate, step.Started, step.Outcome = o.Duplicate, o.Started, o.Outcome
			if o.HasDuration {
				step.Duration = o.Duration.String()
			}
			if o.HasTTFT {
				step.TTFT = o.TTFT.String()
			}
			if !o.Duplicate {
				res.Counts[rec.Name]++
			}
			res.Steps = append(res.Steps, step)
		}
	}
	feed(r)
	if replay != nil {
		feed(bytes.NewReader(replay))
	}
	res.Turn = turn
	res.ResumeID = turn.ResumeID()
	return res
}

func TestGolden(t *testing.T) {
	inputs, err := filepath.Glob("testdata/*.sse")
	if err != nil {
		t.Fatal(err)
	}
	if len(inputs) < 4 {
		t.Fatalf("want at least 4 recorded streams in testdata, found %d", len(inputs))
	}
	for _, in := range inputs {
		name := strings.TrimSuffix(filepath.Base(in), ".sse")
		t.Run(name, func(t *testing.T) {
			raw, err := os.ReadFile(in)
			if err != nil {
				t.Fatal(err)
			}
			got := run(bytes.NewReader(raw), nil)
			// However the bytes arrive, the result is the same.
			if again := run(iotest.OneByteReader(bytes.NewReader(raw)), nil); !reflect.DeepEqual(again, got) {
				t.Errorf("one byte at a time differs from a whole read")
			}
			// A full replay (a reconnect without Last-Event-ID) adds only
			// duplicates: every count stays the same.
			replayed := run(bytes.NewReader(raw), raw)
			if !reflect.DeepEqual(replayed.Counts, got.Counts) {
				t.Errorf("a full replay changed the counts: %v, want %v", replayed.Counts, got.Counts)
			}
			for _, s := range replayed.Steps[len(got.Steps):] {
				if s.Record != nil && !s.Duplicate && s.ID != "" {
					t.Errorf("replayed event id %s counted again", s.ID)
				}
			}
			b, err := json.MarshalIndent(got, "", "  ")
			if err != nil {
				t.Fatal(err)
			}
			b = append(b, '\n')
			golden := filepath.Join("testdata", "golden", name+".json")
			if *update {
				if err := os.WriteFile(golden, b, 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run go test -update to create it)", err)
			}
			if !bytes.Equal(b, want) {
				t.Errorf("%s differs from the golden file; got:\n%s", golden, b)
			}
		})
	}
}

// TestGoldenCompletedTurnFacts checks the completed stream's meaning
// independently of the golden file, so a golden file regenerated from a
// broken decoder does not go unnoticed.
func TestGoldenCompletedTurnFacts(t *testing.T) {
	raw, err := os.ReadFile("testdata/completed.sse")
	if err != nil {
		t.Fatal(err)
	}
	res := run(bytes.NewReader(raw), nil)
	wantCounts := map[string]int{
		EventTurnStarted: 1, EventPhase: 3, EventRouting: 1, EventRephrase: 1,
		EventAgentStart: 2, EventAgentEnd: 2, EventValidationStart: 3, EventValidationEnd: 3,
		EventSynthesisDelta: 5, EventSynthesisDone: 1, EventFactCheck: 1, EventMemory: 1,
		EventCost: 1, EventCostWarning: 1, EventTurnCompleted: 1,
	}
	if !reflect.DeepEqual(res.Counts, wantCounts) {
		t.Errorf("counts %v, want %v", res.Counts, wantCounts)
	}
	if res.Bad != 0 || res.SSEError != "" {
		t.Errorf("bad %d, sse error %q", res.Bad, res.SSEError)
	}
	var verdicts []string
	var passed, total int64
	var agentCost, turnCost float64
	var issues, entries, supporting int
	var duration, ttft string
	for _, s := range res.Steps {
		switch s.SSEEvent {
		case EventValidationEnd:
			verdicts = append(verdicts, s.Record["Verdict"].(string))
			passed += s.Record["GatesPassed"].(int64)
			total += s.Record["GatesTotal"].(int64)
		case EventAgentEnd:
			agentCost += s.Record["CostUSD"].(float64)
		case EventTurnCompleted:
			turnCost = s.Record["CostUSD"].(float64)
			duration = s.Duration
		case EventFactCheck:
			issues = s.Record["Issues"].(int)
		case EventMemory:
			entries = s.Record["Entries"].(int)
		case EventRouting:
			supporting = s.Record["Supporting"].(int)
		case EventSynthesisDelta:
			if s.TTFT != "" {
				ttft = s.TTFT
			}
		}
		if s.SSEEvent != EventAgentEnd && s.SSEEvent != EventTurnCompleted && s.SSEEvent != EventCost {
			if _, ok := s.Record["HasCost"]; ok {
				t.Errorf("event %s %s carries a cost", s.ID, s.SSEEvent)
			}
		}
	}
	if want := []string{"validated", "conditional", "rejected"}; !reflect.DeepEqual(verdicts, want) {
		t.Errorf("verdicts %v, want %v", verdicts, want)
	}
	if passed != 9 || total != 14 {
		t.Errorf("gates %d/%d, want 9/14", passed, total)
	}
	if math.Abs(agentCost-0.1236) > 1e-12 || turnCost != 0.1288 {
		t.Errorf("agent cost %v turn cost %v, want 0.1236 and 0.1288", agentCost, turnCost)
	}
	if issues != 2 || entries != 3 || supporting != 2 {
		t.Errorf("issues %d entries %d supporting %d, want 2 3 2", issues, entries, supporting)
	}
	// Both ends carry `at`: 09:14:07.120 → 09:17:49.480, not the 26 s the
	// receipt times span.
	if duration != "3m42.36s" {
		t.Errorf("duration %q, want 3m42.36s (from the turn's own `at`)", duration)
	}
	// Event 17 (index 16) is received 16 s after turn.started.
	if ttft != "16s" {
		t.Errorf("ttft %q, want 16s", ttft)
	}
	if res.ResumeID != "27" || !res.Turn.Finished {
		t.Errorf("resume id %q finished %v", res.ResumeID, res.Turn.Finished)
	}
}

func TestDecodeFields(t *testing.T) {
	d := NewDecoder()
	for _, tc := range []struct {
		name, data string
		want       Record
	}{
		{EventTurnStarted, `{"turn_id":"t","at":"2025-06-03T09:14:07.120+02:00"}`,
			Record{Name: EventTurnStarted, At: time.Date(2025, 6, 3, 7, 14, 7, 120e6, time.UTC)}},
		{EventTurnStarted, `{"turn_id":"t","at":1717406047}`, Record{Name: EventTurnStarted}},
		{EventTurnStarted, `{"turn_id":"t","at":"yesterday"}`, Record{Name: EventTurnStarted}},
		{EventPhase, `{"agent":"orchestrator","phase":"x","detail":"y"}`, Record{Name: EventPhase, Agent: "orchestrator"}},
		{EventRouting, `{"decision":{"main_agent":"A","supporting_agents":["B","C","D"]}}`,
			Record{Name: EventRouting, MainAgent: "A", Supporting: 3}},
		{EventRouting, `{"decision":"A"}`, Record{Name: EventRouting}},
		{EventRouting, `{"decision":{"main_agent":7,"supporting_agents":{"B":1}}}`, Record{Name: EventRouting}},
		{EventAgentEnd, `{"agent":"A","cost_usd":0.5,"duration_ms":1500.5,"preview":"…"}`,
			Record{Name: EventAgentEnd, Agent: "A", CostUSD: 0.5, HasCost: true, DurationMs: 1500.5, HasDur: true}},
		{EventAgentEnd, `{"agent":"A","cost_usd":"0.5","duration_ms":null}`, Record{Name: EventAgentEnd, Agent: "A"}},
		{EventValidationEnd, `{"finding_id":"f","verdict":"conditional","gates_passed":3,"gates_total":5,"reason":"r"}`,
			Record{Name: EventValidationEnd, Verdict: "conditional", GatesPassed: 3, GatesTotal: 5, HasGates: true}},
		{EventValidationEnd, `{"verdict":"validated"}`, Record{Name: EventValidationEnd, Verdict: "validated"}},
		{EventFactCheck, `{"issues":[{},{},{"a":[1]}]}`, Record{Name: EventFactCheck, Issues: 3}},
		{EventFactCheck, `{"issues":3}`, Record{Name: EventFactCheck}},
		{EventMemory, `{"entries":[]}`, Record{Name: EventMemory}},
		{EventMemory, `{"entries":["a","b"]}`, Record{Name: EventMemory, Entries: 2}},
		{EventCost, `{"usd":0.25}`, Record{Name: EventCost, CostUSD: 0.25, HasCost: true}},
		{EventCostWarning, `{"cumulative_usd":1.5,"usd":9}`, Record{Name: EventCostWarning, CumulativeUSD: 1.5}},
		// A cost field on an event that carries no cost is ignored.
		{EventPhase, `{"cost_usd":1}`, Record{Name: EventPhase}},
		{EventTurnCompleted, `{"turn_id":"t","result":{"answer":"a \"quoted\" }{","cost_usd":0.1288}}`,
			Record{Name: EventTurnCompleted, CostUSD: 0.1288, HasCost: true}},
		{EventTurnCompleted, `{"turn_id":"t","result":null}`, Record{Name: EventTurnCompleted}},
		{EventTurnFailed, `{"turn_id":"t","error":{"message":"boom","cost_usd":3}}`, Record{Name: EventTurnFailed}},
		{EventSynthesisDone, ``, Record{Name: EventSynthesisDone}},
		{EventSynthesisDone, `{}`, Record{Name: EventSynthesisDone}},
		{EventSynthesisDelta, " \n{\"text\":\n\"x\"}\n ", Record{Name: EventSynthesisDelta}},
		{"agent.thought", `{"agent":"A"}`, Record{Name: EventUnknown, Agent: "A"}},
		{"message", `{}`, Record{Name: EventUnknown}},
		{"", `{}`, Record{Name: EventUnknown}},
	} {
		got, err := d.Decode(tc.name, tc.data)
		if err != nil {
			t.Errorf("Decode(%q, %q): %v", tc.name, tc.data, err)
			continue
		}
		if !got.At.Equal(tc.want.At) {
			t.Errorf("Decode(%q, %q).At = %v, want %v", tc.name, tc.data, got.At, tc.want.At)
		}
		got.At, tc.want.At = time.Time{}, time.Time{}
		if got != tc.want {
			t.Errorf("Decode(%q, %q) = %+v, want %+v", tc.name, tc.data, got, tc.want)
		}
	}
}

func TestDecodeBadData(t *testing.T) {
	d := NewDecoder()
	for _, data := range []string{
		`{"text":"cut off`, `["a"]`, `42`, `"s"`, `null`, ` `, `{"usd":1} x`, `{"usd":1}{}`,
		`not json`, `{"a":}`, `{"a" 1}`, `{"a":1,}`, `{'a':1}`, "{\"agent\":\"A\"\n",
	} {
		r, err := d.Decode(EventAgentEnd, data)
		if !errors.Is(err, ErrBadData) {
			t.Errorf("Decode(%q): err %v, want ErrBadData", data, err)
		}
		if r != (Record{Name: EventAgentEnd}) {
			t.Errorf("Decode(%q) = %+v on error, want only the name", data, r)
		}
	}
	// The decoder is reusable after an error.
	if r, err := d.Decode(EventCost, `{"usd":2}`); err != nil || r.CostUSD != 2 {
		t.Errorf("after errors: %+v %v", r, err)
	}
}

func observe(t *Turn, id string, r Record, at time.Time) Observation {
	return t.Observe(id, r, at)
}

func TestTurnDedupeNumericIDs(t *testing.T) {
	var turn Turn
	t0 := recvBase
	phase := Record{Name: EventPhase}
	var dups []string
	for _, id := range []string{"1", "2", "3", "4", "3", "4", "5", "6", "5", "6", "7"} {
		if observe(&turn, id, phase, t0).Duplicate {
			dups = append(dups, id)
		}
	}
	// The replay overlap (a server re-sending 3,4 and 5,6) is dropped.
	if want := []string{"3", "4", "5", "6"}; !reflect.DeepEqual(dups, want) {
		t.Errorf("duplicates %v, want %v", dups, want)
	}
	if turn.ResumeID() != "7" {
		t.Errorf("resume id %q, want 7", turn.ResumeID())
	}
	// An id is a replay only if it was seen, not because a higher one was:
	// 9 after 10 is new (a reader that resumed further on got 10 first).
	if observe(&turn, "10", phase, t0).Duplicate || observe(&turn, "9", phase, t0).Duplicate || !observe(&turn, "9", phase, t0).Duplicate {
		t.Error("10 after 7 must be new, then 9 new once")
	}
	if observe(&turn, "100", phase, t0).Duplicate || !observe(&turn, "100", phase, t0).Duplicate || observe(&turn, "50", phase, t0).Duplicate {
		t.Error("after a gap to 100: 100 is new once, and 50 (never seen) is new")
	}
	if observe(&turn, "8", phase, t0).Duplicate {
		t.Error("8 closes the gap and is new")
	}
	// Numeric ids are kept as ranges: 1-10, 50, 100.
	if want := []IDRange{{1, 10}, {50, 50}, {100, 100}}; !reflect.DeepEqual(turn.Seen, want) {
		t.Errorf("ranges %v, want %v", turn.Seen, want)
	}
	if turn.ResumeID() != "10" {
		t.Errorf("resume id %q, want 10", turn.ResumeID())
	}
}

func TestTurnDedupeNonNumericIDs(t *testing.T) {
	var turn Turn
	var seq []bool
	for _, id := range []string{"evt_a", "evt_b", "evt_a", "evt_c", "evt_b", "1.5", "1.5", "0x10", "0x10"} {
		seq = append(seq, observe(&turn, id, Record{Name: EventPhase}, recvBase).Duplicate)
	}
	if want := []bool{false, false, true, false, true, false, true, false, true}; !reflect.DeepEqual(seq, want) {
		t.Errorf("duplicates %v, want %v", seq, want)
	}
	if turn.ResumeID() != "" {
		t.Errorf("resume id %q: non-numeric ids are resumed by the caller", turn.ResumeID())
	}
	// The memory of non-numeric ids is bounded.
	var big Turn
	refused := 0
	for i := 0; i < maxHashes+100; i++ {
		if big.Observe("k"+strconv.Itoa(i), Record{Name: EventPhase}, recvBase).Refused == RefusedTurnBudget {
			refused++
		}
	}
	if len(big.Hashes) != maxHashes || refused != 100 {
		t.Errorf("remembered %d ids (bound %d), refused %d (want 100)", len(big.Hashes), maxHashes, refused)
	}
}

func TestTurnEmptyIDsAreNeverDuplicates(t *testing.T) {
	var turn Turn
	for i := 0; i < 3; i++ {
		if o := observe(&turn, "", Record{Name: EventPhase}, recvBase); o.Duplicate {
			t.Fatal("an event without an id cannot be deduplicated and must count")
		}
	}
	if len(turn.Seen) != 0 || len(turn.Hashes) != 0 || turn.ResumeID() != "" {
		t.Errorf("empty ids changed the state: %+v", turn)
	}
	// Numeric ids after empty ones dedupe normally.
	observe(&turn, "1", Record{Name: EventPhase}, recvBase)
	observe(&turn, "2", Record{Name: EventPhase}, recvBase)
	observe(&turn, "3", Record{Name: EventPhase}, recvBase)
	observe(&turn, "4", Record{Name: EventPhase}, recvBase)
	if !observe(&turn, "4", Record{Name: EventPhase}, recvBase).Duplicate {
		t.Error("4 twice must be a duplicate")
	}
	// And an empty id after numeric ones still counts.
	if observe(&turn, "", Record{Name: EventPhase}, recvBase).Duplicate {
		t.Error("an event without an id after numbered ones was dropped")
	}
	if turn.ResumeID() != "4" {
		t.Errorf("resume id %q, want 4", turn.ResumeID())
	}
}

func TestTurnDurations(t *testing.T) {
	at := func(s string) time.Time {
		tm, err := time.Parse(time.RFC3339Nano, s)
		if err != nil {
			panic(err)
		}
		return tm
	}
	r0 := recvBase
	for _, tc := range []struct {
		name            string
		startAt, endAt  time.Time
		endName         string
		recvEnd         time.Time
		want            time.Duration
		wantHasDuration bool
		wantOutcome     string
	}{
		{"both at", at("2025-06-03T09:00:00Z"), at("2025-06-03T09:03:42.36Z"), EventTurnCompleted, r0.Add(5 * time.Second), 222360 * time.Millisecond, true, OutcomeCompleted},
		{"start lacks at", time.Time{}, at("2025-06-03T09:03:42Z"), EventTurnCompleted, r0.Add(5 * time.Second), 5 * time.Second, true, OutcomeCompleted},
		{"end lacks at", at("2025-06-03T09:00:00Z"), time.Time{}, EventTurnFailed, r0.Add(7 * time.Second), 7 * time.Second, true, OutcomeFailed},
		{"neither", time.Time{}, time.Time{}, EventTurnFailed, r0.Add(90 * time.Second), 90 * time.Second, true, OutcomeFailed},
		{"at goes backwards", at("2025-06-03T09:00:00Z"), at("2025-06-03T08:59:00Z"), EventTurnCompleted, r0.Add(5 * time.Second), 0, false, OutcomeCompleted},
		{"receipt goes backwards", time.Time{}, time.Time{}, EventTurnCompleted, r0.Add(-time.Second), 0, false, OutcomeCompleted},
	} {
		var turn Turn
		if o := turn.Observe("1", Record{Name: EventTurnStarted, At: tc.startAt}, r0); !o.Started {
			t.Fatalf("%s: turn.started not reported", tc.name)
		}
		o := turn.Observe("2", Record{Name: tc.endName, At: tc.endAt}, tc.recvEnd)
		if o.Outcome != tc.wantOutcome || o.HasDuration != tc.wantHasDuration || o.Duration != tc.want {
			t.Errorf("%s: outcome %q duration %v (%v), want %q %v (%v)", tc.name, o.Outcome, o.Duration, o.HasDuration, tc.wantOutcome, tc.want, tc.wantHasDuration)
		}
		// A second terminal event (new id) does not finish the turn again.
		if o := turn.Observe("3", Record{Name: EventTurnCompleted}, tc.recvEnd); o.Outcome != "" || o.HasDuration {
			t.Errorf("%s: a second terminal event finished the turn again: %+v", tc.name, o)
		}
	}

	// A terminal event without turn.started has an outcome, no duration.
	var turn Turn
	if o := turn.Observe("9", Record{Name: EventTurnCompleted, At: at("2025-06-03T09:00:00Z")}, r0); o.Outcome != OutcomeCompleted || o.HasDuration {
		t.Errorf("finished without start: %+v", o)
	}
	// A second turn.started (new id) does not restart the turn.
	var t2 Turn
	t2.Observe("1", Record{Name: EventTurnStarted}, r0)
	if o := t2.Observe("2", Record{Name: EventTurnStarted}, r0.Add(time.Minute)); o.Started {
		t.Error("a second turn.started reported a start")
	}
	if o := t2.Observe("3", Record{Name: EventTurnCompleted}, r0.Add(2*time.Minute)); o.Duration != 2*time.Minute {
		t.Errorf("duration %v, want 2m from the first turn.started", o.Duration)
	}
}

func TestTurnTTFT(t *testing.T) {
	r0 := recvBase
	delta := Record{Name: EventSynthesisDelta}
	var turn Turn
	// A token before turn.started has no reference.
	if o := turn.Observe("1", delta, r0); o.HasTTFT {
		t.Error("TTFT before turn.started")
	}
	// TTFT is on the exporter's clock even when `at` is present.
	turn.Observe("2", Record{Name: EventTurnStarted, At: r0.Add(-time.Hour)}, r0.Add(time.Second))
	turn.Observe("3", Record{Name: EventPhase}, r0.Add(2*time.Second))
	o := turn.Observe("4", delta, r0.Add(3500*time.Millisecond))
	if !o.HasTTFT || o.TTFT != 2500*time.Millisecond {
		t.Errorf("TTFT %v (%v), want 2.5s", o.TTFT, o.HasTTFT)
	}
	if o := turn.Observe("5", delta, r0.Add(9*time.Second)); o.HasTTFT {
		t.Error("a second token reported a TTFT")
	}
	// A replayed first token reports nothing.
	var t2 Turn
	t2.Observe("1", Record{Name: EventTurnStarted}, r0)
	t2.Observe("2", delta, r0.Add(time.Second))
	if o := t2.Observe("2", delta, r0.Add(5*time.Second)); !o.Duplicate || o.HasTTFT {
		t.Errorf("replayed token: %+v", o)
	}
}

func TestTurnStateRoundTrip(t *testing.T) {
	var turn Turn
	turn.Observe("1", Record{Name: EventTurnStarted, At: recvBase}, recvBase)
	turn.Observe("2", Record{Name: EventPhase}, recvBase)
	turn.Observe("x", Record{Name: EventPhase}, recvBase)
	b, err := json.Marshal(&turn)
	if err != nil {
		t.Fatal(err)
	}
	var back Turn
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if !back.Observe("2", Record{Name: EventPhase}, recvBase).Duplicate || !back.Observe("x", Record{Name: EventPhase}, recvBase).Duplicate {
		t.Error("restored state forgot seen ids")
	}
	if o := back.Observe("3", Record{Name: EventTurnCompleted, At: recvBase.Add(time.Minute)}, recvBase); !o.HasDuration || o.Duration != time.Minute {
		t.Errorf("restored state lost the start: %+v (%s)", o, b)
	}
}

func FuzzDecode(f *testing.F) {
	if files, _ := filepath.Glob("testdata/*.sse"); len(files) > 0 {
		for _, file := range files {
			raw, err := os.ReadFile(file)
			if err != nil {
				f.Fatal(err)
			}
			p := sse.NewParser(bytes.NewReader(raw), sse.Options{})
			for {
				ev, err := p.Next()
				if err != nil {
					break
				}
				f.Add(ev.Event, ev.Data)
			}
		}
	}
	f.Add("routing", `{"decision":{"main_agent":"A","supporting_agents":[[],{},"x"]},"decision":{}}`)
	f.Add("validation_end", `{"gates_passed":1e30,"gates_total":-1,"verdict":"\u0076alidated"}`)
	f.Add("turn.completed", `{"result":{"cost_usd":1e400},"at":"2025-06-03T09:00:00.123456789Z"}`)
	f.Add("message", "")
	d := NewDecoder()
	f.Fuzz(func(t *testing.T, name, data string) {
		r, err := d.Decode(name, data)
		if err != nil && !errors.Is(err, ErrBadData) {
			t.Fatalf("error %v does not wrap ErrBadData", err)
		}
		if r.Name != EventUnknown && !known[r.Name] || (known[name] && r.Name != name) {
			t.Fatalf("name %q for event %q", r.Name, name)
		}
		if r.Supporting < 0 || r.Issues < 0 || r.Entries < 0 {
			t.Fatalf("negative count: %+v", r)
		}
		if r.HasCost && name != EventAgentEnd && name != EventTurnCompleted && name != EventCost {
			t.Fatalf("cost on %q", name)
		}
		// Valid JSON objects always decode: a valid event is never counted
		// as bad data.
		if trimmed := strings.TrimLeft(data, " \t\r\n"); strings.HasPrefix(trimmed, "{") && json.Valid([]byte(data)) && err != nil {
			t.Fatalf("valid JSON object %q rejected: %v", data, err)
		}
		// The decoder keeps no state between events: a fresh one agrees.
		r2, err2 := NewDecoder().Decode(name, data)
		if (err == nil) != (err2 == nil) || !reflect.DeepEqual(r, r2) && !(r.CostUSD != r.CostUSD) {
			t.Fatalf("reused decoder %+v %v, fresh %+v %v", r, err, r2, err2)
		}
		// Observing never panics either, whatever the record.
		var turn Turn
		turn.Observe("1", r, recvBase)
		turn.Observe("2", r, recvBase.Add(time.Second))
	})
}
