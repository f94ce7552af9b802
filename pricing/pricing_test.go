package pricing

import (
	"math"
	"testing"
	"time"
)

func TestEmbeddedKnowsAmpModels(t *testing.T) {
	tab, err := Embedded(func() time.Time { return time.Date(2026, 11, 29, 0, 0, 0, 0, time.UTC) })
	if err != nil {
		t.Fatal(err)
	}
	// Anthropic list prices (USD per million tokens), as on
	// anthropic.com/pricing and in LiteLLM's table that ccusage uses.
	claude := map[string]Price{
		"claude-opus-4-6":            {Input: 5, Output: 25, CacheRead: 0.5, CacheWrite: 6.25},
		"claude-opus-4-5-20251101":   {Input: 5, Output: 25, CacheRead: 0.5, CacheWrite: 6.25},
		"claude-sonnet-4-5-20250929": {Input: 3, Output: 15, CacheRead: 0.3, CacheWrite: 3.75},
		"claude-haiku-4-5-20251001":  {Input: 1, Output: 5, CacheRead: 0.1, CacheWrite: 1.25},
	}
	for model, want := range claude {
		got, ok := tab.Lookup(model)
		if !ok {
			t.Errorf("%s: no price", model)
			continue
		}
		if got.Input != want.Input || got.Output != want.Output || got.CacheRead != want.CacheRead || got.CacheWrite != want.CacheWrite {
			t.Errorf("%s: %+v, want %+v", model, got, want)
		}
	}
	for _, model := range []string{"gpt-5.2-codex", "gpt-5.4", "accounts/fireworks/models/kimi-k2p5"} {
		if p, ok := tab.Lookup(model); !ok || p.Input <= 0 {
			t.Errorf("%s: %+v %v", model, p, ok)
		}
	}
	if _, ok := tab.Lookup("e2e-model-nobody-prices"); ok {
		t.Error("an unknown model got a price")
	}
}

func TestPerTokenFallsBackToInputForCache(t *testing.T) {
	in, out, cr, cw := Price{Input: 2, Output: 8}.PerToken()
	if in != 2e-6 || out != 8e-6 || cr != 2e-6 || cw != 2e-6 {
		t.Fatalf("%v %v %v %v", in, out, cr, cw)
	}
	_, _, cr, cw = Price{Input: 2, CacheRead: 0.2, HasCacheRead: true, CacheWrite: 2.5, HasCacheWrite: true}.PerToken()
	if math.Abs(cr-0.2e-6) > 1e-18 || math.Abs(cw-2.5e-6) > 1e-18 {
		t.Fatalf("%v %v", cr, cw)
	}
}

func TestLiteLLMFile(t *testing.T) {
	doc := `{
 "sample_spec": {"input_cost_per_token": 0, "litellm_provider": "x", "max_tokens": "set to max"},
 "claude-opus-4-5-20251101": {"input_cost_per_token": 5e-06, "output_cost_per_token": 2.5e-05,
   "cache_read_input_token_cost": 5e-07, "cache_creation_input_token_cost": 6.25e-06, "litellm_provider": "anthropic"},
 "fireworks_ai/accounts/fireworks/models/kimi-k2p5": {"input_cost_per_token": 6e-07, "output_cost_per_token": 2.5e-06},
 "dall-e-3": {"output_cost_per_image": 0.04}
}`
	tab, err := ParseLiteLLM([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	p, ok := tab.Lookup("claude-opus-4-5-20251101")
	if !ok || math.Abs(p.Input-5) > 1e-9 || math.Abs(p.CacheWrite-6.25) > 1e-9 || !p.HasCacheRead {
		t.Fatalf("%+v %v", p, ok)
	}
	if p, ok := tab.Lookup("accounts/fireworks/models/kimi-k2p5"); !ok || math.Abs(p.Output-2.5) > 1e-9 {
		t.Fatalf("prefixed key: %+v %v", p, ok)
	}
	if _, ok := tab.Lookup("dall-e-3"); ok {
		t.Fatal("an image model got a token price")
	}
	if _, err := ParseLiteLLM([]byte(`{"a": 1}`)); err == nil {
		t.Fatal("a file without prices was accepted")
	}
	if _, err := ParseLiteLLM([]byte(`[`)); err == nil {
		t.Fatal("broken JSON accepted")
	}
}

func TestOverridesWin(t *testing.T) {
	tab, _ := Embedded(nil)
	p := New(tab, "genai-prices", "0.1.8", map[string]Price{"claude-opus-4-6": {Input: 1, Output: 2}})
	if got, _ := p.Lookup("claude-opus-4-6"); got.Input != 1 {
		t.Fatalf("override ignored: %+v", got)
	}
	if got, ok := p.Lookup("claude-haiku-4-5-20251001"); !ok || got.Input != 1 || got.Output != 5 {
		t.Fatalf("base table: %+v %v", got, ok)
	}
}

func TestLongContextTier(t *testing.T) {
	tab, _ := Embedded(nil)
	p, ok := tab.Lookup("claude-sonnet-4-5-20250929")
	if !ok || p.Long == nil {
		t.Fatalf("sonnet 4.5 has no long-context tier: %+v", p)
	}
	if got := p.LongPrices(); got.Input != 6 || got.Output != 22.5 || got.CacheRead != 0.6 || got.CacheWrite != 7.5 {
		t.Errorf("long-context tier: %+v", got)
	}
	lite, err := ParseLiteLLM([]byte(`{"m": {"input_cost_per_token": 3e-06, "output_cost_per_token": 1.5e-05,
	  "input_cost_per_token_above_200k_tokens": 6e-06, "output_cost_per_token_above_200k_tokens": 2.25e-05}}`))
	if err != nil {
		t.Fatal(err)
	}
	lp, _ := lite.Lookup("m")
	if got := lp.LongPrices(); math.Abs(got.Input-6) > 1e-9 || math.Abs(got.Output-22.5) > 1e-9 {
		t.Errorf("LiteLLM tier: %+v", got)
	}
}

// BenchmarkEmbeddedLookup: the cost of a price lookup on the Apply path,
// for a priced model and for one the table does not know (model="unknown",
// which most stream-json lines carry), memoised and not.
func BenchmarkEmbeddedLookup(b *testing.B) {
	tab, err := Embedded(nil)
	if err != nil {
		b.Fatal(err)
	}
	for _, model := range []string{"claude-sonnet-4-5-20250929", "unknown"} {
		b.Run(model+"/memo", func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				tab.Lookup(model)
			}
		})
		b.Run(model+"/walk", func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				tab.lookup(model)
			}
		})
	}
}

// TestLookupMemoFollowsTheDate: a remembered answer is not kept past the
// day it was found on, since dated prices change at midnight (UTC).
// claude-opus-4-6 lost its long-context tier on 2026-03-13.
func TestLookupMemoFollowsTheDate(t *testing.T) {
	now := time.Date(2026, 3, 12, 23, 30, 0, 0, time.UTC)
	tab, err := Embedded(func() time.Time { return now })
	if err != nil {
		t.Fatal(err)
	}
	if p, ok := tab.Lookup("claude-opus-4-6"); !ok || p.Long == nil {
		t.Fatalf("2026-03-12: %+v, %v; want a long-context tier", p, ok)
	}
	now = now.Add(time.Hour)
	if p, ok := tab.Lookup("claude-opus-4-6"); !ok || p.Long != nil {
		t.Fatalf("2026-03-13: %+v, %v; want no long-context tier", p, ok)
	}
}

// TestLiteLLMSuffixIsDeterministic: a bare model name found only under
// several provider prefixes gets the same price on every parse (the first
// key in name order).
func TestLiteLLMSuffixIsDeterministic(t *testing.T) {
	doc := []byte(`{
		"vertex_ai/m9": {"input_cost_per_token": 0.000005},
		"bedrock/m9": {"input_cost_per_token": 0.000003},
		"azure/m9": {"input_cost_per_token": 0.000001}
	}`)
	for i := 0; i < 50; i++ {
		tab, err := ParseLiteLLM(doc)
		if err != nil {
			t.Fatal(err)
		}
		if p, ok := tab.Lookup("m9"); !ok || math.Abs(p.Input-1) > 1e-9 {
			t.Fatalf("parse %d: m9 = %+v, %v; want azure's $1/M", i, p, ok)
		}
	}
}
