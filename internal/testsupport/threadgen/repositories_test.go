package threadgen

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/amp-exporter/amp-exporter/parser/gitremote"
	"github.com/amp-exporter/amp-exporter/parser/thread"
)

// firstRemote is the URL of a generated thread's first tree, as written.
func firstRemote(t *testing.T, data []byte) (string, bool) {
	t.Helper()
	var doc struct {
		Env struct {
			Initial struct {
				Trees []struct {
					Repository *struct {
						URL string `json:"url"`
					} `json:"repository"`
				} `json:"trees"`
			} `json:"initial"`
		} `json:"env"`
	}
	if err := json.Unmarshal(data, &doc); err != nil {
		t.Fatal(err)
	}
	trees := doc.Env.Initial.Trees
	if len(trees) == 0 || trees[0].Repository == nil {
		return "", false
	}
	return trees[0].Repository.URL, true
}

// Every repository is written in every form, and each form is that
// repository once normalised; one slot in n+1 has no remote; every
// credential carries RemoteSecret.
func TestRemotesInEveryForm(t *testing.T) {
	const n = 4
	g := New(Options{Threads: (n + 1) * RemoteForms, TotalBytes: int64((n+1)*RemoteForms) * 4000, Seed: 5, Repositories: n})
	forms := map[string]map[string]bool{}
	secrets, none := 0, 0
	for i := range g.Len() {
		_, data := g.Thread(i)
		url, ok := firstRemote(t, data)
		repo := g.Repository(i)
		if !ok {
			none++
			if repo != "" {
				t.Errorf("thread %d: no remote written, repository %q", i, repo)
			}
			continue
		}
		got, reason := gitremote.Normalize(url)
		if got != repo || repo == "" {
			t.Errorf("thread %d: %q normalises to %q (%q), the generator says %q", i, url, got, reason, repo)
		}
		if forms[repo] == nil {
			forms[repo] = map[string]bool{}
		}
		forms[repo][url] = true
		if strings.Contains(url, RemoteSecret) {
			secrets++
		}
	}
	if none != RemoteForms || len(forms) != n {
		t.Errorf("%d threads without a remote, %d repositories; want %d and %d", none, len(forms), RemoteForms, n)
	}
	for repo, urls := range forms {
		if len(urls) != RemoteForms {
			t.Errorf("%s written in %d forms, want %d: %v", repo, len(urls), RemoteForms, urls)
		}
	}
	if secrets != 3*n {
		t.Errorf("%d remotes carry the secret, want %d (3 forms of %d repositories)", secrets, 3*n, n)
	}
	if !strings.HasPrefix(g.Repository(0), "github.com/") || !strings.Contains(g.Repository(1), "gitlab.example.com/platform/") {
		t.Errorf("hosts: %q %q", g.Repository(0), g.Repository(1))
	}
}

// Spend is what the exporter's parser counts from the same threads, by
// the repository it reads: the ground truth a test can hold the exporter
// to.
func TestSpendIsWhatTheParserCounts(t *testing.T) {
	g := New(Options{Threads: 60, TotalBytes: 60 * 20_000, Seed: 9, Repositories: 3})
	want := g.Spend()
	got := map[string]*RepositorySpend{}
	p := thread.NewParser()
	ledgers := 0
	for i := range g.Len() {
		_, data := g.Thread(i)
		th, err := p.ParseBytes(data)
		if err != nil {
			t.Fatal(err)
		}
		s := thread.Summarize(th)
		if s.Repository != g.Repository(i) {
			t.Errorf("thread %d: parsed repository %q, the generator says %q", i, s.Repository, g.Repository(i))
		}
		if s.Billing == thread.BillingLedger {
			ledgers++
		}
		rs := got[s.Repository]
		if rs == nil {
			rs = &RepositorySpend{Tokens: map[string]Tokens{}}
			got[s.Repository] = rs
		}
		rs.Threads++
		for model, tok := range s.Tokens {
			x := rs.Tokens[model]
			x.Input += tok.Input
			x.Output += tok.Output
			x.CacheRead += tok.CacheRead
			x.CacheCreation += tok.CacheCreation
			rs.Tokens[model] = x
		}
	}
	if ledgers == 0 || len(want) != 4 {
		t.Fatalf("%d ledger threads, %d repositories: the corpus does not test both billings over 3 repositories and none", ledgers, len(want))
	}
	if !reflect.DeepEqual(got, want) {
		for repo, w := range want {
			t.Errorf("%q: generator %+v, parser %+v", repo, *w, got[repo])
		}
	}
}
