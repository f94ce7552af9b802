package thread

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/amp-exporter/amp-exporter/parser/gitremote"
)

// The parts of testdata/repository/repository-token.json's remote and workspace that
// must never be kept: the token and password halves in its URL, its query
// and fragment, and the user's name and paths.
var fixtureSecrets = []string{"x-access-token", "ghs_Fx7Q", "pw9Zk", "glpat-Rr4Wq8", "Ke5Yv", "alice", "token="}

// TestRepositoryKeepsNoCredentials parses the fixture whose remote carries
// a token, and looks for every part of it in what the parse leaves: the
// golden summary, the thread and summary as printed, and the parser's own
// interned strings (which outlive the parse).
func TestRepositoryKeepsNoCredentials(t *testing.T) {
	data, err := os.ReadFile("testdata/repository/repository-token.json")
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range fixtureSecrets {
		if !strings.Contains(string(data), s) {
			t.Fatalf("the fixture lost %q: the test would prove nothing", s)
		}
	}
	p := NewParser()
	th, err := p.ParseBytes(data)
	if err != nil {
		t.Fatal(err)
	}
	sum := Summarize(th)
	if sum.Repository != "github.com/acme/web" || sum.RepositoryReason != gitremote.ReasonNone {
		t.Fatalf("repository %q (%q), want github.com/acme/web", sum.Repository, sum.RepositoryReason)
	}
	js, err := json.Marshal(sum)
	if err != nil {
		t.Fatal(err)
	}
	golden, err := os.ReadFile("testdata/golden/repository-token.golden.json")
	if err != nil {
		t.Fatal(err)
	}
	kept := map[string]string{
		"golden":  string(golden),
		"summary": string(js) + fmt.Sprintf("%+v", *sum),
		"thread":  fmt.Sprintf("%+v", *withoutStorage(th)),
		"intern":  fmt.Sprint(p.intern),
	}
	for where, text := range kept {
		for _, s := range fixtureSecrets {
			if strings.Contains(text, s) {
				t.Errorf("%s holds %q", where, s)
			}
		}
	}
}

func TestRepository(t *testing.T) {
	const msgs = `"messages":[]`
	tests := []struct {
		doc    string
		want   string
		reason gitremote.Reason
	}{
		{`{"v":1,` + msgs + `}`, "", ""},
		{`{"v":1,"env":{"initial":{"trees":[{"repository":{"url":"git@GitHub.com:acme/web.git"}}]}}}`, "github.com/acme/web", ""},
		// The first tree is the thread's repository.
		{`{"v":1,"env":{"initial":{"trees":[{"uri":"file:///x"},{"repository":{"url":"git@github.com:acme/web"}}]}}}`, "", ""},
		{`{"v":1,"env":{"initial":{"trees":[{"repository":{"url":"https://github.com/acme/a"}},{"repository":{"url":"https://github.com/acme/b"}}]}}}`, "github.com/acme/a", ""},
		{`{"v":1,"env":{"initial":{"trees":[null,{"repository":{"url":"git@github.com:acme/web"}}]}}}`, "", ""},
		{`{"v":1,"env":{"initial":{"trees":[]}}}`, "", ""},
		{`{"v":1,"env":{"initial":{"trees":{}}}}`, "", ""},
		{`{"v":1,"env":null}`, "", ""},
		{`{"v":1,"env":{"initial":{"trees":[{"repository":{"url":null}}]}}}`, "", ""},
		{`{"v":1,"env":{"initial":{"trees":[{"repository":{"url":""}}]}}}`, "", ""},
		{`{"v":1,"env":{"initial":{"trees":[{"repository":{"url":7}}]}}}`, "", gitremote.ReasonInvalid},
		{`{"v":1,"env":{"initial":{"trees":[{"repository":{"url":"/srv/git/web"}}]}}}`, "", gitremote.ReasonLocal},
		{`{"v":1,"env":{"initial":{"trees":[{"repository":{"url":"https://u:p?w@github.com/acme/web"}}]}}}`, "", gitremote.ReasonInvalid},
		{`{"v":1,"env":{"initial":{"trees":[{"repository":{"url":"https://github.com/` + strings.Repeat("a", gitremote.MaxInputBytes) + `"}}]}}}`, "", gitremote.ReasonTooLong},
		// Escapes are decoded before the remote is read.
		{`{"v":1,"env":{"initial":{"trees":[{"repository":{"url":"https:\/\/github.com\/acme\/web\u002egit"}}]}}}`, "github.com/acme/web", ""},
		// A key given twice takes its last value, at every level.
		{`{"v":1,"env":{"initial":{"trees":[{"repository":{"url":"git@github.com:acme/a","url":"git@github.com:acme/b"}}]}}}`, "github.com/acme/b", ""},
		{`{"v":1,"env":{"initial":{"trees":[{"repository":{"url":"git@github.com:acme/a"}}]}},"env":{}}`, "", ""},
		{`{"v":1,"env":{"initial":{"trees":[{"repository":{"url":"/local"}}]},"initial":{}}}`, "", ""},
		{`{"v":1,"env":{"initial":{"trees":[{"repository":{"url":"git@github.com:acme/a"},"repository":7}]}}}`, "", ""},
	}
	for _, tt := range tests {
		th, err := NewParser().ParseBytes([]byte(tt.doc))
		if err != nil {
			t.Fatalf("%s: %v", tt.doc, err)
		}
		s := Summarize(th)
		if s.Repository != tt.want || s.RepositoryReason != tt.reason {
			t.Errorf("%.120s: repository %q (%q), want %q (%q)", tt.doc, s.Repository, s.RepositoryReason, tt.want, tt.reason)
		}
		compareWithReference(t, []byte(tt.doc))
		// A listing's env alone gives the same.
		var top map[string]json.RawMessage
		if err := json.Unmarshal([]byte(tt.doc), &top); err != nil {
			t.Fatal(err)
		}
		if repo, reason := RepositoryOf(top["env"]); repo != tt.want || reason != tt.reason {
			t.Errorf("%.120s: RepositoryOf %q (%q), want %q (%q)", tt.doc, repo, reason, tt.want, tt.reason)
		}
	}
}

// BenchmarkEnv measures what reading the repository costs a parse: a
// thread of a generated thread's env alone, read for its remote (env),
// against the same bytes under a key the parser skips whole, as it skipped
// env before (skip); and RepositoryOf, which a listing's summary calls.
func BenchmarkEnv(b *testing.B) {
	docs, _ := benchDocs(b)
	var top map[string]json.RawMessage
	if err := json.Unmarshal(docs[0], &top); err != nil {
		b.Fatal(err)
	}
	env := []byte(top["env"])
	read := []byte(`{"v":1,"env":` + string(env) + `}`)
	skip := []byte(`{"v":1,"enx":` + string(env) + `}`)
	for _, bc := range []struct {
		name string
		doc  []byte
		repo bool
	}{{"env", read, true}, {"skip", skip, false}} {
		b.Run(bc.name, func(b *testing.B) {
			b.SetBytes(int64(len(env)))
			b.ReportAllocs()
			p := NewParser()
			for b.Loop() {
				th, err := p.ParseBytes(bc.doc)
				if err != nil || (th.Repository != "") != bc.repo {
					b.Fatal(err, th)
				}
			}
		})
	}
	b.Run("RepositoryOf", func(b *testing.B) {
		b.SetBytes(int64(len(env)))
		b.ReportAllocs()
		for b.Loop() {
			if repo, _ := RepositoryOf(env); repo == "" {
				b.Fatal("no repository")
			}
		}
	})
}
