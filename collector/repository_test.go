package collector

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/amp-exporter/amp-exporter/store"
)

// repoDoc is a thread with a remote ("" for none) and one answer.
func repoDoc(id, remote string, out int) string {
	env := ""
	if remote != "" {
		env = `"env":{"initial":{"trees":[{"repository":{"url":"` + remote + `"}}]}},`
	}
	return `{"v":1,"id":"` + id + `","agentMode":"smart",` + env + `"messages":[` +
		`{"role":"user","messageId":0,"content":[{"type":"text","text":"go"}]},` +
		`{"role":"assistant","messageId":1,"content":[{"type":"text","text":"ok"}],"state":{"type":"complete","stopReason":"end_turn"},"usage":{"model":"m1","inputTokens":1,"outputTokens":` + strconv.Itoa(out) + `}}]}`
}

// A thread's repository is a label of its token series; a thread without
// one has its series without the label, as before the label existed; the
// switch off shows the series merged, without it.
func TestRepositoryLabelRendered(t *testing.T) {
	repos := store.NewRepositories(nil)
	s := store.NewThreadStore(store.StoreOptions{Now: func() time.Time { return fixedNow }, Repositories: repos})
	for _, d := range []struct{ id, remote string }{
		{"T-1", "https://x-access-token:SECRET@github.com/acme/web.git"},
		{"T-2", "git@github.com:acme/web.git"},
		{"T-3", ""},
	} {
		s.Apply("/d/"+d.id+".json", store.FileVersion{}, summaryOf(t, repoDoc(d.id, d.remote, 100)))
	}
	c := NewAmpCollector(s, nil)
	c.SetRepositories(repos)
	want := `
# HELP amp_threads Amp threads currently present and readable (local thread files, and threads listed on the Amp server when that source is on), by agent mode and repository.
# TYPE amp_threads gauge
amp_threads{agent_mode="medium"} 1
amp_threads{agent_mode="medium",repository="github.com/acme/web"} 2
# HELP amp_tokens_total Amp tokens by model and type, as the files report them (for non-Anthropic providers cache_creation holds the uncached prompt).
# TYPE amp_tokens_total counter
amp_tokens_total{model="m1",source="threads",token_type="input"} 1
amp_tokens_total{model="m1",source="threads",token_type="output"} 100
amp_tokens_total{model="m1",repository="github.com/acme/web",source="threads",token_type="input"} 2
amp_tokens_total{model="m1",repository="github.com/acme/web",source="threads",token_type="output"} 200
`
	if err := testutil.GatherAndCompare(shown(t, c), strings.NewReader(want), "amp_tokens_total", "amp_threads"); err != nil {
		t.Error(err)
	}
	repos.Set(false, nil)
	want = `
# HELP amp_threads Amp threads currently present and readable (local thread files, and threads listed on the Amp server when that source is on), by agent mode and repository.
# TYPE amp_threads gauge
amp_threads{agent_mode="medium"} 3
# HELP amp_tokens_total Amp tokens by model and type, as the files report them (for non-Anthropic providers cache_creation holds the uncached prompt).
# TYPE amp_tokens_total counter
amp_tokens_total{model="m1",source="threads",token_type="input"} 3
amp_tokens_total{model="m1",source="threads",token_type="output"} 300
`
	if err := testutil.GatherAndCompare(shown(t, c), strings.NewReader(want), "amp_tokens_total", "amp_threads"); err != nil {
		t.Error(err)
	}
	if problems, err := testutil.CollectAndLint(c); err != nil || len(problems) > 0 {
		t.Errorf("lint: %v %v", problems, err)
	}
}

// A series started at zero (amp_prompts_total, the billed kinds) is not
// added under no repository when the value has a series under one.
func TestZeroSeriesNotBesideARepository(t *testing.T) {
	s := store.NewThreadStore(store.StoreOptions{Now: func() time.Time { return fixedNow }, Repositories: store.NewRepositories(nil)})
	s.Apply("/d/T-1.json", store.FileVersion{}, summaryOf(t, repoDoc("T-1", "git@github.com:acme/web.git", 100)))
	want := `
# HELP amp_prompts_total Amp user messages that are prompts (not tool-result carriers).
# TYPE amp_prompts_total counter
amp_prompts_total{repository="github.com/acme/web",source="threads"} 1
`
	if err := testutil.GatherAndCompare(shown(t, NewAmpCollector(s, nil)), strings.NewReader(want), "amp_prompts_total"); err != nil {
		t.Error(err)
	}
}
