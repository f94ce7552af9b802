package otlp

import (
	"slices"
	"strings"

	dto "github.com/prometheus/client_model/go"
	"go.opentelemetry.io/collector/pdata/pmetric"
)

// The OpenTelemetry GenAI semantic conventions' token usage, as version
// 1.37.0 of the conventions defines it (the first with
// gen_ai.provider.name; the conventions are still in development).
const (
	GenAITokenUsage = "gen_ai.client.token.usage"

	attrOperation = "gen_ai.operation.name"
	attrProvider  = "gen_ai.provider.name"
	attrModel     = "gen_ai.request.model"
	attrTokenType = "gen_ai.token.type"

	// The family the usage is summed from, and its labels.
	genAISource    = "amp_tokens_total"
	labelModel     = "model"
	labelTokenType = "token_type"
)

// genAIProviders name a model's provider by its name's first word, in the
// conventions' gen_ai.provider.name values. A model matching none is sent
// without the attribute rather than with a guess.
var genAIProviders = []struct{ prefix, provider string }{
	{"claude", "anthropic"},
	{"gpt", "openai"},
	{"o1", "openai"},
	{"o3", "openai"},
	{"o4", "openai"},
	{"codex", "openai"},
	{"gemini", "gcp.gemini"},
	{"grok", "x_ai"},
	{"deepseek", "deepseek"},
	{"mistral", "mistral_ai"},
	{"codestral", "mistral_ai"},
}

func genAIProvider(model string) string {
	m := strings.ToLower(model)
	if i := strings.LastIndexByte(m, '/'); i >= 0 {
		m = m[i+1:] // "anthropic/claude-…", "openrouter/openai/gpt-…"
	}
	for _, p := range genAIProviders {
		if m == p.prefix || strings.HasPrefix(m, p.prefix+"-") || strings.HasPrefix(m, p.prefix+".") {
			return p.provider
		}
	}
	return ""
}

// genAITokenType maps a token_type to the conventions' gen_ai.token.type:
// the conventions count every prompt token as input, cached or not, so
// cache_read and cache_creation are input too.
func genAITokenType(tt string) string {
	switch tt {
	case "output":
		return "output"
	case "input", "cache_read", "cache_creation":
		return "input"
	}
	return ""
}

// genAI adds gen_ai.client.token.usage, summed from amp_tokens_total over
// sources and repositories by model and input/output. The conventions
// define it as a histogram of each call's tokens; the exporter has
// cumulative totals, not calls, so it is sent as a cumulative monotonic
// sum under the conventions' name, unit and attributes (a histogram would
// need call counts the totals do not have). A receiver's sum of the
// histogram and this sum are the same number.
func (c *converter) genAI(ms pmetric.MetricSlice, mfs []*dto.MetricFamily) {
	sums := genAISums(mfs)
	if len(sums) == 0 {
		return
	}
	keys := make([]genAIKey, 0, len(sums))
	for k := range sums {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b genAIKey) int {
		if c := strings.Compare(a.model, b.model); c != 0 {
			return c
		}
		return strings.Compare(a.tokenType, b.tokenType)
	})
	m := ms.AppendEmpty()
	m.SetName(GenAITokenUsage)
	m.SetDescription("Tokens used, by model and input/output (OpenTelemetry GenAI semantic conventions 1.37.0), summed from amp_tokens_total: a cumulative sum, not the conventions' per-call histogram.")
	m.SetUnit("{token}")
	s := m.SetEmptySum()
	s.SetAggregationTemporality(pmetric.AggregationTemporalityCumulative)
	s.SetIsMonotonic(true)
	dps := s.DataPoints()
	dps.EnsureCapacity(len(keys))
	for _, k := range keys {
		dp := dps.AppendEmpty()
		attrs := dp.Attributes()
		attrs.PutStr(attrOperation, "chat")
		if p := genAIProvider(k.model); p != "" {
			attrs.PutStr(attrProvider, p)
		}
		attrs.PutStr(attrModel, k.model)
		attrs.PutStr(attrTokenType, k.tokenType)
		// The start time's key: the conventions' name and the two
		// attributes that tell the points apart.
		dp.SetStartTimestamp(c.start(GenAITokenUsage, genAILabels(k.model, k.tokenType), sums[k]))
		dp.SetTimestamp(c.now)
		dp.SetDoubleValue(sums[k])
	}
	c.points += len(keys)
}

// genAIKey tells gen_ai.client.token.usage's points apart.
type genAIKey struct{ model, tokenType string }

// genAISums sums amp_tokens_total by model and input/output.
func genAISums(mfs []*dto.MetricFamily) map[genAIKey]float64 {
	type key = genAIKey
	sums := map[key]float64{}
	for _, mf := range mfs {
		if mf.GetName() != genAISource || mf.GetType() != dto.MetricType_COUNTER {
			continue
		}
		for _, x := range mf.GetMetric() {
			var k key
			for _, l := range x.GetLabel() {
				switch l.GetName() {
				case labelModel:
					k.model = l.GetValue()
				case labelTokenType:
					k.tokenType = genAITokenType(l.GetValue())
				}
			}
			if k.model == "" || k.tokenType == "" {
				continue
			}
			sums[k] += x.GetCounter().GetValue()
		}
	}
	return sums
}

func genAILabels(model, tokenType string) []*dto.LabelPair {
	mn, tn := attrModel, attrTokenType
	return []*dto.LabelPair{{Name: &mn, Value: &model}, {Name: &tn, Value: &tokenType}}
}
