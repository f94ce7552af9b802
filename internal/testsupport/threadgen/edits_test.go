package threadgen

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/amp-exporter/amp-exporter/parser/thread"
)

// TestEditsOffKeepsTheBytes: without Options.Edits the corpus is the bytes
// it was before the option existed (the hashes were taken on that code),
// so every benchmark and figure measured on a generated corpus still
// holds.
func TestEditsOffKeepsTheBytes(t *testing.T) {
	for _, c := range []struct {
		repos int
		want  string
	}{
		{0, "57a607dd11861672e412438b01d8c140575bb38318bb1bf87994c4e72fd3a5b0"},
		{3, "1fc55824d42d57a2b66f0d6b35acab708bf50339fb01abf2bc0f1f2701242c6b"},
	} {
		g := New(Options{Threads: 40, TotalBytes: 40 * 40_000, Seed: 7, Repositories: c.repos})
		h := sha256.New()
		for i := range g.Len() {
			name, data := g.Thread(i)
			h.Write([]byte(name))
			h.Write(data)
		}
		if got := hex.EncodeToString(h.Sum(nil)); got != c.want {
			t.Errorf("repositories %d: corpus hash %s, want %s", c.repos, got, c.want)
		}
	}
}

// parsedChanges is what the exporter's parser counts from the corpus, by
// the repository it reads, in the shape of Changes; and the tool calls by
// tool and status.
func parsedChanges(t *testing.T, g *Generator) (map[string]*Changes, map[string]map[string]int) {
	t.Helper()
	got := map[string]*Changes{}
	calls := map[string]map[string]int{}
	p := thread.NewParser()
	for i := range g.Len() {
		_, data := g.Thread(i)
		th, err := p.ParseBytes(data)
		if err != nil {
			t.Fatal(err)
		}
		s := thread.Summarize(th)
		c := got[s.Repository]
		if c == nil {
			c = &Changes{Lines: map[LineKey]int64{}, Shell: map[string]int64{}}
			got[s.Repository] = c
		}
		c.Threads++
		for _, it := range s.Items {
			if it.Copied {
				continue
			}
			if it.Lines && it.Status == thread.StatusDone {
				c.Lines[LineKey{it.Tool, KindAdded}] += it.Added
				c.Lines[LineKey{it.Tool, KindRemoved}] += it.Removed
			}
			if it.Shell != "" {
				c.Shell[it.Shell]++
			}
		}
		for tool, by := range s.ToolCalls {
			if calls[tool] == nil {
				calls[tool] = map[string]int{}
			}
			for st, n := range by {
				calls[tool][st] += n
			}
		}
	}
	return got, calls
}

// TestChangesAreWhatTheParserCounts: the lines and shell commands the
// generator knows it wrote are what the parser counts, repository by
// repository, tool by tool; and the corpus holds every case the counting
// rules name.
func TestChangesAreWhatTheParserCounts(t *testing.T) {
	g := New(Options{Threads: 200, TotalBytes: 200 * 30_000, Seed: 11, Repositories: 3, Edits: true})
	want := g.Changes()
	got, calls := parsedChanges(t, g)
	if !reflect.DeepEqual(got, want) {
		for repo, w := range want {
			t.Errorf("%q: generator %+v, parser %+v", repo, *w, got[repo])
		}
	}
	// The corpus holds what the test is about.
	total := map[LineKey]int64{}
	shell := map[string]int64{}
	for _, c := range want {
		for k, v := range c.Lines {
			total[k] += v
		}
		for k, v := range c.Shell {
			shell[k] += v
		}
	}
	for _, tool := range []string{ToolEdit, ToolWrite, ToolPatch} {
		for _, kind := range []string{KindAdded, KindRemoved} {
			if total[LineKey{tool, kind}] == 0 && !(tool == ToolWrite && kind == KindRemoved) {
				t.Errorf("no lines %s by %s in the corpus", kind, tool)
			}
		}
	}
	for _, o := range []string{ShellSuccess, ShellFailure, ShellStopped} {
		if shell[o] == 0 {
			t.Errorf("no shell command ended %s", o)
		}
	}
	// Edits that failed, were rejected or cancelled (they count nothing),
	// and the legacy edit tools (no lines to count).
	for _, st := range []string{"done", "error", "rejected", "cancelled"} {
		if calls[ToolEdit][st]+calls[ToolWrite][st]+calls[ToolPatch][st] == 0 {
			t.Errorf("no %s edit: %v %v %v", st, calls[ToolEdit], calls[ToolWrite], calls[ToolPatch])
		}
	}
	for _, tool := range []string{"fastmod", "enqueue_file_edit"} {
		if calls[tool]["done"] == 0 {
			t.Errorf("no done call of %s: %v", tool, calls[tool])
		}
	}
}

// TestKnownEditsHoldEveryCase: the known edits include a whitespace-only
// change, an empty created file, CRLF files, a last line without its
// line break, and patches that add, move and delete files; the threads
// are laid out as the CLI writes them.
func TestKnownEditsHoldEveryCase(t *testing.T) {
	g := New(Options{Threads: 200, TotalBytes: 200 * 30_000, Seed: 11, Repositories: 3, Edits: true})
	seen := map[string]bool{}
	for i := range g.Len() {
		_, data := g.Thread(i)
		var doc struct {
			Messages []struct {
				Content []struct {
					Type  string         `json:"type"`
					Name  string         `json:"name"`
					Input map[string]any `json:"input"`
				} `json:"content"`
			} `json:"messages"`
		}
		if err := json.Unmarshal(data, &doc); err != nil {
			t.Fatal(err)
		}
		checkLayout(t, i, data) // written as the CLI writes, escapes included
		for _, m := range doc.Messages {
			for _, b := range m.Content {
				if b.Type != "tool_use" {
					continue
				}
				switch b.Name {
				case "edit_file":
					old, _ := b.Input["old_str"].(string)
					new, _ := b.Input["new_str"].(string)
					for _, l := range strings.Split(new, "\n") {
						if t := strings.TrimLeft(l, " \t"); t != l && strings.Contains(old, "\t"+t) && !strings.Contains(old, "\n"+l) && !strings.HasPrefix(old, l) {
							seen["edit: whitespace only"] = true
						}
					}
					if strings.Contains(old, "\r\n") {
						seen["edit: CRLF"] = true
					}
					if !strings.HasSuffix(old, "\n") {
						seen["edit: no last line break"] = true
					}
				case "create_file":
					content, ok := b.Input["content"].(string)
					switch {
					case ok && content == "":
						seen["create: empty"] = true
					case strings.Contains(content, "\r\n"):
						seen["create: CRLF"] = true
					case !strings.HasSuffix(content, "\n"):
						seen["create: no last line break"] = true
					}
				case "apply_patch":
					patch, _ := b.Input["patchText"].(string)
					for _, h := range []string{"*** Add File: ", "*** Update File: ", "*** Move to: ", "*** Delete File: "} {
						if strings.Contains(patch, h) {
							seen["patch: "+h] = true
						}
					}
				}
			}
		}
	}
	for _, c := range []string{"edit: whitespace only", "edit: CRLF", "edit: no last line break",
		"create: empty", "create: CRLF", "create: no last line break",
		"patch: *** Add File: ", "patch: *** Update File: ", "patch: *** Move to: ", "patch: *** Delete File: "} {
		if !seen[c] {
			t.Errorf("the corpus has no %s", c)
		}
	}
}
