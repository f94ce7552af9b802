package threadgen

import "strconv"

// Edits with known line counts (Options.Edits).
//
// The generator builds each edit from an edit script it chose, so it knows
// the lines the edit added and removed without diffing anything: every
// line it writes ends in a counter of its own (fixed width, so no two
// lines of one edit are equal), hence the lines an old_str and its new_str
// have in common are exactly the lines the script kept, in order, and the
// shortest line diff adds every other new line and removes every other
// old line (Amp's split on "\n" adds an empty last line to a side that
// ends with its line break). Changed lines are new lines (another text,
// or the same text with other indentation: a whitespace-only change),
// CRLF files keep their "\r" on every line, and the last line may lack
// its line break.

// Tool names as the exporter labels them (the normalization of the thread
// formats: edit_file is Edit, create_file is Write).
const (
	ToolEdit  = "Edit"
	ToolWrite = "Write"
	ToolPatch = "apply_patch"
)

// Line kinds.
const (
	KindAdded   = "added"
	KindRemoved = "removed"
)

// Shell command outcomes.
const (
	ShellSuccess = "success"
	ShellFailure = "failure"
	ShellStopped = "stopped"
)

// LineKey is a tool and a kind of lines.
type LineKey struct{ Tool, Kind string }

// Changes are what the agent did in the threads of one repository, known
// from what the generator wrote, not read back from it.
type Changes struct {
	Threads int
	// Lines are the lines changed by the tool calls whose run is done
	// (an edit that failed, was rejected or cancelled changed nothing; the
	// legacy edit tools, enqueue_file_edit and fastmod, carry no lines),
	// by tool and kind. Nil without Options.Edits: the edits are then
	// random text whose line diff the generator does not know.
	Lines map[LineKey]int64
	// Shell are the shell commands (Bash, shell_command) by how they
	// ended: a done run by its exit code (0 success, -1 stopped, other
	// failure), a cancelled one stopped, one that errored failure; a
	// rejected command never ran.
	Shell map[string]int64
	// VCS is what the shell calls that commit, push or open pull
	// requests did (Options.Commits; zero without it).
	VCS VCS
}

// Changes returns what the corpus changed, by repository (host/path, ""
// for the threads without a remote), as Spend does for tokens. It
// generates every thread once. A sub-agent's tool calls, which Amp
// writes inside a tool result, are not the thread's and are not in it.
func (g *Generator) Changes() map[string]*Changes {
	out := map[string]*Changes{}
	for i := range g.n {
		t := g.generate(i)
		repo := g.Repository(i)
		c := out[repo]
		if c == nil {
			c = &Changes{Shell: map[string]int64{}}
			if g.edits {
				c.Lines = map[LineKey]int64{}
			}
			out[repo] = c
		}
		c.Threads++
		for k, v := range t.lines {
			if c.Lines != nil {
				c.Lines[k] += v
			}
		}
		for k, v := range t.shell {
			c.Shell[k] += v
		}
		c.VCS.add(t.vcs)
	}
	return out
}

// tallyCall records what a call with a terminal result changed.
func (t *threadBuilder) tallyCall(c *call) {
	if t.nested {
		return
	}
	t.tallyVCS(c)
	switch c.kind {
	case tBash, tShell:
		outcome := ""
		switch c.status {
		case "done":
			switch c.exit {
			case 0:
				outcome = ShellSuccess
			case -1:
				outcome = ShellStopped
			default:
				outcome = ShellFailure
			}
		case "cancelled":
			outcome = ShellStopped
		case "error":
			outcome = ShellFailure
		}
		if outcome != "" {
			if t.shell == nil {
				t.shell = map[string]int64{}
			}
			t.shell[outcome]++
		}
	case tEdit, tCreate, tPatch:
		if c.status != "done" || !t.edits {
			return
		}
		tool := ToolEdit
		switch c.kind {
		case tCreate:
			tool = ToolWrite
		case tPatch:
			tool = ToolPatch
		}
		if t.lines == nil {
			t.lines = map[LineKey]int64{}
		}
		t.lines[LineKey{tool, KindAdded}] += c.added
		t.lines[LineKey{tool, KindRemoved}] += c.removed
	}
}

// editLines writes the lines of a known edit: each a line of the project's
// code with a counter of its own, escaped.
type editLines struct {
	t    *threadBuilder
	crlf bool
	n    int // lines made so far, the counter
}

// comment is the start of a line comment in the project's language.
func (e *editLines) comment() string {
	if e.t.proj.lang == langPy {
		return " # e"
	}
	return " // e"
}

// line returns a new escaped line without its line break, unlike every
// other line it made.
func (e *editLines) line() string {
	t := e.t
	l := pick(t.r, codePools[t.proj.lang].lines)
	l = l[:len(l)-2] // its \n
	e.n++
	s := strconv.Itoa(100000 + e.n%100000)
	return l + e.comment() + s[1:]
}

// reindent returns the line with its indentation changed, nothing else:
// a whitespace-only change.
func reindent(l string) string {
	if len(l) >= 2 && l[:2] == `\t` {
		return "    " + l[2:]
	}
	return "  " + l
}

// br is the escaped line break.
func (e *editLines) br() string {
	if e.crlf {
		return `\r\n`
	}
	return `\n`
}

// write appends lines, each but maybe the last with its line break.
func (e *editLines) write(lines []string, lastBreak bool) {
	w := e.t.w
	for i, l := range lines {
		w.b = append(w.b, l...)
		if i < len(lines)-1 || lastBreak {
			w.b = append(w.b, e.br()...)
		}
	}
}

// linesFor is about how many lines of code fill n bytes.
func linesFor(n int) int { return max(1, n/36) }

// knownEdit writes edit_file's old_str and new_str from an edit script:
// each old line kept, removed, changed (another line, or the same with
// other indentation) or preceded by inserted lines.
func (t *threadBuilder) knownEdit(c *call) {
	w, r := t.w, t.r
	e := &editLines{t: t, crlf: t.proj.windows && r.IntN(2) == 0}
	n := linesFor(t.other(300, 0.9, 6000))
	// A snippet usually ends without its line break, and each side has
	// its own. In a CRLF file the "\r" before it is part of the line, so
	// there both sides end with their line break, or their last lines
	// would differ.
	oldBreak, newBreak := r.IntN(3) == 0, r.IntN(3) == 0
	if e.crlf {
		oldBreak, newBreak = true, true
	}
	var old, new []string
	for range n {
		l := e.line()
		old = append(old, l)
		switch u := r.IntN(20); {
		case u < 13: // kept
			new = append(new, l)
		case u < 15: // removed
			c.removed++
		case u < 17: // changed
			c.removed++
			c.added++
			new = append(new, e.line())
		case u < 18: // whitespace only
			c.removed++
			c.added++
			new = append(new, reindent(l))
		default: // lines inserted before it
			k := 1 + r.IntN(4)
			for range k {
				new = append(new, e.line())
			}
			new = append(new, l)
			c.added += int64(k)
		}
	}
	// Amp splits each side on "\n" (as JavaScript does) before its diff:
	// a last line break, or an empty side, leaves an empty last line. The
	// generated lines are never empty, so that empty line is common when
	// both sides have it, and added or removed when one side only does.
	oldEmpty, newEmpty := oldBreak || len(old) == 0, newBreak || len(new) == 0
	switch {
	case oldEmpty && !newEmpty:
		c.removed++
	case newEmpty && !oldEmpty:
		c.added++
	}
	w.keyStringStart("old_str")
	e.write(old, oldBreak)
	w.stringEnd()
	w.keyStringStart("new_str")
	e.write(new, newBreak)
	w.stringEnd()
	if r.IntN(10) == 0 {
		w.keyBool("replace_all", true) // the pair counts once all the same
	}
}

// knownCreate writes create_file's content: some files empty, some
// without a last line break, CRLF on Windows, blank lines among the code.
func (t *threadBuilder) knownCreate(c *call) {
	w, r := t.w, t.r
	e := &editLines{t: t, crlf: t.proj.windows && r.IntN(2) == 0}
	n := linesFor(t.other(2500, 0.9, 40_000))
	if r.IntN(20) == 0 {
		n = 0 // a file created empty
	}
	lines := make([]string, n)
	lastBreak := r.IntN(5) != 0
	for i := range lines {
		// A blank line is a line, but not a blank last one without its
		// line break: that is only the line break before it.
		if r.IntN(8) == 0 && (i < n-1 || lastBreak) {
			continue
		}
		lines[i] = e.line()
	}
	w.keyStringStart("content")
	e.write(lines, lastBreak)
	w.stringEnd()
	// Amp counts a created file's lines split on "\n" after dropping one
	// last "\n": an empty file is one (empty) line.
	c.added = int64(max(n, 1))
}

// knownPatch writes apply_patch's patchText: files added, updated (some
// moved) and deleted, the + and - lines counted as they are written. The
// deleted file's lines are not in the patch and count none.
func (t *threadBuilder) knownPatch(c *call) {
	w, r, p := t.w, t.r, t.proj
	e := &editLines{t: t}
	budget := t.other(700, 0.8, 12_000)
	w.keyStringStart("patchText")
	w.b = append(w.b, `*** Begin Patch\n`...)
	for s := len(w.b); len(w.b)-s < budget; {
		rel := p.files[r.IntN(len(p.files))]
		switch u := r.IntN(10); {
		case u < 2:
			w.b = append(w.b, `*** Add File: `...)
			w.b = appendEscaped(w.b, rel+".new")
			w.b = append(w.b, `\n`...)
			for range 1 + r.IntN(12) {
				w.b = append(w.b, '+')
				if r.IntN(8) != 0 {
					w.b = append(w.b, e.line()...)
				}
				w.b = append(w.b, `\n`...)
				c.added++
			}
		case u < 3:
			w.b = append(w.b, `*** Delete File: `...)
			w.b = appendEscaped(w.b, rel)
			w.b = append(w.b, `\n`...)
		default:
			w.b = append(w.b, `*** Update File: `...)
			w.b = appendEscaped(w.b, rel)
			w.b = append(w.b, `\n`...)
			if r.IntN(6) == 0 {
				w.b = append(w.b, `*** Move to: `...)
				w.b = appendEscaped(w.b, rel+".moved")
				w.b = append(w.b, `\n`...)
			}
			for range 1 + r.IntN(3) {
				w.b = append(w.b, `@@ `...)
				w.b = append(w.b, pick(r, funcNames)...)
				w.b = append(w.b, `\n`...)
				for range 2 + r.IntN(10) {
					switch v := r.IntN(10); {
					case v < 5:
						w.b = append(w.b, ' ')
					case v < 7:
						w.b = append(w.b, '-')
						c.removed++
					default:
						w.b = append(w.b, '+')
						c.added++
					}
					w.b = append(w.b, e.line()...)
					w.b = append(w.b, `\n`...)
				}
			}
			if r.IntN(4) == 0 {
				w.b = append(w.b, `*** End of File\n`...)
			}
		}
	}
	w.b = append(w.b, `*** End Patch`...)
	w.stringEnd()
}

// legacyEdit writes the input of a legacy edit tool of the CLI's first
// 2026 era: no text whose lines could be counted.
func (t *threadBuilder) legacyEdit(c *call) {
	w, r, p := t.w, t.r, t.proj
	switch c.kind {
	case tFastmod:
		w.keyString("pattern", pick(r, funcNames))
		w.keyString("substitution", pick(r, funcNames))
		w.keyString("glob", pick(r, globPatterns[p.lang]))
	default: // tEnqueueEdit
		w.keyArray("paths")
		for range 1 + r.IntN(3) {
			w.elemString(p.abs(p.files[r.IntN(len(p.files))]))
		}
		w.endArr()
		w.keyString("objective", pick(r, objectives))
	}
}

// shellExit draws a shell command's exit code; with Options.Edits some
// commands were stopped (-1).
func (t *threadBuilder) shellExit() int64 {
	r := t.r
	if t.edits && r.IntN(15) == 0 {
		return -1
	}
	if r.IntN(6) == 0 {
		return int64(pick(r, []int{1, 1, 1, 2, 124, 127, 130}))
	}
	return 0
}
