package store

import (
	"sort"
	"strings"
	"sync"

	"github.com/amp-exporter/amp-exporter/internal/labelvalue"
)

// Label values that stand in for data.
const (
	OtherValue   = "other"   // values past the per-label cap
	UnknownValue = "unknown" // empty values
)

// maxLabelLength bounds a label value in bytes; a longer value is cut at a
// rune boundary. Model and tool names are far shorter; anything longer is
// junk that would only bloat every scrape.
const maxLabelLength = labelvalue.MaxBytes

// LabelCap admits the first max distinct values of each data-derived label
// and folds the rest into "other". Admission is permanent (and persisted), so
// a value keeps its series for the life of the counters. One LabelCap is
// shared by every source, so the cap bounds a label's series in total.
type LabelCap struct {
	mu  sync.Mutex
	max int
	// admitted holds, per label, each admitted value as key and value:
	// value hands out the copy it keeps, so that tens of thousands of
	// threads under a few repositories hold a few strings, not one each.
	admitted map[string]map[string]string
	folded   map[string]*distinctSet // per label: the distinct values folded, in bounded memory
	// untrusted holds, per label, the admitted values that only
	// unauthenticated sources (ingest) brought in. They have a quota of
	// their own (max/2), and do not count against max: such a source can
	// never fill the places of the user's own data.
	untrusted map[string]map[string]struct{}
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
		max:       max,
		admitted:  map[string]map[string]string{},
		folded:    map[string]*distinctSet{},
		untrusted: map[string]map[string]struct{}{},
		onFold:    onFold,
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

// Max is the cap in effect.
func (c *LabelCap) Max() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.max
}

// untrustedPrefix marks, in exported state, the values of a label that
// only untrusted sources admitted.
const untrustedPrefix = "untrusted:"

// value returns the label value to use for a data value. "other" itself
// (a value named so) is the folded values' series: it needs and takes no
// place, from any source.
func (c *LabelCap) value(label, v string) string {
	v = sanitizeLabel(v)
	if v == OtherValue {
		return v
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	set := c.admitted[label]
	if set == nil {
		set = map[string]string{}
		c.admitted[label] = set
	}
	unt := c.untrusted[label]
	trusted := len(set) - len(unt)
	if kept, ok := set[v]; ok {
		if _, was := unt[v]; was && trusted < c.max {
			delete(unt, v) // the user's own data has it too
		}
		return kept
	}
	if trusted < c.max {
		v = strings.Clone(v) // not a part of a larger string it would keep
		set[v] = v
		return v
	}
	c.foldedLocked(label, LabelHash(v))
	return OtherValue
}

// foldedLocked counts a folded value once, by its hash.
func (c *LabelCap) foldedLocked(label string, h uint64) {
	f := c.folded[label]
	if f == nil {
		f = &distinctSet{}
		c.folded[label] = f
	}
	if f.add(h) {
		c.onFold(label)
	}
}

// FoldedElsewhere counts values a parser already folded (by LabelHash of
// the value), each distinct one once, like the values folded here.
func (c *LabelCap) FoldedElsewhere(label string, hashes []uint64) {
	if len(hashes) == 0 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, h := range hashes {
		c.foldedLocked(label, h)
	}
}

// valueUntrusted is value for data from an unauthenticated source: a new
// value is admitted only within the untrusted quota.
func (c *LabelCap) valueUntrusted(label, v string) string {
	v = sanitizeLabel(v)
	if v == OtherValue {
		return v // not admitted: admitted it would count as trusted
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	set := c.admitted[label]
	if set == nil {
		set = map[string]string{}
		c.admitted[label] = set
	}
	if kept, ok := set[v]; ok {
		return kept
	}
	unt := c.untrusted[label]
	if unt == nil {
		unt = map[string]struct{}{}
		c.untrusted[label] = unt
	}
	if len(unt) < max(1, c.max/2) {
		v = strings.Clone(v)
		unt[v] = struct{}{}
		set[v] = v
		return v
	}
	c.foldedLocked(label, LabelHash(v))
	return OtherValue
}

// restore brings back persisted admissions, even past the cap: values that
// already own series keep them after a restart or a lowered limit. "other",
// which states of earlier versions admitted, takes no place.
func (c *LabelCap) restore(admitted map[string][]string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for label, vals := range admitted {
		if base, ok := strings.CutPrefix(label, untrustedPrefix); ok {
			unt := c.untrusted[base]
			if unt == nil {
				unt = map[string]struct{}{}
				c.untrusted[base] = unt
			}
			for _, v := range vals {
				if v = sanitizeLabel(v); v != OtherValue {
					unt[v] = struct{}{}
				}
			}
			continue
		}
		set := c.admitted[label]
		if set == nil {
			set = map[string]string{}
			c.admitted[label] = set
		}
		for _, v := range vals {
			if v = sanitizeLabel(v); v != OtherValue { // as saved by earlier versions
				set[v] = v
			}
		}
	}
}

// sanitizeLabel makes a data value safe as a label value: valid UTF-8, no
// control characters, bounded length, never empty.
func sanitizeLabel(v string) string { return labelvalue.Sanitize(v) }

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
	for label, set := range c.untrusted {
		if len(set) == 0 {
			continue
		}
		vals := make([]string, 0, len(set))
		for v := range set {
			vals = append(vals, v)
		}
		sort.Strings(vals)
		out[untrustedPrefix+label] = vals
	}
	return out
}
