package api

import (
	"bytes"
	"encoding/json"
	"io"
)

var (
	usageFields = []string{"threadID", "subThreadIDs", "usage", "models", "estimatedProviderCostAtListPriceUSD"}
	modelFields = []string{"provider", "model", "requests", "inputTokens", "outputTokens", "cacheReadInputTokens",
		"cacheCreationInputTokens", "usage", "estimatedProviderCostAtListPriceUSD"}
)

// DecodeThreadUsage decodes GET /api/v2/threads/{id}/usage. An answer
// without threadID cannot be attributed and is an error; a model entry
// without its model is skipped (counted). The list-price estimate is
// recognised and never read: it is not spend.
func DecodeThreadUsage(b []byte) (ThreadUsage, *Shape, error) {
	d := &dec{shape: newShape()}
	fail := func(field, reason, detail string) (ThreadUsage, *Shape, error) {
		return ThreadUsage{}, d.shape, &AnswerError{Endpoint: EndpointThreadUsage, Field: field, Reason: reason, Detail: detail}
	}
	jd := json.NewDecoder(bytes.NewReader(b))
	jd.UseNumber()
	var v any
	if err := jd.Decode(&v); err != nil {
		return fail("", ReasonUndecodable, "not JSON")
	}
	if _, err := jd.Token(); err != io.EOF {
		return fail("", ReasonUndecodable, "not JSON: data after the value")
	}
	top, ok := d.object(v, "", usageFields)
	if !ok {
		return fail("", ReasonUndecodable, "not a JSON object")
	}
	var u ThreadUsage
	if u.ThreadID, ok = top.id("threadID", required); !ok {
		return fail("threadID", ReasonMissingField, "")
	}
	for _, it := range top.array("subThreadIDs", optional) {
		s, ok := it.(string)
		if !ok {
			d.shape.add(ReasonTypeMismatch, "subThreadIDs[]")
			continue
		}
		if !validID(s) {
			d.shape.add(ReasonOutOfRange, "subThreadIDs[]")
			continue
		}
		if len(u.SubThreadIDs) < maxItems {
			u.SubThreadIDs = append(u.SubThreadIDs, s)
		}
	}
	total, hasTotal := top.usd("usage", expected)
	u.USD = total
	var sum float64
	for _, it := range top.array("models", expected) {
		o, ok := d.object(it, "models[]", modelFields)
		if !ok {
			continue
		}
		var m ModelUsage
		if m.Model, ok = o.str("model", required); !ok {
			continue
		}
		if !validID(m.Model) {
			d.shape.add(ReasonOutOfRange, "models[].model")
			continue
		}
		m.Provider, _ = o.str("provider", expected)
		m.Requests = o.count("requests", expected)
		m.InputTokens = o.count("inputTokens", expected)
		m.OutputTokens = o.count("outputTokens", expected)
		m.CacheReadInputTokens = o.count("cacheReadInputTokens", expected)
		m.CacheCreationInputTokens = o.count("cacheCreationInputTokens", expected)
		m.USD, _ = o.usd("usage", expected)
		sum += m.USD
		u.Models = append(u.Models, m)
	}
	if hasTotal && !sumMatches(total, sum) {
		d.shape.add(ReasonSumMismatch, "usage")
	}
	return u, d.shape, nil
}
