package streamjson

import (
	"bytes"
	"encoding/json"
	"os"
	"testing"
)

// TestCommitsAcrossARestart: a run saved between a shell call's tool_use
// and its result (the exporter restarted there) counts the call's commit,
// push and pull request once its result arrives, as one never saved does.
func TestCommitsAcrossARestart(t *testing.T) {
	data, err := os.ReadFile("testdata/shell/commits-run.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	lines := bytes.Split(bytes.TrimSpace(data), []byte("\n"))
	for cut := range lines {
		p := NewParser()
		var run Run
		var commits, prs, pushes, failed int
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
			commits, prs, pushes, failed = commits+inc.Commits, prs+inc.PullRequests, pushes+inc.Pushes, failed+inc.FailedPushes
		}
		// Worked out by hand from the capture: one commit and its push, one
		// pull request; the one that exists, the amend, the echo, the
		// cancelled call and the Read count none; one rejected push.
		if commits != 1 || prs != 1 || pushes != 1 || failed != 1 {
			t.Errorf("saved before line %d: commits %d, pull requests %d, pushes %d, failed %d; want 1 1 1 1", cut+1, commits, prs, pushes, failed)
		}
	}
}
