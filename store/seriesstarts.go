package store

import (
	"maps"
	"sync"
	"time"
)

// SeriesStarts remembers, per cumulative series, when this exporter first
// counted it: the start time an OTLP push gives the series' points. It is
// kept in the state log beside the counters, so that a series restored
// after a restart keeps its start time and a receiver that reads start
// times (an OpenTelemetry Collector, a vendor's OTLP intake) sees one
// uninterrupted total instead of a reset followed by the same total again.
//
// A series is known by a 64-bit hash of its name and labels (the caller's
// choice): the log then holds no label values twice, and a collision among
// the few thousand series an exporter has is out of reach in practice. The
// zero value is not usable; use NewSeriesStarts. Safe for concurrent use.
type SeriesStarts struct {
	mu  sync.Mutex
	m   map[uint64]int64 // series hash → start, unix ms
	gen uint64
}

// NewSeriesStarts returns an empty set.
func NewSeriesStarts() *SeriesStarts {
	return &SeriesStarts{m: map[uint64]int64{}}
}

// Start returns the start time of the series key, recording now as its
// start when the series is new.
func (s *SeriesStarts) Start(key uint64, now time.Time) time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	ms, ok := s.m[key]
	if !ok {
		ms = now.UnixMilli()
		s.m[key] = ms
		s.gen++
	}
	return time.UnixMilli(ms)
}

// Restart gives the series key a new start, now, because its value went
// down after since (the time its caller last saw it higher): it counts
// again from zero. A start already after since is kept: another caller
// saw the same drop first and restarted it closer to when it happened.
func (s *SeriesStarts) Restart(key uint64, now, since time.Time) time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	if ms, ok := s.m[key]; ok && ms > since.UnixMilli() {
		return time.UnixMilli(ms)
	}
	s.m[key] = now.UnixMilli()
	s.gen++
	return time.UnixMilli(s.m[key])
}

// Retain drops the start of every series keep refuses, so that the
// series gets a new start when it is next seen. It returns how many were
// dropped.
func (s *SeriesStarts) Retain(keep func(key uint64) bool) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for k := range s.m {
		if !keep(k) {
			delete(s.m, k)
			n++
		}
	}
	if n > 0 {
		s.gen++
	}
	return n
}

// Len is the number of series known.
func (s *SeriesStarts) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.m)
}

// Generation changes whenever a start is added, changed or dropped.
func (s *SeriesStarts) Generation() uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.gen
}

// SeriesStartsState is the persisted form of a SeriesStarts.
type SeriesStartsState struct {
	Version int `json:"version"`
	// Starts maps a series hash to its start, unix ms.
	Starts map[uint64]int64 `json:"starts"`
}

// Export returns a copy of the start times.
func (s *SeriesStarts) Export() SeriesStartsState {
	s.mu.Lock()
	defer s.mu.Unlock()
	return SeriesStartsState{Version: StateVersion, Starts: maps.Clone(s.m)}
}

// Import adds restored start times; a series already known keeps the
// earlier of the two starts. Non-positive starts are ignored.
func (s *SeriesStarts) Import(st SeriesStartsState) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for k, v := range st.Starts {
		if v <= 0 {
			continue
		}
		if old, ok := s.m[k]; !ok || v < old {
			s.m[k] = v
		}
	}
}
