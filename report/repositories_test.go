package report

import (
	"bytes"
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/amp-exporter/amp-exporter/internal/testsupport/threadgen"
	"github.com/amp-exporter/amp-exporter/store"
)

// TestRepositoriesAreTheGenerators: threads spread over repositories whose
// remotes are written in every form (some threads without one): a report
// gives each repository the tokens the generator says its threads spent,
// and its JSON lists them per period; with the label off it lists none.
func TestRepositoriesAreTheGenerators(t *testing.T) {
	dir := t.TempDir()
	g := threadgen.New(threadgen.Options{Threads: 40, TotalBytes: 3_000_000, Seed: 5, Repositories: 5})
	if _, err := g.WriteDir(dir); err != nil {
		t.Fatal(err)
	}
	want := map[string]int64{}
	for repo, s := range g.Spend() {
		for _, tok := range s.Tokens {
			want[repo] += tok.Input + tok.Output + tok.CacheRead + tok.CacheCreation
		}
	}
	if len(want) < 3 {
		t.Fatalf("%d repositories: the corpus does not exercise them", len(want))
	}
	load := func(on bool) *Report {
		repos := store.NewRepositories(nil)
		repos.Set(on, nil)
		l, _, err := Load(context.Background(), LoadOptions{Dirs: []string{dir}, Workers: 2, Repositories: repos,
			Labels: store.NewLabelCap(100, nil), Now: time.Now()})
		if err != nil {
			t.Fatal(err)
		}
		r, err := Build(l.Entries(), Options{Kind: Monthly, Location: time.UTC})
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	r := load(true)
	got := map[string]int64{}
	for _, p := range r.Periods {
		for repo, u := range p.Repos {
			got[repo] += u.Tokens()
		}
	}
	for repo, n := range want {
		if got[repo] != n {
			t.Errorf("repository %q: %d tokens, the generator spent %d", repo, got[repo], n)
		}
	}
	for repo := range got {
		if _, ok := want[repo]; !ok {
			t.Errorf("repository %q: not the generator's", repo)
		}
	}

	jsonRepos := func(r *Report) int {
		var b bytes.Buffer
		if err := WriteJSON(&b, r); err != nil {
			t.Fatal(err)
		}
		var out struct {
			Monthly []struct {
				Repositories []struct {
					Repository string `json:"repository"`
				} `json:"repositories"`
			} `json:"monthly"`
		}
		if err := json.Unmarshal(b.Bytes(), &out); err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, p := range out.Monthly {
			n += len(p.Repositories)
		}
		return n
	}
	if n := jsonRepos(r); n < len(want) {
		t.Errorf("the JSON lists %d repositories over its months, want at least %d", n, len(want))
	}
	if n := jsonRepos(load(false)); n != 0 {
		t.Errorf("the label off: the JSON lists %d repositories", n)
	}
}
