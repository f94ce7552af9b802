package threadgen

import (
	"testing"

	"github.com/amp-exporter/amp-exporter/parser/thread"
)

// TestSpeedSpendIsWhatTheParserCounts: the tokens the generator knows it
// wrote at each speed are what the parser reads from the usages'
// features, model by model; together they are Spend's; and the corpus
// holds every case: fast, fast turned on mid-thread, plaid on the plaid
// model and plaid asked of a model without a plaid price.
func TestSpeedSpendIsWhatTheParserCounts(t *testing.T) {
	g := New(Options{Threads: 60, TotalBytes: 60 * 30_000, Seed: 11, Speeds: true})
	got := map[ModelSpeed]Tokens{}
	midThread := 0
	p := thread.NewParser()
	for i := range g.Len() {
		_, data := g.Thread(i)
		th, err := p.ParseBytes(data)
		if err != nil {
			t.Fatal(err)
		}
		speeds := map[thread.Speed]bool{}
		for _, it := range thread.Summarize(th).Items {
			if it.Copied || it.Tokens == (thread.Tokens{}) {
				continue
			}
			speeds[it.Speed] = true
			k := ModelSpeed{it.Model, it.Speed.String()}
			got[k] = got[k].plus(Tokens{it.Tokens.Input, it.Tokens.Output, it.Tokens.CacheRead, it.Tokens.CacheCreation})
		}
		if speeds[thread.SpeedStandard] && speeds[thread.SpeedFast] {
			midThread++
		}
	}
	want := g.SpeedSpend()
	if len(got) != len(want) {
		t.Errorf("%d model and speed pairs parsed, %d written: %v, want %v", len(got), len(want), got, want)
	}
	for k, w := range want {
		if got[k] != w {
			t.Errorf("%v: parsed %+v, written %+v", k, got[k], w)
		}
	}
	for _, k := range []ModelSpeed{{"claude-opus-4-6", SpeedFast}, {"claude-opus-4-6", SpeedPlaid}, {"gpt-6-astra", SpeedPlaid}, {"claude-opus-4-6", SpeedStandard}} {
		if want[k] == (Tokens{}) {
			t.Errorf("the corpus has no tokens of %v", k)
		}
	}
	if midThread == 0 {
		t.Error("no thread turns fast mode on mid-thread")
	}
	// Split by speed, the tokens are Spend's.
	byModel := map[string]Tokens{}
	for k, tok := range want {
		byModel[k.Model] = byModel[k.Model].plus(tok)
	}
	spend := map[string]Tokens{}
	for _, rs := range g.Spend() {
		for m, tok := range rs.Tokens {
			spend[m] = spend[m].plus(tok)
		}
	}
	for m, tok := range spend {
		if byModel[m] != tok {
			t.Errorf("%s: %+v by speed, %+v in Spend", m, byModel[m], tok)
		}
	}
}
