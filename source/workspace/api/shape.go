package api

import (
	"maps"
	"slices"
	"strings"
	"unicode/utf8"
)

// Anomaly is one kind of unexpected shape at one field path, e.g.
// {unknown_field, threads[].visibility}.
type Anomaly struct {
	Reason string
	// Field is the field's path: "threads[].id", "models[].usage",
	// "data[].users[].models.*.totalTokens"; "" for the whole answer.
	Field string
}

// Shape is what a decoder saw in one answer: the field paths present
// (with how many items had them) and the anomalies (with how many times).
// Both are bounded (maxPaths): an answer full of unknown keys cannot
// grow them without end; the rest is counted under moreFields.
type Shape struct {
	Fields    map[string]int
	Anomalies map[Anomaly]int
}

const (
	// maxPaths bounds the distinct field paths and anomalies of a Shape.
	maxPaths = 128
	// maxKeyBytes bounds a field name kept in a path.
	maxKeyBytes = 64
	// moreFields is the path of what is past the bound.
	moreFields = "(more fields)"
)

func newShape() *Shape {
	return &Shape{Fields: map[string]int{}, Anomalies: map[Anomaly]int{}}
}

func (s *Shape) field(path string) {
	if _, ok := s.Fields[path]; !ok && len(s.Fields) >= maxPaths {
		path = moreFields
	}
	s.Fields[path]++
}

func (s *Shape) add(reason, path string) {
	a := Anomaly{reason, path}
	if _, ok := s.Anomalies[a]; !ok && len(s.Anomalies) >= maxPaths {
		a.Field = moreFields
	}
	s.Anomalies[a]++
}

// Count is how many anomalies of a reason the answer had.
func (s *Shape) Count(reason string) int {
	n := 0
	for a, c := range s.Anomalies {
		if a.Reason == reason {
			n += c
		}
	}
	return n
}

// Sorted returns the anomalies in a stable order.
func (s *Shape) Sorted() []Anomaly {
	as := slices.Collect(maps.Keys(s.Anomalies))
	slices.SortFunc(as, func(a, b Anomaly) int {
		if c := strings.Compare(a.Reason, b.Reason); c != 0 {
			return c
		}
		return strings.Compare(a.Field, b.Field)
	})
	return as
}

// safeKey makes a field name from an answer fit a path: bounded, valid
// UTF-8, no control characters.
func safeKey(k string) string {
	if len(k) > maxKeyBytes {
		k = k[:maxKeyBytes]
		for !utf8.ValidString(k) {
			k = k[:len(k)-1]
		}
		k += "…"
	}
	if !utf8.ValidString(k) || strings.ContainsFunc(k, func(r rune) bool { return r < 0x20 || r == 0x7f }) {
		return "(unprintable)"
	}
	return k
}
