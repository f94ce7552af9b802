// Package docs holds the project's documentation. Its test checks that
// every relative link in the repository's Markdown resolves: to a file or
// directory that exists, and, with a #fragment into a Markdown file, to a
// heading (or an HTML id) that exists in it.
package docs

import (
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
	"unicode"
)

// pending names documents that other branches are adding at the time of
// writing. A link to one of them is accepted while the file is missing;
// once it exists its links and headings are checked like any other's.
// Remove an entry when its document has been merged.
var pending = map[string]bool{}

// TestRelativeLinksResolve checks README.md, CHANGELOG.md, CONTRIBUTING.md,
// SECURITY.md and every Markdown file under docs/ and deploy/.
func TestRelativeLinksResolve(t *testing.T) {
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	files, err := markdownFiles(root)
	if err != nil {
		t.Fatal(err)
	}
	if len(files) < 5 {
		t.Fatalf("found only %d Markdown files under %s: %v", len(files), root, files)
	}
	for _, p := range []string{"README.md", "CHANGELOG.md", "docs/counting.md", "docs/formats/amp-threads.md"} {
		if !contains(files, p) {
			t.Errorf("%s is not among the checked files", p)
		}
	}
	problems, err := checkLinks(os.DirFS(root), files, pending)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Error(p)
	}
}

// TestCheckLinksFindsDeadLinks holds the checker itself to its job on a
// small tree: every kind of dead link is reported, nothing else is.
func TestCheckLinksFindsDeadLinks(t *testing.T) {
	tree := map[string]string{
		"README.md": "# Title\n\n## Quick start\n\n" +
			"[ok](docs/a.md) [ok dir](docs/) [ok anchor](docs/a.md#the-b-section)\n" +
			"[ok self](#quick-start) [ok ext](https://example.com/x.md) [ok mail](mailto:a@b)\n" +
			"[dead](docs/missing.md) [dead anchor](docs/a.md#nope) [dead self](#nowhere)\n" +
			"`[not a link](in/code.md)`\n" +
			"```\n[not a link](in/fence.md)\n```\n" +
			"[ok pending](docs/later.md#anything)\n" +
			"[ref]: docs/gone.md\n",
		"docs/a.md": "# A\n\n## The `b` section\n\n## Amp `--stream-json` runs\n\n## 5.5 `getThreadTail`, `getThread` and more\n\n" +
			"Setext\n------\n\n<a id=\"custom\"></a>\n\n" +
			"[up](../README.md#title) [sib](#amp---stream-json-runs) [num](#55-getthreadtail-getthread-and-more)\n" +
			"[setext](#setext) [custom](#custom) [dup](#a-1)\n",
	}
	dir := t.TempDir()
	for name, body := range tree {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	files := []string{"README.md", "docs/a.md"}
	got, err := checkLinks(os.DirFS(dir), files, map[string]bool{"docs/later.md": true})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		`README.md:7: "docs/missing.md": no such file or directory`,
		`README.md:7: "docs/a.md#nope": no heading "nope" in docs/a.md`,
		`README.md:7: "#nowhere": no heading "nowhere" in README.md`,
		`README.md:13: "docs/gone.md": no such file or directory`,
		`docs/a.md:15: "#a-1": no heading "a-1" in docs/a.md`,
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("problems:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func TestSlug(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"Quick start", "quick-start"},
		{"Amp `--stream-json` runs", "amp---stream-json-runs"},
		{"arm64 (Apple Silicon, Graviton)", "arm64-apple-silicon-graviton"},
		{"4.7 Forked threads", "47-forked-threads"},
		{"1.8 `usage` (assistant messages)", "18-usage-assistant-messages"},
		{"Dollars: estimated and billed", "dollars-estimated-and-billed"},
		{"make test on a fresh machine", "make-test-on-a-fresh-machine"},
		{"[A link](x.md) and **bold**", "a-link-and-bold"},
		{"snake_case stays", "snake_case-stays"},
	} {
		if got := slug(c.in); got != c.want {
			t.Errorf("slug(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// markdownFiles lists the checked files, slash-separated and relative to
// root, sorted.
func markdownFiles(root string) ([]string, error) {
	var out []string
	for _, top := range []string{"README.md", "CHANGELOG.md", "CONTRIBUTING.md", "SECURITY.md"} {
		if _, err := os.Stat(filepath.Join(root, top)); err == nil {
			out = append(out, top)
		}
	}
	for _, dir := range []string{"docs", "deploy"} {
		err := filepath.WalkDir(filepath.Join(root, dir), func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() && (d.Name() == "node_modules" || strings.HasPrefix(d.Name(), ".")) {
				return filepath.SkipDir
			}
			if !d.IsDir() && strings.HasSuffix(d.Name(), ".md") {
				rel, err := filepath.Rel(root, p)
				if err != nil {
					return err
				}
				out = append(out, filepath.ToSlash(rel))
			}
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("listing Markdown under %q: %w", dir, err)
		}
	}
	sort.Strings(out)
	return out, nil
}

var (
	inlineLink = regexp.MustCompile(`\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)`)
	refLink    = regexp.MustCompile(`^\s{0,3}\[[^\]]+\]:\s*<?([^\s>]+)>?`)
	codeSpan   = regexp.MustCompile("(`+)[^`]*?(`+)")
	htmlID     = regexp.MustCompile(`<a\s+(?:[^>]*\s)?(?:id|name)="([^"]+)"`)
	atx        = regexp.MustCompile(`^\s{0,3}(#{1,6})\s+(.*?)\s*#*\s*$`)
	setextLine = regexp.MustCompile(`^\s{0,3}(=+|-+)\s*$`)
	scheme     = regexp.MustCompile(`^[a-zA-Z][a-zA-Z0-9+.-]*:`)
)

// link is one relative link found in a file.
type link struct {
	line   int
	target string
}

// parsed is what a Markdown file offers and asks for.
type parsed struct {
	anchors map[string]bool
	links   []link
}

// parse reads the headings (as GitHub anchors, duplicates numbered -1,
// -2, …), HTML ids, and links of a Markdown text, outside fenced code
// and code spans.
func parse(text string) parsed {
	p := parsed{anchors: map[string]bool{}}
	seen := map[string]int{}
	addHeading := func(h string) {
		s := slug(h)
		if n, ok := seen[s]; ok {
			seen[s] = n + 1
			s = fmt.Sprintf("%s-%d", s, n+1)
		} else {
			seen[s] = 0
		}
		p.anchors[s] = true
	}
	fence := ""
	prev := ""
	for i, line := range strings.Split(text, "\n") {
		trimmed := strings.TrimSpace(line)
		if fence != "" {
			if strings.HasPrefix(trimmed, fence) {
				fence = ""
			}
			prev = ""
			continue
		}
		if strings.HasPrefix(trimmed, "```") || strings.HasPrefix(trimmed, "~~~") {
			fence = trimmed[:3]
			prev = ""
			continue
		}
		if m := atx.FindStringSubmatch(line); m != nil {
			addHeading(m[2])
		} else if setextLine.MatchString(line) && strings.TrimSpace(prev) != "" &&
			!strings.HasPrefix(strings.TrimSpace(prev), "|") && !strings.HasPrefix(strings.TrimSpace(prev), "-") {
			addHeading(strings.TrimSpace(prev))
		}
		for _, m := range htmlID.FindAllStringSubmatch(line, -1) {
			p.anchors[m[1]] = true
		}
		code := codeSpan.ReplaceAllString(line, "")
		for _, m := range inlineLink.FindAllStringSubmatch(code, -1) {
			p.links = append(p.links, link{line: i + 1, target: m[1]})
		}
		if m := refLink.FindStringSubmatch(code); m != nil {
			p.links = append(p.links, link{line: i + 1, target: m[1]})
		}
		prev = line
	}
	return p
}

// slug is GitHub's anchor for a heading: the rendered text lower-cased,
// letters, digits, spaces, hyphens and underscores kept, spaces turned
// into hyphens.
func slug(heading string) string {
	text := inlineLink.ReplaceAllStringFunc(heading, func(s string) string {
		return s[1:strings.Index(s, "](")]
	})
	var b strings.Builder
	for _, r := range strings.ToLower(text) {
		switch {
		case r == ' ':
			b.WriteByte('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsNumber(r):
			b.WriteRune(r)
		}
	}
	return b.String()
}

// checkLinks returns one line per relative link in files (paths relative
// to fsys) that does not resolve. A missing target listed in pending is
// accepted.
func checkLinks(fsys fs.FS, files []string, pending map[string]bool) ([]string, error) {
	cache := map[string]parsed{}
	load := func(name string) (parsed, error) {
		if p, ok := cache[name]; ok {
			return p, nil
		}
		b, err := fs.ReadFile(fsys, name)
		if err != nil {
			return parsed{}, err
		}
		p := parse(string(b))
		cache[name] = p
		return p, nil
	}
	var problems []string
	for _, f := range files {
		p, err := load(f)
		if err != nil {
			return nil, fmt.Errorf("reading %q: %w", f, err)
		}
		for _, l := range p.links {
			if scheme.MatchString(l.target) || strings.HasPrefix(l.target, "//") {
				continue // absolute URL, mailto:
			}
			target, frag, _ := strings.Cut(l.target, "#")
			resolved := f
			if target != "" {
				resolved = path.Clean(path.Join(path.Dir(f), target))
			}
			if strings.HasPrefix(resolved, "../") || resolved == ".." {
				problems = append(problems, fmt.Sprintf("%s:%d: %q: points outside the repository", f, l.line, l.target))
				continue
			}
			info, err := fs.Stat(fsys, resolved)
			if err != nil {
				if pending[resolved] {
					continue
				}
				problems = append(problems, fmt.Sprintf("%s:%d: %q: no such file or directory", f, l.line, l.target))
				continue
			}
			if frag == "" || info.IsDir() || !strings.HasSuffix(resolved, ".md") {
				continue
			}
			tp, err := load(resolved)
			if err != nil {
				return nil, fmt.Errorf("reading %q: %w", resolved, err)
			}
			if !tp.anchors[strings.ToLower(frag)] && !tp.anchors[frag] {
				problems = append(problems, fmt.Sprintf("%s:%d: %q: no heading %q in %s", f, l.line, l.target, frag, resolved))
			}
		}
	}
	return problems, nil
}
