package api

import (
	"encoding/json"
	"math"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// The decoders are lenient (docs/workspace.md): an unknown field is
// ignored and counted, a missing optional field is fine, a missing
// required field skips its item, a null item is skipped, a value of the
// wrong type is counted and read as absent (a number sent as a string is
// read). None of that fails the answer; only an answer that is not a JSON
// object, or lacks what the whole answer needs, does.

const (
	// MaxIDBytes bounds an id from the server.
	MaxIDBytes = 256
	// maxURLBytes bounds a repository URL.
	maxURLBytes = 2048
	// maxCount bounds a token or request count (2^50, a million billion).
	maxCount = 1 << 50
	// maxUSD bounds a dollar figure.
	maxUSD = 1e9
	// maxItems bounds the repositories and sub-thread ids of one item.
	maxItems = 4096
)

// fieldKind says what a missing field means.
type fieldKind int

const (
	optional fieldKind = iota // fine
	expected                  // counted (missing_field), read as zero
	required                  // counted, the item is skipped
)

// dec decodes one answer and keeps its Shape.
type dec struct{ shape *Shape }

// obj is a JSON object being read: values as encoding/json decodes them
// into any, numbers as json.Number (one pass over the answer; each item
// is decoded once, then walked).
type obj struct {
	d    *dec
	path string // "" at the top, else ends in "." after the object's path
	m    map[string]any
}

// object reads v as an object whose fields are known; it reports false
// (counted) for null or another type. where is the object's path.
func (d *dec) object(v any, where string, known []string) (obj, bool) {
	if v == nil {
		d.shape.add(ReasonNullItem, where)
		return obj{}, false
	}
	m, ok := v.(map[string]any)
	if !ok {
		d.shape.add(ReasonTypeMismatch, where)
		return obj{}, false
	}
	prefix := ""
	if where != "" {
		prefix = where + "."
	}
	for k := range m {
		p := prefix + safeKey(k)
		d.shape.field(p)
		if !contains(known, k) {
			d.shape.add(ReasonUnknownField, p)
		}
	}
	return obj{d: d, path: prefix, m: m}, true
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// raw returns a field's value; ok is false when absent or null, counted
// as kind says.
func (o obj) raw(name string, kind fieldKind) (any, bool) {
	v, ok := o.m[name]
	if !ok || v == nil {
		if kind != optional {
			o.d.shape.add(ReasonMissingField, o.path+name)
		}
		return nil, false
	}
	return v, true
}

// str reads a string field.
func (o obj) str(name string, kind fieldKind) (string, bool) {
	v, ok := o.raw(name, kind)
	if !ok {
		return "", false
	}
	s, ok := v.(string)
	if !ok {
		o.d.shape.add(ReasonTypeMismatch, o.path+name)
		return "", false
	}
	return s, true
}

// id reads an id: a bounded, printable string.
func (o obj) id(name string, kind fieldKind) (string, bool) {
	s, ok := o.str(name, kind)
	if !ok {
		return "", false
	}
	if !validID(s) {
		o.d.shape.add(ReasonOutOfRange, o.path+name)
		return "", false
	}
	return s, true
}

func validID(s string) bool {
	return s != "" && len(s) <= MaxIDBytes && utf8.ValidString(s) &&
		!strings.ContainsFunc(s, func(r rune) bool { return r < 0x20 || r == 0x7f })
}

// time reads an RFC 3339 timestamp; zero when absent or unreadable.
func (o obj) time(name string) time.Time {
	s, ok := o.str(name, optional)
	if !ok {
		return time.Time{}
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		o.d.shape.add(ReasonTypeMismatch, o.path+name)
		return time.Time{}
	}
	return t
}

// number reads a JSON number, or a number sent as a string (counted).
func (o obj) number(name string, kind fieldKind) (float64, string, bool) {
	v, ok := o.raw(name, kind)
	if !ok {
		return 0, "", false
	}
	var text string
	switch x := v.(type) {
	case json.Number:
		text = string(x)
	case string:
		o.d.shape.add(ReasonTypeMismatch, o.path+name)
		text = strings.TrimSpace(x)
	default:
		o.d.shape.add(ReasonTypeMismatch, o.path+name)
		return 0, "", false
	}
	f, err := strconv.ParseFloat(text, 64)
	if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
		if _, quoted := v.(string); !quoted {
			o.d.shape.add(ReasonTypeMismatch, o.path+name)
		}
		return 0, "", false
	}
	return f, text, true
}

// count reads a count: a whole number from 0 to maxCount.
func (o obj) count(name string, kind fieldKind) uint64 {
	f, text, ok := o.number(name, kind)
	if !ok {
		return 0
	}
	if n, err := strconv.ParseUint(text, 10, 64); err == nil && n <= maxCount {
		return n
	}
	if f < 0 || f > maxCount || f != math.Trunc(f) {
		o.d.shape.add(ReasonOutOfRange, o.path+name)
		return 0
	}
	return uint64(f)
}

// usd reads a dollar figure from 0 to maxUSD.
func (o obj) usd(name string, kind fieldKind) (float64, bool) {
	f, _, ok := o.number(name, kind)
	if !ok {
		return 0, false
	}
	if f < 0 || f > maxUSD {
		o.d.shape.add(ReasonOutOfRange, o.path+name)
		return 0, false
	}
	return f, true
}

// array reads an array field's items; null items are counted and left
// out.
func (o obj) array(name string, kind fieldKind) []any {
	v, ok := o.raw(name, kind)
	if !ok {
		return nil
	}
	return o.d.items(v, o.path+name)
}

// items reads an array; null items are counted and left out.
func (d *dec) items(v any, where string) []any {
	items, ok := v.([]any)
	if !ok {
		d.shape.add(ReasonTypeMismatch, where)
		return nil
	}
	out := items[:0]
	for _, it := range items {
		if it == nil {
			d.shape.add(ReasonNullItem, where+"[]")
			continue
		}
		out = append(out, it)
	}
	return out
}

// sumMatches tells whether a total is the sum of its parts within
// rounding to cents (a total given in cents is not a mismatch).
func sumMatches(total, sum float64) bool {
	return math.Abs(total-sum) <= 0.005+1e-9*math.Abs(sum)
}
