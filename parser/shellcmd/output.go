package shellcmd

import "strings"

// proofs is what an output shows was done.
type proofs struct {
	headers    int // new-commit headers: [branch abc1234] …
	urls       int // pull or merge request URLs alone on a line
	pushed     int // "To <remote>" and "Everything up-to-date" lines
	pushFailed int // "error: failed to push some refs" lines
}

// scanOutput counts, in the last MaxOutputBytes of out, the lines that
// prove what the call's commands did; it looks only for what is wanted.
func scanOutput(out string, commits, prs, pushes bool) proofs {
	var p proofs
	if !commits && !prs && !pushes {
		return p
	}
	if len(out) > MaxOutputBytes {
		out = out[len(out)-MaxOutputBytes:]
		// The first line is cut: it proves nothing.
		if i := strings.IndexByte(out, '\n'); i >= 0 {
			out = out[i+1:]
		} else {
			out = ""
		}
	}
	already := false // the line before said a request already exists
	for len(out) > 0 {
		line := out
		if i := strings.IndexByte(out, '\n'); i >= 0 {
			line, out = out[:i], out[i+1:]
		} else {
			out = ""
		}
		line = strings.TrimSuffix(line, "\r")
		if commits && isCommitHeader(line) {
			p.headers++
		}
		if prs {
			if !already && isRequestURL(strings.TrimSpace(line)) {
				p.urls++
			}
			already = strings.Contains(line, "already exists")
		}
		if pushes {
			switch {
			case strings.HasPrefix(line, "To ") && len(line) > 3, line == "Everything up-to-date":
				p.pushed++
			case strings.HasPrefix(line, "error: failed to push some refs"):
				p.pushFailed++
			}
		}
	}
	return p
}

// isCommitHeader says whether a line is the header git commit prints for
// the commit it made: "[<branch> <abbreviated id>] <subject>", with
// "(root-commit)" before the id for a repository's first commit and
// "detached HEAD" as the branch when none is checked out.
func isCommitHeader(line string) bool {
	if len(line) < 4 || line[0] != '[' {
		return false
	}
	end := strings.IndexByte(line, ']')
	if end < 0 || (end+1 < len(line) && line[end+1] != ' ') {
		return false
	}
	inside := line[1:end]
	sp := strings.LastIndexByte(inside, ' ')
	if sp <= 0 || !isAbbrevID(inside[sp+1:]) {
		return false
	}
	branch := strings.TrimSuffix(inside[:sp], " (root-commit)")
	return branch != "" && branch[0] != ' ' && !strings.ContainsAny(branch, "\t[]")
}

// isAbbrevID says whether s is an abbreviated object id: 4 to 64 lower-case
// hex digits (core.abbrev's least, a SHA-256 id's most).
func isAbbrevID(s string) bool {
	if len(s) < 4 || len(s) > 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// isRequestURL says whether s is the URL of one pull or merge request, as
// the forges' CLIs print it when they open one:
//
//	https://github.com/<owner>/<repo>/pull/<n>             (gh, hub; any host)
//	https://gitlab.com/<group>/…/<project>/-/merge_requests/<n>  (glab)
func isRequestURL(s string) bool {
	rest, ok := strings.CutPrefix(s, "https://")
	if !ok {
		if rest, ok = strings.CutPrefix(s, "http://"); !ok {
			return false
		}
	}
	slash := strings.LastIndexByte(rest, '/')
	if slash < 0 || !isNumber(rest[slash+1:]) {
		return false
	}
	rest = rest[:slash]
	var path string
	if p, ok := strings.CutSuffix(rest, "/-/merge_requests"); ok {
		path = p
	} else if p, ok := strings.CutSuffix(rest, "/pull"); ok {
		path = p
	} else {
		return false
	}
	// host/owner/repo at least, no empty part, nothing a URL of a request
	// never holds.
	if strings.ContainsAny(path, " \t?#@\\") || strings.Contains(path, "//") {
		return false
	}
	host, repo, ok := strings.Cut(path, "/")
	return ok && host != "" && strings.Count(repo, "/") >= 1 && !strings.HasPrefix(repo, "/") && !strings.HasSuffix(repo, "/")
}

func isNumber(s string) bool {
	if len(s) == 0 || len(s) > 12 || s[0] == '0' {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}
