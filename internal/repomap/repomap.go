// Package repomap maps a thread's repository (gitremote's host/path) to the
// name the configuration's `repositories` rules give it, so that a team can
// fold forks, mirrors and a remote's spellings over HTTPS and SSH into one
// project. Rules are tried in order; the first whose expression matches the
// whole value wins; a value no rule matches keeps its own.
package repomap

import (
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/amp-exporter/amp-exporter/parser/gitremote"
)

// Rule is one compiled `repositories` entry.
type Rule struct {
	re   *regexp.Regexp
	name string
}

// Errors of Compile, told apart so that the configuration names the key
// (match or name) they are about.
var (
	ErrMatch = errors.New("match")
	ErrName  = errors.New("name")
)

// Compile makes a rule. match is an RE2 expression (Go's regexp syntax)
// matched against the whole value, as Prometheus anchors relabel regexes;
// name is the value given to what it matches, and may use the match's
// groups as $1, ${1} or ${group} (regexp.Expand). The errors wrap ErrMatch
// or ErrName.
func Compile(match, name string) (Rule, error) {
	if match == "" {
		return Rule{}, fmt.Errorf("%w: required", ErrMatch)
	}
	// Compiled alone first: its error then quotes the expression as
	// written, and one that only the anchoring would balance ("a)|(b") is
	// refused.
	if _, err := regexp.Compile(match); err != nil {
		return Rule{}, fmt.Errorf("%w: %w", ErrMatch, err)
	}
	re, err := regexp.Compile("^(?:" + match + ")$")
	if err != nil {
		return Rule{}, fmt.Errorf("%w: %w", ErrMatch, err)
	}
	if err := checkName(re, name); err != nil {
		return Rule{}, fmt.Errorf("%w: %w", ErrName, err)
	}
	return Rule{re: re, name: name}, nil
}

// checkName refuses a name that is empty, too long, not text, or that
// refers to a group the expression does not have (regexp.Expand would put
// nothing there, silently).
func checkName(re *regexp.Regexp, name string) error {
	switch {
	case name == "":
		return errors.New("required")
	case len(name) > gitremote.MaxBytes:
		return fmt.Errorf("%d bytes, at most %d", len(name), gitremote.MaxBytes)
	case !utf8.ValidString(name) || strings.IndexFunc(name, func(r rune) bool { return !unicode.IsPrint(r) }) >= 0:
		return errors.New("holds a character that is not printable")
	}
	for rest := name; ; {
		i := strings.IndexByte(rest, '$')
		if i < 0 {
			return nil
		}
		rest = rest[i+1:]
		if strings.HasPrefix(rest, "$") {
			rest = rest[1:] // "$$" is a dollar sign
			continue
		}
		ref, braced := groupRef(rest)
		if ref == "" {
			return fmt.Errorf("%q: a $ not followed by a group; write $$ for a dollar sign", name)
		}
		if !hasGroup(re, ref) {
			return fmt.Errorf("%q: $%s names no group of match", name, ref)
		}
		if braced {
			rest = rest[len(ref)+2:]
		} else {
			rest = rest[len(ref):]
		}
	}
}

// groupRef reads the group a "$" refers to, as regexp.Expand does: the
// longest run of letters, digits and "_", or a braced one.
func groupRef(s string) (ref string, braced bool) {
	if strings.HasPrefix(s, "{") {
		end := strings.IndexByte(s, '}')
		if end < 0 {
			return "", false
		}
		return s[1:end], true
	}
	n := 0
	for n < len(s) && (s[n] == '_' || 'a' <= s[n] && s[n] <= 'z' || 'A' <= s[n] && s[n] <= 'Z' || '0' <= s[n] && s[n] <= '9') {
		n++
	}
	return s[:n], false
}

func hasGroup(re *regexp.Regexp, ref string) bool {
	if n, err := strconv.Atoi(ref); err == nil {
		return n >= 0 && n <= re.NumSubexp()
	}
	return re.SubexpIndex(ref) >= 0
}

// Mapper applies rules in order. The zero Mapper and a nil one map every
// value to itself.
type Mapper struct {
	rules []Rule
}

// New returns a mapper of rules, tried in the order given.
func New(rules ...Rule) *Mapper {
	return &Mapper{rules: rules}
}

// Map returns the name of the first rule that matches repo, else repo. A
// thread without a repository ("") has none whatever the rules say. A name
// made longer than gitremote.MaxBytes by its groups is cut there, at a
// character boundary.
func (m *Mapper) Map(repo string) string {
	if m == nil || repo == "" {
		return repo
	}
	for _, r := range m.rules {
		idx := r.re.FindStringSubmatchIndex(repo)
		if idx == nil {
			continue
		}
		if !strings.Contains(r.name, "$") {
			return r.name
		}
		return cut(string(r.re.ExpandString(nil, r.name, repo, idx)))
	}
	return repo
}

// cut shortens s to at most gitremote.MaxBytes at a rune boundary.
func cut(s string) string {
	if len(s) <= gitremote.MaxBytes {
		return s
	}
	n := gitremote.MaxBytes
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}
