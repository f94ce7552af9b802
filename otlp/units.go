package otlp

import (
	"maps"
	"slices"
	"strings"

	dto "github.com/prometheus/client_model/go"
)

// Unit is the OTLP unit a family is sent with, read from its name's base
// unit. It is chosen so that a receiver translating OTLP back to Prometheus
// names with unit suffixes (Prometheus 3's default
// UnderscoreEscapingWithSuffixes, NoUTF8EscapingWithSuffixes, the
// Collector's Prometheus exporters) gives back the family's own name:
//
//   - "s" and "By" when the name, without _total, ends in _seconds or
//     _bytes: the translators map them to "seconds" and "bytes", which the
//     name already ends with, and add nothing. Where the word is inside
//     the name (amp_exporter_state_bytes_written_total) there is no unit:
//     NoUTF8EscapingWithSuffixes only looks at the end of the name and
//     would append _bytes;
//   - "{token}" for token counts and "{USD}" for dollars: a unit in braces
//     is an annotation no translator appends. A bare "USD" is not in the
//     translators' unit table and would come back appended as it is, case
//     kept: amp_cost_usd_total would arrive as amp_cost_usd_USD_total;
//   - "1" for a gauge ending in _ratio (the translators append _ratio to
//     such a gauge, which the name already ends with); a histogram of
//     ratios gets no unit;
//   - nothing otherwise.
func Unit(name string, typ dto.MetricType) string {
	base := name
	if typ == dto.MetricType_COUNTER {
		base = strings.TrimSuffix(name, "_total")
	}
	switch {
	case strings.HasSuffix(base, "_seconds"):
		return "s"
	case strings.HasSuffix(base, "_bytes"):
		return "By"
	case hasToken(name, "tokens"):
		return "{token}"
	case hasToken(name, "usd"):
		return "{USD}"
	case typ == dto.MetricType_GAUGE && strings.HasSuffix(name, "_ratio"):
		return "1"
	}
	return ""
}

// hasToken reports whether word is one of name's _-separated words.
func hasToken(name, word string) bool {
	for tok := range strings.SplitSeq(name, "_") {
		if tok == word {
			return true
		}
	}
	return false
}

func sortedKeys(m map[string]string) []string {
	return slices.Sorted(maps.Keys(m))
}
