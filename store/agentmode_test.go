package store

import (
	"fmt"
	"testing"
	"time"

	"github.com/amp-exporter/amp-exporter/parser/thread"
)

// A thread's agentMode is shown under the CLI's name for the mode: an old
// name (smart, rush, …) and its new one are one mode on a dashboard.
func TestAgentModeAliases(t *testing.T) {
	s := NewThreadStore(StoreOptions{Now: func() time.Time { return fixedNow }})
	for i, mode := range []string{"smart", "medium", "deep", "large", "rush", "low", "ultra", "free", ""} {
		id := fmt.Sprintf("T-%d", i)
		s.Apply("/d/"+id+".json", FileVersion{Size: 1}, thread.FromItems(id, mode, nil))
	}
	want := map[ThreadsKey]float64{{AgentMode: "medium"}: 4, {AgentMode: "low"}: 2, {AgentMode: "ultra"}: 1, {AgentMode: "free"}: 1, {AgentMode: "unknown"}: 1}
	got := s.Snapshot().Threads
	if len(got) != len(want) {
		t.Errorf("threads by mode %v, want %v", got, want)
	}
	for k, n := range want {
		if float64(got[k]) != n {
			t.Errorf("%q: %v threads, want %v (all: %v)", k.AgentMode, got[k], n, got)
		}
	}
}

// A state saved before the aliases were read holds the old names: they
// show under the new ones after a restart.
func TestAgentModeAliasesAfterRestart(t *testing.T) {
	s := NewThreadStore(StoreOptions{Now: func() time.Time { return fixedNow }})
	s.Apply("/d/T-1.json", FileVersion{Size: 1}, thread.FromItems("T-1", "smart", nil))
	st := s.Export()
	f := st.Files["/d/T-1.json"]
	f.AgentMode = "smart"
	st.Files["/d/T-1.json"] = f
	r := NewThreadStore(StoreOptions{Now: func() time.Time { return fixedNow }})
	if err := r.Import(st); err != nil {
		t.Fatal(err)
	}
	if got := r.Snapshot().Threads; len(got) != 1 || got[ThreadsKey{AgentMode: "medium"}] != 1 {
		t.Errorf("threads by mode after the restart %v, want one under medium", got)
	}
}
