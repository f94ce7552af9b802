package shellcmd

import (
	"bytes"
	"strings"
)

// What a simple command is, as far as counting goes.
type kind uint8

const (
	kindNone   kind = iota
	kindCommit      // git commit
	kindPush        // git push
	kindPR          // gh pr create, glab mr create, hub pull-request
)

// Where a command's reading is: which word is expected next.
type stage uint8

const (
	stStart  stage = iota // the command's name, after assignments and prefixes
	stPrefix              // options of a prefix command (env, nohup, …)
	stGit                 // git's (or hub's) global options, then its subcommand
	stGh                  // gh: "pr"
	stGhPr                // gh pr: "create"
	stGlab                // glab: "mr"
	stGlabMr              // glab mr: "create"
	stArgs                // the arguments of a command that counts
	stOther               // any other command: its words do not matter
)

// command is the reading of one simple command.
type command struct {
	stage    stage
	kind     kind
	skipArg  bool // the next word is an option's value
	dashdash bool // after "--": the rest are operands
	excluded bool // --amend or --dry-run: nothing new is made
	skipOne  bool // timeout: the next operand is its duration
}

// counter counts, from what the lexer reads, the commands that can
// commit, push or open a pull request, one reading per substitution level.
type counter struct {
	cmds                 [maxDepth]command
	commits, prs, pushes int
	trace                *trace // nil but in the lexer's golden test
}

func (c *counter) end(depth int) {
	if c.trace != nil {
		c.trace.end(depth)
	}
	cmd := &c.cmds[depth]
	if cmd.stage == stArgs && !cmd.excluded {
		switch cmd.kind {
		case kindCommit:
			c.commits++
		case kindPush:
			c.pushes++
		case kindPR:
			c.prs++
		}
	}
	*cmd = command{}
}

func (c *counter) word(depth int, w []byte, known bool) {
	if c.trace != nil {
		c.trace.word(depth, w, known)
	}
	cmd := &c.cmds[depth]
	switch cmd.stage {
	case stStart:
		if isAssignment(w) {
			return
		}
		if !known {
			cmd.stage = stOther
			return
		}
		cmd.start(w)
	case stPrefix:
		switch {
		case cmd.skipArg:
			cmd.skipArg = false
		case len(w) > 1 && w[0] == '-':
			cmd.skipArg = prefixValueOption(w)
		case isAssignment(w):
		case cmd.skipOne:
			cmd.skipOne = false
		default:
			cmd.stage = stStart
			c.word(depth, w, known)
		}
	case stGit:
		switch {
		case cmd.skipArg:
			cmd.skipArg = false
		case len(w) > 0 && w[0] == '-':
			cmd.skipArg = gitValueOption(w)
		case !known:
			cmd.stage = stOther
		case string(w) == "commit":
			cmd.stage, cmd.kind = stArgs, kindCommit
		case string(w) == "push":
			cmd.stage, cmd.kind = stArgs, kindPush
		case string(w) == "pull-request":
			// hub, or git aliased to hub.
			cmd.stage, cmd.kind = stArgs, kindPR
		default:
			cmd.stage = stOther
		}
	case stGh, stGlab:
		want := "pr"
		next := stGhPr
		if cmd.stage == stGlab {
			want, next = "mr", stGlabMr
		}
		switch {
		case cmd.skipArg:
			cmd.skipArg = false
		case string(w) == "-R" || string(w) == "--repo":
			cmd.skipArg = true
		case known && string(w) == want:
			cmd.stage = next
		default:
			cmd.stage = stOther
		}
	case stGhPr, stGlabMr:
		if known && (string(w) == "create" || string(w) == "new") {
			cmd.stage, cmd.kind = stArgs, kindPR
		} else {
			cmd.stage = stOther
		}
	case stArgs:
		cmd.arg(w)
	}
}

// start reads a command's name.
func (cmd *command) start(w []byte) {
	if i := bytes.LastIndexByte(w, '/'); i >= 0 {
		w = w[i+1:]
	}
	switch string(w) {
	case "!", "{", "}", "if", "then", "else", "elif", "fi", "do", "done", "while", "until":
		// Reserved words: the command follows.
	case "env", "command", "builtin", "nohup", "exec", "time":
		cmd.stage = stPrefix
	case "timeout":
		cmd.stage, cmd.skipOne = stPrefix, true
	case "git", "git.exe", "hub":
		cmd.stage = stGit
	case "gh", "gh.exe":
		cmd.stage = stGh
	case "glab", "glab.exe":
		cmd.stage = stGlab
	default:
		cmd.stage = stOther
	}
}

// arg reads an argument of a command that counts.
func (cmd *command) arg(w []byte) {
	switch {
	case cmd.skipArg:
		cmd.skipArg = false
	case cmd.dashdash || len(w) < 2 || w[0] != '-':
	case string(w) == "--":
		cmd.dashdash = true
	case string(w) == "--dry-run":
		cmd.excluded = true
	case string(w) == "--amend":
		cmd.excluded = cmd.excluded || cmd.kind == kindCommit
	case w[1] == '-':
		cmd.skipArg = valueOption(cmd.kind, w)
	default:
		// A cluster of short options (-am): the first that takes a value
		// takes the rest of the word, or the next word when it is last.
		for i := 1; i < len(w); i++ {
			o := w[i]
			if cmd.kind == kindPush && o == 'n' {
				cmd.excluded = true // push -n is --dry-run
			}
			if cmd.kind == kindCommit && (o == 'S' || o == 'u') {
				break // a value only when attached: the rest of the word
			}
			if shortValue(cmd.kind, o) {
				cmd.skipArg = i == len(w)-1
				break
			}
		}
	}
}

// prefixValueOption says whether an option of env or timeout takes the
// next word as its value.
func prefixValueOption(w []byte) bool {
	switch string(w) {
	case "-u", "-C", "-S", "--unset", "--chdir", "--split-string", "-s", "-k", "--signal", "--kill-after":
		return true
	}
	return false
}

// gitValueOption says whether a git global option takes the next word as
// its value.
func gitValueOption(w []byte) bool {
	switch string(w) {
	case "-C", "-c", "--git-dir", "--work-tree", "--namespace", "--config-env", "--super-prefix":
		return true
	}
	return false
}

// valueOption says whether a long option of a command that counts takes
// the next word as its value (when it is not written --option=value).
func valueOption(k kind, w []byte) bool {
	if bytes.IndexByte(w, '=') >= 0 {
		return false
	}
	switch k {
	case kindCommit:
		switch string(w) {
		case "--message", "--file", "--reuse-message", "--reedit-message", "--template",
			"--author", "--date", "--cleanup", "--fixup", "--squash", "--trailer",
			"--pathspec-from-file":
			return true
		}
	case kindPush:
		switch string(w) {
		case "--push-option", "--repo", "--receive-pack", "--exec":
			return true
		}
	case kindPR:
		switch string(w) {
		case "--title", "--body", "--body-file", "--base", "--head", "--repo", "--message",
			"--description", "--assignee", "--label", "--milestone", "--reviewer",
			"--source-branch", "--target-branch", "--template", "--project":
			return true
		}
	}
	return false
}

// shortValue says whether a short option takes a value (attached, or the
// next word).
func shortValue(k kind, o byte) bool {
	switch k {
	case kindCommit:
		// -m msg, -F file, -C/-c commit, -t template.
		return strings.IndexByte("mFCct", o) >= 0
	case kindPush:
		return o == 'o'
	default:
		// gh, glab and hub: title, body, base, head, message, description…
		return strings.IndexByte("tbBHFmdaAlMrRpsTe", o) >= 0
	}
}

// isAssignment says whether a word is a variable assignment (NAME=value),
// which a shell reads before the command's name.
func isAssignment(w []byte) bool {
	i := bytes.IndexByte(w, '=')
	if i <= 0 {
		return false
	}
	for j, c := range w[:i] {
		if c != '_' && (c < 'a' || c > 'z') && (c < 'A' || c > 'Z') && (j == 0 || c < '0' || c > '9') {
			return false
		}
	}
	return true
}
