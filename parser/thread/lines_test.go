package thread

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/amp-exporter/amp-exporter/internal/testsupport/threadgen"
)

// editThread builds a thread whose assistant calls the given tools, one
// message each, and whose user messages carry their results.
type call struct {
	name   string
	input  map[string]any
	status string
	result any
}

func editThread(t testing.TB, calls []call) []byte {
	t.Helper()
	var msgs []any
	msgs = append(msgs, map[string]any{"role": "user", "messageId": 0,
		"content": []any{map[string]any{"type": "text", "text": "go"}}})
	for i, c := range calls {
		id := fmt.Sprintf("toolu_%d", i)
		msgs = append(msgs, map[string]any{"role": "assistant", "messageId": 2*i + 1,
			"content": []any{map[string]any{"type": "tool_use", "id": id, "name": c.name, "input": c.input}},
			"state":   map[string]any{"type": "complete", "stopReason": "tool_use"}})
		run := map[string]any{"status": c.status}
		if c.result != nil {
			run["result"] = c.result
		}
		msgs = append(msgs, map[string]any{"role": "user", "messageId": 2*i + 2,
			"content": []any{map[string]any{"type": "tool_result", "toolUseID": id, "run": run}}})
	}
	b, err := json.Marshal(map[string]any{"v": 1, "id": "T-lines", "created": 1, "messages": msgs})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// lineTotals adds up the summary's items: lines by tool and kind, shell
// commands by outcome.
func lineTotals(t *testing.T, data []byte) (lines map[string]int64, shell map[string]int) {
	t.Helper()
	th, err := NewParser().ParseBytes(data)
	if err != nil {
		t.Fatal(err)
	}
	lines, shell = map[string]int64{}, map[string]int{}
	for _, it := range Summarize(th).Items {
		if it.Lines && it.Status == StatusDone {
			lines[it.Tool+"/added"] += it.Added
			lines[it.Tool+"/removed"] += it.Removed
		}
		if it.Shell != "" {
			shell[it.Shell]++
		}
	}
	return lines, shell
}

// TestLinesOfEveryEditTool: the counts below are worked out by hand, the
// reason beside each; none comes from the code under test.
func TestLinesOfEveryEditTool(t *testing.T) {
	patch := strings.Join([]string{
		"*** Begin Patch",
		"*** Add File: docs/new.md", // +2
		"+# New",
		"+text",
		"*** Update File: src/a.go", // +1 -1
		"@@ func A()",
		" \tctx := 1",
		"-\treturn nil",
		"+\treturn err",
		"*** Update File: src/old.go", // moved, +0 -1
		"*** Move to: src/moved.go",
		"@@",
		"-// stale comment",
		"*** Delete File: src/gone.go", // its lines are not in the patch: 0
		"*** End Patch",
	}, "\n")
	data := editThread(t, []call{
		// Whitespace only: the tab becomes four spaces on one line of
		// three: +1 -1.
		{"edit_file", map[string]any{"path": "/a.go", "old_str": "if x {\n\treturn\n}", "new_str": "if x {\n    return\n}"}, "done",
			map[string]any{"diff": "```diff\n...```", "lineRange": []any{1, 3}}},
		// Two lines replaced by three, one kept: a, b → a, B, C: +2 -1.
		{"edit_file", map[string]any{"path": "/b.go", "old_str": "a\nb\n", "new_str": "a\nB\nC\n"}, "done", nil},
		// A file created empty: 1 line, as Amp's row shows it (the
		// content split on "\n" is one empty line).
		{"create_file", map[string]any{"path": "/empty", "content": ""}, "done", "Successfully created file /empty"},
		// A CRLF file of three lines, the last without a line break: +3.
		{"create_file", map[string]any{"path": "/crlf.txt", "content": "one\r\ntwo\r\nthree"}, "done", map[string]any{"message": "ok"}},
		// The patch above: +3 -2. Its result claims other counts
		// (additions 40, deletions 7 for the deleted file): the input
		// wins. Amp's row would show the result's counts; the exporter
		// keeps one rule for every source, since the result's counts
		// cover a deleted file's whole length and count a binary file
		// as 1/1, which no input can say (docs/counting.md).
		{"apply_patch", map[string]any{"patchText": patch}, "done", map[string]any{"files": []any{
			map[string]any{"uri": "file:///docs/new.md", "type": "add", "additions": 40, "deletions": 0},
			map[string]any{"uri": "file:///src/gone.go", "type": "delete", "additions": 0, "deletions": 7},
		}}},
		// Failed, rejected and cancelled edits changed nothing.
		{"edit_file", map[string]any{"path": "/c.go", "old_str": "x", "new_str": "y\nz"}, "error", nil},
		{"create_file", map[string]any{"path": "/d.go", "content": "1\n2\n3\n"}, "rejected-by-user", nil},
		{"apply_patch", map[string]any{"patchText": "*** Begin Patch\n*** Add File: e\n+1\n*** End Patch"}, "cancelled", nil},
		// Still running: not counted yet.
		{"edit_file", map[string]any{"path": "/f.go", "old_str": "x", "new_str": "y"}, "in-progress", nil},
		// Legacy-era edit tools carry no text to count.
		{"fastmod", map[string]any{"pattern": "a", "substitution": "b", "glob": "*.go"}, "done", "3 files"},
		{"enqueue_file_edit", map[string]any{"paths": []any{"/x"}, "objective": "fix"}, "done", "ok"},
	})
	lines, _ := lineTotals(t, data)
	want := map[string]int64{
		"Edit/added": 1 + 2, "Edit/removed": 1 + 1,
		"Write/added": 1 + 3, "Write/removed": 0,
		"apply_patch/added": 3, "apply_patch/removed": 2,
	}
	if fmt.Sprint(lines) != fmt.Sprint(want) {
		t.Errorf("lines = %v, want %v", lines, want)
	}
}

// TestLinesCountedOncePerToolCall: a result given twice (a rewrite kept the
// old copy) and a tool_use given again count the call once.
func TestLinesCountedOncePerToolCall(t *testing.T) {
	data := editThread(t, []call{
		{"create_file", map[string]any{"path": "/a", "content": "1\n2\n"}, "done", nil},
	})
	var doc map[string]any
	if err := json.Unmarshal(data, &doc); err != nil {
		t.Fatal(err)
	}
	msgs := doc["messages"].([]any)
	again := map[string]any{"role": "user", "messageId": 9, "content": msgs[2].(map[string]any)["content"]}
	doc["messages"] = append(msgs, again)
	data, _ = json.Marshal(doc)
	lines, _ := lineTotals(t, data)
	if lines["Write/added"] != 2 {
		t.Errorf("Write/added = %d, want 2 (once)", lines["Write/added"])
	}
}

func TestShellOutcomes(t *testing.T) {
	bash := func(status string, result any) call {
		return call{"Bash", map[string]any{"cmd": "make"}, status, result}
	}
	data := editThread(t, []call{
		bash("done", map[string]any{"output": "ok", "exitCode": 0}),   // success
		bash("done", map[string]any{"output": "boom", "exitCode": 2}), // failure
		bash("done", map[string]any{"output": "", "exitCode": -1}),    // stopped
		bash("done", map[string]any{"output": "no code"}),             // stopped (unknown)
		bash("cancelled", nil),                              // stopped
		bash("error", map[string]any{"message": "timeout"}), // failure
		bash("rejected-by-user", nil),                       // never ran
		{"shell_command", map[string]any{"command": "ls"}, "done", map[string]any{"output": "", "exitCode": 0}}, // success
		{"Read", map[string]any{"path": "/x"}, "done", map[string]any{"exitCode": 3}},                           // not a shell
	})
	_, shell := lineTotals(t, data)
	want := map[string]int{ShellSuccess: 2, ShellFailure: 2, ShellStopped: 3}
	if fmt.Sprint(shell) != fmt.Sprint(want) {
		t.Errorf("shell = %v, want %v", shell, want)
	}
}

// TestEditInputBeforeName: the input read before the block names its tool
// is still counted (key order is not fixed).
func TestEditInputBeforeName(t *testing.T) {
	data := []byte(`{"v":1,"id":"T-x","messages":[
{"role":"assistant","messageId":0,"content":[{"type":"tool_use","input":{"content":"a\nb"},"id":"t1","name":"create_file"},
 {"type":"tool_use","input":{"content":"a\nb"},"id":"t2","name":"Read"}]},
{"role":"user","messageId":1,"content":[{"type":"tool_result","toolUseID":"t1","run":{"result":"ok","status":"done"}},
 {"type":"tool_result","toolUseID":"t2","run":{"status":"done"}}]}]}`)
	lines, _ := lineTotals(t, data)
	if lines["Write/added"] != 2 || len(lines) != 2 {
		t.Errorf("lines = %v, want Write +2 only", lines)
	}
}

// TestSkipLineCountsKeepsAllButTheCounts: a parser that skips line
// counts gives every item of a generated corpus as a counting parser does
// (Lines included: an edit's model is a label value either way), with
// Added and Removed 0; and a file with a bad string in an edit's input
// fails to parse either way.
func TestSkipLineCountsKeepsAllButTheCounts(t *testing.T) {
	g := threadgen.New(threadgen.Options{Threads: 24, TotalBytes: 2 << 20, Seed: 4, Start: time.Date(2026, 1, 5, 9, 0, 0, 0, time.UTC)})
	counted, edits := 0, 0
	skipping := NewParser()
	skipping.SkipLineCounts()
	for i := 0; i < g.Len(); i++ {
		name, data := g.Thread(i)
		full, err := NewParser().ParseBytes(data)
		if err != nil {
			t.Fatal(err)
		}
		want := slices.Clone(SummarizeItems(full).Items)
		th, err := skipping.ParseBytes(data)
		if err != nil {
			t.Fatal(err)
		}
		got := SummarizeItems(th).Items
		for j := range want {
			if want[j].Lines {
				edits++
			}
			if want[j].Added+want[j].Removed > 0 {
				counted++
			}
			want[j].Added, want[j].Removed = 0, 0
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s: the items differ beyond the line counts", name)
		}
	}
	if edits == 0 || counted == 0 {
		t.Fatalf("%d edits, %d with lines: the corpus does not exercise them", edits, counted)
	}
	bad := bytes.Replace(editThread(t, []call{{"edit_file", map[string]any{"path": "/a.go", "old_str": "a", "new_str": "b@"}, "done", nil}}),
		[]byte("b@"), []byte(`b\q`), 1)
	if _, err := NewParser().ParseBytes(bad); err == nil {
		t.Fatal("a bad escape in an edit's input parses: the test shows nothing")
	}
	if _, err := skipping.ParseBytes(bad); err == nil {
		t.Error("a bad escape in an edit's input parses when lines are not counted")
	}
}
