package repomap

import (
	"errors"
	"strings"
	"testing"
)

func mustRule(t *testing.T, match, name string) Rule {
	t.Helper()
	r, err := Compile(match, name)
	if err != nil {
		t.Fatalf("Compile(%q, %q): %v", match, name, err)
	}
	return r
}

func TestMap(t *testing.T) {
	m := New(
		// Forks fold into the upstream, keeping the repository's name.
		mustRule(t, `github\.com/acme-forks/(.+)`, "github.com/acme/$1"),
		// A monorepo's HTTPS and SSH spellings, and its mirror.
		mustRule(t, `(dev\.azure\.com/acme/mono/_git|ssh\.dev\.azure\.com/v3/acme/mono)/mono|gitlab\.example\.com/mirrors/mono`, "mono"),
		mustRule(t, `github\.com/acme/(?P<repo>[^/]+)`, "acme/${repo}"),
		// Never reached for github.com/acme/*: the rule above wins.
		mustRule(t, `github\.com/acme/.*`, "second"),
		mustRule(t, `gitlab\.example\.com/platform/.*`, "platform"),
		mustRule(t, `price\.example/(.*)`, "$$$1"),
	)
	tests := []struct{ in, want string }{
		{"github.com/acme-forks/web", "github.com/acme/web"},
		{"dev.azure.com/acme/mono/_git/mono", "mono"},
		{"ssh.dev.azure.com/v3/acme/mono/mono", "mono"},
		{"gitlab.example.com/mirrors/mono", "mono"},
		{"github.com/acme/web", "acme/web"},
		{"github.com/acme/web/sub", "second"},
		{"gitlab.example.com/platform/infra/tools", "platform"},
		{"price.example/x", "$x"},
		// Matched whole, never in part.
		{"gitlab.example.com/mirrors/mono-old", "gitlab.example.com/mirrors/mono-old"},
		{"xgithub.com/acme/web", "xgithub.com/acme/web"},
		// Unmatched keep their own; no repository stays none.
		{"bitbucket.org/acme/web", "bitbucket.org/acme/web"},
		{"", ""},
	}
	for _, tt := range tests {
		if got := m.Map(tt.in); got != tt.want {
			t.Errorf("Map(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
	var none *Mapper
	if got := none.Map("github.com/acme/web"); got != "github.com/acme/web" {
		t.Errorf("nil mapper: %q", got)
	}
	if got := New().Map("github.com/acme/web"); got != "github.com/acme/web" {
		t.Errorf("no rules: %q", got)
	}
}

// A name its groups make longer than a label value may be is cut at a
// character boundary.
func TestMapCutsLongNames(t *testing.T) {
	m := New(mustRule(t, `(.*)`, "é$1$1"))
	in := "h/" + strings.Repeat("a", 100)
	got := m.Map(in)
	if len(got) > 128 || !strings.HasPrefix(got, "éh/aaa") {
		t.Fatalf("Map = %q (%d bytes)", got, len(got))
	}
	m = New(mustRule(t, `(.*)`, "a$1"))
	got = m.Map("h/" + strings.Repeat("é", 70))
	if len(got) > 128 || !strings.HasSuffix(got, "é") {
		t.Fatalf("Map = %q (%d bytes): cut inside a character", got, len(got))
	}
}

func TestCompileErrors(t *testing.T) {
	tests := []struct {
		match, name string
		want        error
		says        string
	}{
		{"", "x", ErrMatch, "required"},
		{"github.com/(acme", "x", ErrMatch, "missing closing )"},
		{"a**", "x", ErrMatch, "invalid nested repetition"},
		{"a)|(b", "x", ErrMatch, "unexpected )"},
		{"github.com/acme/.*", "", ErrName, "required"},
		{"github.com/(acme)/.*", "$2", ErrName, "$2 names no group"},
		{"github.com/(acme)/.*", "${org}", ErrName, "$org names no group"},
		{"github.com/(acme)/.*", "x$", ErrName, "a $ not followed by a group"},
		{"github.com/(acme)/.*", "${1", ErrName, "a $ not followed by a group"},
		{"github.com/acme/.*", "a\x00b", ErrName, "not printable"},
		{"github.com/acme/.*", strings.Repeat("n", 129), ErrName, "at most 128"},
	}
	for _, tt := range tests {
		_, err := Compile(tt.match, tt.name)
		if !errors.Is(err, tt.want) || !strings.Contains(err.Error(), tt.says) {
			t.Errorf("Compile(%q, %q) = %v, want %v saying %q", tt.match, tt.name, err, tt.want, tt.says)
		}
	}
	for _, ok := range [][2]string{
		{`github\.com/(?P<org>[^/]+)/.*`, "${org}"},
		{`github\.com/([^/]+)/.*`, "$1-$0"},
		{`github\.com/.*`, "cost $$"},
	} {
		if _, err := Compile(ok[0], ok[1]); err != nil {
			t.Errorf("Compile(%q, %q): %v", ok[0], ok[1], err)
		}
	}
}
