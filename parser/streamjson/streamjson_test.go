package streamjson

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files")

type goldenLine struct {
	Line  int         `json:"line"`
	Error string      `json:"error,omitempty"`
	Inc   *Increments `json:"increments,omitempty"`
}

type goldenRun struct {
	Lines []goldenLine `json:"lines"`
	End   *Execution   `json:"end,omitempty"`
}

// decodeCapture feeds a capture through a Parser and a Run, line by line.
func decodeCapture(data []byte) goldenRun {
	p := NewParser()
	var run Run
	var out goldenRun
	for i, line := range bytes.Split(data, []byte("\n")) {
		m, ok, err := p.ParseLine(line)
		switch {
		case err != nil:
			out.Lines = append(out.Lines, goldenLine{Line: i + 1, Error: Reason(err)})
		case ok:
			inc := run.Apply(m)
			out.Lines = append(out.Lines, goldenLine{Line: i + 1, Inc: &inc})
		}
	}
	if ex, ok := run.End(); ok {
		out.End = &ex
	}
	return out
}

func TestGolden(t *testing.T) {
	files, _ := filepath.Glob("testdata/*.jsonl")
	if len(files) == 0 {
		t.Fatal("no captures")
	}
	for _, f := range files {
		name := strings.TrimSuffix(filepath.Base(f), ".jsonl")
		t.Run(name, func(t *testing.T) {
			data, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			got, err := json.MarshalIndent(decodeCapture(data), "", "  ")
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, '\n')
			path := filepath.Join("testdata", "golden", name+".golden.json")
			if *update {
				_ = os.MkdirAll(filepath.Dir(path), 0o755)
				if err := os.WriteFile(path, got, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (go test ./parser/streamjson -update creates it)", err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("differs from %s:\n%s", path, got)
			}
		})
	}
}

func TestResultStatus(t *testing.T) {
	tests := []struct {
		isError bool
		text    string
		want    string
	}{
		{false, "ok", "done"},
		{false, "Tool status: queued", "done"},
		{true, "Tool execution cancelled: Unknown reason", "cancelled"},
		{true, "Tool execution rejected by user: User declined permission", "rejected"},
		{true, "exit status 2", "error"},
		{true, "", "error"},
	}
	for _, tt := range tests {
		if got := resultStatus(tt.isError, []byte(tt.text)); got != tt.want {
			t.Errorf("resultStatus(%v, %q) = %q, want %q", tt.isError, tt.text, got, tt.want)
		}
	}
}

func TestDeniedTools(t *testing.T) {
	got := deniedTools("The following tools require user approval, which is not supported in stream JSON mode: Bash, edit_file , mcp__gh__x")
	if strings.Join(got, "|") != "Bash|edit_file|mcp__gh__x" {
		t.Fatalf("got %q", got)
	}
	if got := deniedTools("Out of Credits Add credits to keep using Amp."); got != nil {
		t.Fatalf("got %q from an unrelated error", got)
	}
}

func FuzzParseLine(f *testing.F) {
	files, _ := filepath.Glob("testdata/*.jsonl")
	shell, _ := filepath.Glob("testdata/shell/*.jsonl")
	for _, file := range append(files, shell...) {
		data, _ := os.ReadFile(file)
		for _, line := range bytes.Split(data, []byte("\n")) {
			if len(line) < 4096 {
				f.Add(line)
			}
		}
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		p := NewParser()
		m, ok, err := p.ParseLine(line)
		if err != nil && ok {
			t.Fatal("error and ok")
		}
		if ok {
			// A valid JSON object must be accepted; the parser may be more
			// lenient than encoding/json, never stricter.
			var run Run
			inc := run.Apply(m)
			if inc.Tokens != nil && (inc.Tokens.Input < 0 || inc.Tokens.Output < 0) {
				t.Fatal("negative tokens")
			}
			for _, r := range m.ToolResults {
				if pr := r.Proof; pr.Headers < 0 || pr.URLs < 0 || pr.Pushed < 0 || pr.PushFailed < 0 {
					t.Fatalf("negative proof %+v", pr)
				}
			}
		} else if err == nil && len(bytes.TrimSpace(line)) > 0 {
			t.Fatalf("non-blank line %q neither parsed nor refused", line)
		}
		// Unmarshal into a map accepts `null` too, leaving the map nil:
		// only a decoded object is one ParseLine must accept.
		var v map[string]any
		if json.Unmarshal(line, &v) == nil && v != nil && err != nil {
			t.Fatalf("encoding/json accepts the object %q, ParseLine says %v", line, err)
		}
	})
}
