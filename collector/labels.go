package collector

import (
	"sort"
	"strings"
	"sync"
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

// LabelCap admits the first max distinct values of each data-derived label
// and folds the rest into "other". Admission is permanent (and persisted), so
// a value keeps its series for the life of the counters. One LabelCap is
// shared by every source, so the cap bounds a label's series in total.
type LabelCap struct {
	mu       sync.Mutex
	max      int
	admitted map[string]map[string]struct{}
	folded   map[string]map[string]struct{}
	// onFold is called once per distinct folded value of a label.
	onFold func(label string)
}

// NewLabelCap returns a cap of max values per label; onFold is called once
// per distinct folded value with the label's name.
func NewLabelCap(max int, onFold func(string)) *LabelCap {
	if onFold == nil {
		onFold = func(string) {}
	}
	if max <= 0 {
		max = 100
	}
	return &LabelCap{
		max:      max,
		admitted: map[string]map[string]struct{}{},
		folded:   map[string]map[string]struct{}{},
		onFold:   onFold,
	}
}

// SetMax changes the cap for values not yet admitted.
func (c *LabelCap) SetMax(n int) {
	if n <= 0 {
		return
	}
	c.mu.Lock()
	c.max = n
	c.mu.Unlock()
}

// value returns the label value to use for a data value.
func (c *LabelCap) value(label, v string) string {
	v = sanitizeLabel(v)
	c.mu.Lock()
	defer c.mu.Unlock()
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

// restore brings back persisted admissions, even past the cap: values that
// already own series keep them after a restart or a lowered limit.
func (c *LabelCap) restore(admitted map[string][]string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for label, vals := range admitted {
		set := c.admitted[label]
		if set == nil {
			set = map[string]struct{}{}
			c.admitted[label] = set
		}
		for _, v := range vals {
			set[v] = struct{}{}
		}
	}
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

// export returns the admitted values per label, sorted.
func (c *LabelCap) export() map[string][]string {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := map[string][]string{}
	for label, set := range c.admitted {
		vals := make([]string, 0, len(set))
		for v := range set {
			vals = append(vals, v)
		}
		sort.Strings(vals)
		out[label] = vals
	}
	return out
}
