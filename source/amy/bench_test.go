package amy

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"

	"github.com/amp-exporter/amp-exporter/parser/amyturn"
	"github.com/amp-exporter/amp-exporter/parser/sse"
)

// benchEvents is the size of the generated stream.
const benchEvents = 200_000

// genStream generates realistic Amy turns back to back until n events:
// per turn, turn.started, a dozen phases, routing, rephrase, two agents,
// three validations, the answer as ~150 synthesis_delta tokens, then
// synthesis_done, fact_check, memory, cost, cost_warning, turn.completed;
// a keepalive comment every 25 events. It holds exactly n events.
func genStream(n int) []byte {
	var b bytes.Buffer
	count, turn := 0, 0
	for count < n {
		turn++
		id := 0
		emit := func(event, data string) {
			if count == n {
				return // the last turn is cut short
			}
			id++
			count++
			if count%25 == 0 {
				b.WriteString(": keepalive\n\n")
			}
			fmt.Fprintf(&b, "id: %d\nevent: %s\ndata: %s\n\n", id, event, data)
		}
		tid := fmt.Sprintf("turn_%08d", turn)
		emit("turn.started", `{"turn_id":"`+tid+`","at":"2025-06-03T09:14:07.120Z"}`)
		for i := 0; i < 6; i++ {
			emit("phase", fmt.Sprintf(`{"agent":"orchestrator","phase":"step %d of classification","detail":"vagueness = low"}`, i))
		}
		emit("routing", `{"decision":{"main_agent":"Data Science Agent","supporting_agents":["Domain Expert Agent","Sleep Coach Agent"]}}`)
		emit("rephrase", `{"main":"Is a -7.3% drop in the 30-day sleep score clinically meaningful?","supporting":{"Domain Expert Agent":"What change is clinically meaningful?"}}`)
		for _, a := range []string{"Data Science Agent", "Domain Expert Agent"} {
			emit("agent_start", `{"agent":"`+a+`","question":"Is a -7.3% drop in the 30-day sleep score clinically meaningful?"}`)
			for i := 0; i < 3; i++ {
				emit("phase", fmt.Sprintf(`{"agent":"%s","phase":"tool call %d","detail":"sql: select avg(score) from sleep where day > now() - 30"}`, a, i))
			}
			emit("agent_end", `{"agent":"`+a+`","cost_usd":0.0895,"duration_ms":64200,"preview":"Mean sleep score 78.1 → 72.4 (−7.3%), within 1.2 SD of the baseline."}`)
		}
		for i, v := range []string{"validated", "conditional", "rejected"} {
			emit("validation_start", fmt.Sprintf(`{"finding_id":"ds-%03d","claim":"average HRV over 30 days fell 4 ms"}`, i))
			emit("validation_end", fmt.Sprintf(`{"finding_id":"ds-%03d","verdict":"%s","gates_passed":3,"gates_total":5,"reason":"recomputed from raw samples"}`, i, v))
		}
		words := strings.Fields("Short answer: no — by the most defensible read of your own data, the drop is within your normal variation and does not by itself point to a problem worth acting on.")
		for i := 0; i < 150; i++ {
			emit("synthesis_delta", `{"text":" `+words[i%len(words)]+`"}`)
		}
		emit("synthesis_done", `{}`)
		emit("fact_check", `{"issues":[{"claim":"-7.3%","expected":"-7.2%"}]}`)
		emit("memory", `{"entries":[{"kind":"fact","text":"travelled 12–18 May"},{"kind":"preference","text":"prefers short answers"}]}`)
		emit("cost", `{"usd":0.1288}`)
		emit("cost_warning", `{"cumulative_usd":0.1288,"threshold_usd":0.1}`)
		emit("turn.completed", `{"turn_id":"`+tid+`","at":"2025-06-03T09:17:49.480Z","result":{"answer":"Short answer: no — by the most defensible read of your own data, the drop is within your normal variation.","cost_usd":0.1288}}`)
	}
	return b.Bytes()
}

var benchStream = sync.OnceValue(func() []byte { return genStream(benchEvents) })

// BenchmarkParseAndDecode: the generated stream through sse.Parser and the
// Amy Decoder, on one goroutine: events/s is per core.
func BenchmarkParseAndDecode(b *testing.B) {
	data := benchStream()
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	events, deltas := 0, 0
	dec := amyturn.NewDecoder()
	for b.Loop() {
		p := sse.NewParser(bytes.NewReader(data), sse.Options{})
		for {
			ev, err := p.Next()
			if err != nil {
				if !errors.Is(err, io.EOF) {
					b.Fatal(err)
				}
				break
			}
			rec, err := dec.Decode(ev.Event, ev.Data)
			if err != nil {
				b.Fatal(err)
			}
			if rec.Name == amyturn.EventSynthesisDelta {
				deltas++
			}
			events++
		}
	}
	if events != benchEvents*b.N || deltas == 0 {
		b.Fatalf("%d events decoded, want %d", events, benchEvents*b.N)
	}
	b.ReportMetric(float64(events)/b.Elapsed().Seconds(), "events/s")
}

// BenchmarkBufioLines: a bare line scan of the same bytes, the floor any
// SSE reader is measured against; events/s counts the stream's events.
func BenchmarkBufioLines(b *testing.B) {
	data := benchStream()
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	lines := 0
	for b.Loop() {
		sc := bufio.NewScanner(bytes.NewReader(data))
		for sc.Scan() {
			lines++
		}
		if sc.Err() != nil {
			b.Fatal(sc.Err())
		}
	}
	if lines == 0 {
		b.Fatal("no lines")
	}
	b.ReportMetric(float64(benchEvents*b.N)/b.Elapsed().Seconds(), "events/s")
}
