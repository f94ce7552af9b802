package collector

import (
	"strings"
	"unicode/utf8"
)

// Label values that stand in for data.
const (
	OtherValue   = "other"   // values past the per-label cap
	UnknownValue = "unknown" // empty values
)

// maxLabelLength bounds a label value in bytes; a longer value is cut at a
// rune boundary. Model and tool names are far shorter; anything longer is
// junk that would only bloat every scrape.
const maxLabelLength = 128

// maxFoldedTracked bounds the set of distinct folded values remembered for
// counting; past it, every further fold is counted again rather than
// remembered, so hostile data cannot grow memory without bound.
const maxFoldedTracked = 10000

// labelCap admits the first max distinct values of each data-derived label
// and folds the rest into "other". Admission is permanent (and persisted), so
// a value keeps its series for the life of the counters.
type labelCap struct {
	max      int
	admitted map[string]map[string]struct{}
	folded   map[string]map[string]struct{}
	// onFold is called once per distinct folded value of a label.
	onFold func(label string)
}

func newLabelCap(max int, onFold func(string)) *labelCap {
	if onFold == nil {
		onFold = func(string) {}
	}
	return &labelCap{
		max:      max,
		admitted: map[string]map[string]struct{}{},
		folded:   map[string]map[string]struct{}{},
		onFold:   onFold,
	}
}

// value returns the label value to use for a data value.
func (c *labelCap) value(label, v string) string {
	v = sanitizeLabel(v)
	set := c.admitted[label]
	if set == nil {
		set = map[string]struct{}{}
		c.admitted[label] = set
	}
	if _, ok := set[v]; ok {
		return v
	}
	if len(set) < c.max || v == OtherValue {
		set[v] = struct{}{}
		return v
	}
	f := c.folded[label]
	if f == nil {
		f = map[string]struct{}{}
		c.folded[label] = f
	}
	if _, seen := f[v]; !seen {
		if len(f) < maxFoldedTracked {
			f[v] = struct{}{}
		}
		c.onFold(label)
	}
	return OtherValue
}

// admit restores a persisted admission, even past the cap: values that
// already own series keep them after a restart or a lowered limit.
func (c *labelCap) admit(label, v string) {
	set := c.admitted[label]
	if set == nil {
		set = map[string]struct{}{}
		c.admitted[label] = set
	}
	set[v] = struct{}{}
}

// sanitizeLabel makes a data value safe as a label value: valid UTF-8,
// bounded length, never empty.
func sanitizeLabel(v string) string {
	if v == "" {
		return UnknownValue
	}
	if !utf8.ValidString(v) {
		v = strings.ToValidUTF8(v, "\uFFFD")
	}
	if len(v) > maxLabelLength {
		cut := maxLabelLength
		for cut > 0 && !utf8.RuneStart(v[cut]) {
			cut--
		}
		v = v[:cut]
	}
	return v
}
