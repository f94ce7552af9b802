package thread

import (
	"unsafe"

	"github.com/amp-exporter/amp-exporter/parser/linecount"
	"github.com/amp-exporter/amp-exporter/parser/shellcmd"
)

// The lines an edit tool changed are counted from its input, as Amp's UI
// counts them (docs/counting.md, "Lines changed"): edit_file diffs old_str
// against new_str, create_file counts content, apply_patch counts the
// lines of patchText. The legacy tools that edited files (CLI-Jan's
// enqueue_file_edit, fastmod) carry no text to count in their input, so
// they count none.

// countLines and readExits are always true: a benchmark turns them off to
// measure, in the same run, what reading edit inputs (and diffing them) and
// shell exit codes costs a scan (BenchmarkCorpusLineCounting).
var countLines, readExits = true, true

// countCommits is always true: a benchmark turns it off to measure, in the
// same run, what reading shell commands and their outputs for commits,
// pull requests and pushes costs a scan (BenchmarkCorpusCommitCounting).
var countCommits = true

// editKind is how a tool's input gives the lines it changed. It comes
// from the block's name, the CLI's spelling that every era writes.
type editKind uint8

const (
	editNone editKind = iota
	editDiff
	editCreate
	editPatch
)

// editKindOf is the edit kind of a tool name.
func editKindOf(name []byte) editKind {
	switch string(name) {
	case "edit_file":
		return editDiff
	case "create_file":
		return editCreate
	case "apply_patch":
		return editPatch
	}
	return editNone
}

// MaxDiffWork bounds the diff work of one parse, over all its edit_file
// calls, in linecount cells (linecount.Budget): about a fifth of a second of
// CPU. linecount.MaxCells bounds one diff only, and a thread is parsed again
// whole at every change: each edit of two unrelated texts of more lines
// than the bit-parallel LCS takes costs MaxCells (a tenth of a second), a
// 64 MiB thread of them minutes. Real threads spend a small part of it. The
// budget is spent in the file's order, so that a thread that grows keeps
// its earlier edits' counts; an edit past it that needs a costly search is
// left uncounted (UncountedDiffBudget).
const MaxDiffWork = 2 * linecount.MaxCells

// UncountedDiffBudget is ToolUse.Uncounted for an edit_file call whose diff
// the parse's MaxDiffWork had no room left for.
const UncountedDiffBudget = "diff_budget"

// UncountedReasons are the values ToolUse.Uncounted can take.
var UncountedReasons = []string{UncountedDiffBudget}

// maxEditText bounds each input string read for counting: the scanner
// holds no longer value. A longer one is counted from its first MiB.
const maxEditText = 1 << 20

// editInput is what a tool_use's input holds for counting lines. Its
// buffers are the parser's, reused from block to block.
type editInput struct {
	old, new, content, patch []byte
	hasOld, hasNew           bool
	hasContent, hasPatch     bool
	// cmd is a shell command's text (Bash's cmd, shell_command's
	// command), read for parser/shellcmd.
	cmd    []byte
	hasCmd bool
	// intent is the reading of the command of a tool_use known to be a
	// shell call when its input was read, read where it lay, uncopied.
	intent    shellcmd.Intent
	hasIntent bool
	// presence: the strings are read (so that a bad one fails the parse
	// as it always does) but not kept, and count says only whether the
	// lines could be counted (Parser.SkipLineCounts).
	presence bool
}

func (e *editInput) reset() {
	e.hasOld, e.hasNew, e.hasContent, e.hasPatch, e.hasCmd, e.hasIntent = false, false, false, false, false, false
}

// editInput reads a tool_use's input, keeping the strings that count
// lines and a shell command (read at once when shell says the tool is a
// shell, else kept until the tool's name is known); everything else is
// skipped.
func (p *Parser) editInput(shell bool) {
	sc, e := p.sc, &p.edit
	obj := sc.Object()
	for key, ok := obj.Next(); ok; key, ok = obj.Next() {
		var dst *[]byte
		var has *bool
		switch string(key) {
		case "old_str":
			dst, has = &e.old, &e.hasOld
		case "new_str":
			dst, has = &e.new, &e.hasNew
		case "content":
			dst, has = &e.content, &e.hasContent
		case "patchText":
			dst, has = &e.patch, &e.hasPatch
		case "cmd", "command":
			if !countCommits {
				sc.Skip()
				continue
			}
			v, ok := sc.StringPrefix(shellcmd.MaxCommandBytes)
			switch {
			case !ok:
			case shell:
				e.intent, e.hasIntent = shellcmd.ReadCommand(view(v)), true
			default:
				e.cmd, e.hasCmd = append(e.cmd[:0], v...), true
			}
			continue
		default:
			sc.Skip()
			continue
		}
		if v, ok := sc.StringPrefix(maxEditText); ok {
			*has = true
			if !e.presence {
				*dst = append((*dst)[:0], v...)
			}
		}
	}
}

// view is b as a string without a copy: linecount keeps nothing of what it
// is given, and b is not written while it counts.
func view(b []byte) string { return unsafe.String(unsafe.SliceData(b), len(b)) }

// count gives the lines the input read changes, for a tool of kind k; ok
// is false when the tool is not an edit tool or its input lacks what it
// needs, or the diff it needs is past the budget b (uncounted says so).
func (e *editInput) count(k editKind, b *linecount.Budget) (added, removed int64, ok bool, uncounted string) {
	switch k {
	case editDiff:
		if !e.hasOld || !e.hasNew {
			return 0, 0, false, ""
		}
		if !e.presence {
			var c linecount.Count
			added, removed, c = b.Diff(view(e.old), view(e.new))
			if c == linecount.Uncounted {
				return 0, 0, false, UncountedDiffBudget
			}
		}
		return added, removed, true, ""
	case editCreate:
		if !e.hasContent {
			return 0, 0, false, ""
		}
		if !e.presence {
			added = linecount.Lines(view(e.content))
		}
		return added, 0, true, ""
	case editPatch:
		if !e.hasPatch {
			return 0, 0, false, ""
		}
		if !e.presence {
			added, removed = linecount.Patch(view(e.patch))
		}
		return added, removed, true, ""
	}
	return 0, 0, false, ""
}
