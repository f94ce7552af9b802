package store

import (
	"cmp"
	"fmt"
	"slices"

	"github.com/amp-exporter/amp-exporter/parser/streamjson"
)

// One run, one count, however many readings of it (counting rule 21): a
// run's lines arrive with its key and their place in it
// (streamjson.Run.ApplyLine); the store remembers, per run, how far any
// reading got and whether its execution was counted. A line at a place a
// reading reached before counts nothing; beyond it, it counts and moves
// the run on. So a run posted twice, or tailed and posted, counts once,
// and a reading that goes further than an earlier, cut one counts only
// the rest. A run counts one execution: the outcome of the first reading
// that ended it (a run cut off, counted incomplete, and resent whole stays
// incomplete).

// maxStreamRuns bounds the runs remembered; the least recently read are
// forgotten first (a run read again after this many newer runs counts
// again). A run is remembered as a 16-digit key and three numbers.
const maxStreamRuns = 4096

type streamRun struct {
	lines int   // the furthest line any reading counted
	exec  bool  // its execution was counted
	seen  int64 // last read, epoch ms (which to forget first)
}

// StreamRunState is one remembered run, persisted.
type StreamRunState struct {
	Lines int   `json:"n"`
	Exec  bool  `json:"exec,omitempty"`
	Seen  int64 `json:"seen_ms,omitempty"`
}

// firstReading returns what of inc no reading of its run counted before,
// and moves the run on.
func (s *StreamStore) firstReading(inc streamjson.Increments) streamjson.Increments {
	if inc.RunKey == "" {
		return inc
	}
	if s.runs == nil {
		s.runs = map[string]*streamRun{}
	}
	r := s.runs[inc.RunKey]
	if r == nil {
		r = &streamRun{}
		s.runs[inc.RunKey] = r
		s.forgetOldRuns()
	}
	r.seen = s.now().UnixMilli()
	exec := inc.Executions
	if inc.RunLine > r.lines {
		r.lines = inc.RunLine
	} else {
		inc = streamjson.Increments{SessionID: inc.SessionID, RunKey: inc.RunKey, RunLine: inc.RunLine}
	}
	if len(exec) > 0 && r.exec {
		exec = nil
	} else if len(exec) > 0 {
		r.exec = true
		exec = exec[:1] // a run has one execution
	}
	inc.Executions = exec
	return inc
}

// forgetOldRuns keeps the number of remembered runs bounded, forgetting
// the least recently read (an eighth at a time, so that it is rare).
func (s *StreamStore) forgetOldRuns() {
	if len(s.runs) <= maxStreamRuns+maxStreamRuns/8 {
		return
	}
	type aged struct {
		key  string
		seen int64
	}
	all := make([]aged, 0, len(s.runs))
	for k, r := range s.runs {
		all = append(all, aged{k, r.seen})
	}
	slices.SortFunc(all, func(a, b aged) int { return cmp.Or(cmp.Compare(a.seen, b.seen), cmp.Compare(a.key, b.key)) })
	for _, a := range all[:len(all)-maxStreamRuns] {
		delete(s.runs, a.key)
	}
}

func (s *StreamStore) exportRuns() map[string]StreamRunState {
	if len(s.runs) == 0 {
		return nil
	}
	out := make(map[string]StreamRunState, len(s.runs))
	for k, r := range s.runs {
		out[k] = StreamRunState{Lines: r.lines, Exec: r.exec, Seen: r.seen}
	}
	return out
}

func checkRuns(runs map[string]StreamRunState) error {
	for k, r := range runs {
		if r.Lines < 0 || len(k) > 64 {
			return fmt.Errorf("stream run %q: invalid", k)
		}
	}
	return nil
}

func (s *StreamStore) importRuns(runs map[string]StreamRunState) {
	if len(runs) == 0 {
		return
	}
	s.runs = make(map[string]*streamRun, len(runs))
	for k, r := range runs {
		s.runs[k] = &streamRun{lines: r.Lines, exec: r.Exec, seen: r.Seen}
	}
	s.forgetOldRuns()
}
