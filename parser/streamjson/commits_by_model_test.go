package streamjson

import (
	"bytes"
	"encoding/json"
	"os"
	"testing"
)

// TestCommitsCarryTheirModel: the line with a shell call's result carries,
// beside its commits and pull requests, the model of the assistant line
// whose tool_use made the call (unknown when that line names none), also
// when the run was saved between the two.
func TestCommitsCarryTheirModel(t *testing.T) {
	capture, err := os.ReadFile("testdata/shell/commits-run.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	named := bytes.ReplaceAll(capture, []byte(`"role":"assistant",`), []byte(`"role":"assistant","model":"claude-opus-4-6",`))
	for _, tc := range []struct {
		name  string
		data  []byte
		model string
	}{
		{"named", named, "claude-opus-4-6"},
		{"unnamed", capture, UnknownModel},
	} {
		lines := bytes.Split(bytes.TrimSpace(tc.data), []byte("\n"))
		for cut := range lines {
			p := NewParser()
			var run Run
			var commits, prs int
			for i, line := range lines {
				if i == cut {
					b, err := json.Marshal(&run)
					if err != nil {
						t.Fatal(err)
					}
					run = Run{}
					if err := json.Unmarshal(b, &run); err != nil {
						t.Fatal(err)
					}
				}
				m, ok, err := p.ParseLine(line)
				if err != nil || !ok {
					t.Fatalf("line %d: %v", i+1, err)
				}
				inc := run.ApplyLine(m, line)
				if (inc.Commits > 0 || inc.PullRequests > 0) && inc.ShipModel != tc.model {
					t.Errorf("%s, saved before line %d: line %d's commits under model %q, want %q", tc.name, cut+1, i+1, inc.ShipModel, tc.model)
				}
				commits, prs = commits+inc.Commits, prs+inc.PullRequests
			}
			if commits != 1 || prs != 1 {
				t.Errorf("%s, saved before line %d: commits %d, pull requests %d; want 1 1", tc.name, cut+1, commits, prs)
			}
		}
	}
}
