//go:build e2e

package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/amp-exporter/amp-exporter/internal/testsupport/ampservertest"
	"github.com/amp-exporter/amp-exporter/internal/testsupport/threadgen"
)

// commitsWant is what a generated corpus's shell calls did, keyed as the
// queries of TestCommitsAgainstPrometheus key their results: commits and
// pull requests by repository (empty for threads without a remote),
// pushes by outcome. Zero values are left out.
func commitsWant(g *threadgen.Generator) (commits, prs, pushes map[string]float64) {
	commits, prs, pushes = map[string]float64{}, map[string]float64{}, map[string]float64{}
	for repo, c := range g.Changes() {
		commits[repo] += float64(c.VCS.Commits)
		prs[repo] += float64(c.VCS.PullRequests)
		for o, v := range c.VCS.Pushes {
			pushes[o] += float64(v)
		}
	}
	return withoutZeros(commits), withoutZeros(prs), withoutZeros(pushes)
}

// commitsByModelWant is the same corpus's commits and pull requests by the
// model of the message that made the call, over all repositories.
func commitsByModelWant(g *threadgen.Generator) (commits, prs map[string]float64) {
	commits, prs = map[string]float64{}, map[string]float64{}
	for _, c := range g.Changes() {
		for m, v := range c.VCS.CommitsByModel {
			commits[m] += float64(v)
		}
		for m, v := range c.VCS.PullRequestsByModel {
			prs[m] += float64(v)
		}
	}
	return withoutZeros(commits), withoutZeros(prs)
}

// TestCommitsAgainstPrometheus: a real Prometheus scraping the exporter
// sees, per repository, the commits and pull requests the generator's
// shell calls made (every case: commits alone, chained, -a, -C dir;
// failed ones, dry runs, echo "git commit", --amend; gh, glab and hub
// requests and one that already exists; pushes of both outcomes), exactly
// as the generator knows it wrote them (threadgen's Changes), for thread
// files of every era (source="threads") and for threads on the Amp server
// stand-in (source="server"), and by the model of the message that made
// the call; and no command, commit message, remote or
// request URL is anywhere on /metrics.
func TestCommitsAgainstPrometheus(t *testing.T) {
	requireTool(t, "prometheus")
	opts := func(seed int64, repos int) threadgen.Options {
		return threadgen.Options{Threads: 60, TotalBytes: 60 * 80_000, Seed: seed, Repositories: repos, Commits: true,
			Start: time.Date(2026, 1, 5, 9, 0, 0, 0, time.UTC), Span: 100 * 24 * time.Hour}
	}
	local, remote := threadgen.New(opts(41, 3)), threadgen.New(opts(43, 2))

	dir := t.TempDir()
	if _, err := local.WriteDir(dir); err != nil {
		t.Fatal(err)
	}
	srv := ampservertest.New(standinKey, "dev@example.com")
	defer srv.Close()
	if err := srv.PutGenerated(remote, 0, remote.Len()); err != nil {
		t.Fatal(err)
	}
	data := ampLogin(t, srv.URL)
	cfg := filepath.Join(t.TempDir(), "amp-exporter.yml")
	yml := fmt.Sprintf("threads:\n  dirs: [%q]\namp_server:\n  sync_interval: 2s\n", dir)
	if err := os.WriteFile(cfg, []byte(yml), 0o644); err != nil {
		t.Fatal(err)
	}
	e := startExporter(t, exporterOpts{
		args: []string{"--config.file=" + cfg},
		env:  []string{"XDG_DATA_HOME=" + data, "AMP_URL=" + srv.URL},
	})
	p := startPrometheus(t, strings.TrimPrefix(e.base, "http://"))

	type check struct {
		query, key string
		want       map[string]float64
	}
	var checks []check
	for source, g := range map[string]*threadgen.Generator{"threads": local, "server": remote} {
		commits, prs, pushes := commitsWant(g)
		if len(commits) < 2 || len(prs) < 2 || len(pushes) != 2 {
			t.Fatalf("%s: the corpus commits in too few repositories, or pushes of one outcome only: %v %v %v", source, commits, prs, pushes)
		}
		sel := fmt.Sprintf(`{job="amp",source=%q}`, source)
		checks = append(checks,
			check{`sum by (repository) (amp_commits_total` + sel + `)`, "repository", commits},
			check{`sum by (repository) (amp_pull_requests_total` + sel + `)`, "repository", prs},
			check{`sum by (outcome) (amp_pushes_total` + sel + `)`, "outcome", pushes},
		)
		commitsBy, prsBy := commitsByModelWant(g)
		if len(commitsBy) < 2 {
			t.Fatalf("%s: the corpus commits under too few models: %v", source, commitsBy)
		}
		checks = append(checks,
			check{`sum by (model) (amp_commits_by_model_total` + sel + `)`, "model", commitsBy},
			check{`sum by (model) (amp_pull_requests_by_model_total` + sel + `)`, "model", prsBy},
		)
	}

	const timeout = 60 * time.Second
	deadline := time.Now().Add(timeout)
	for {
		var problems []string
		for _, c := range checks {
			got, err := p.query(c.query, c.key)
			switch {
			case err != nil:
				problems = append(problems, fmt.Sprintf("%s: %v", c.query, err))
			case !equalVectors(withoutZeros(got), c.want):
				problems = append(problems, fmt.Sprintf("%s = %s, want %s", c.query, formatVector(got), formatVector(c.want)))
			}
		}
		if len(problems) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("Prometheus did not see the generator's commits within %s:\n  %s", timeout, strings.Join(problems, "\n  "))
		}
		if e.exited() {
			t.Fatalf("exporter exited: %v\n%s", e.err, e.output.String())
		}
		time.Sleep(500 * time.Millisecond)
	}

	code, body, err := e.get("/metrics")
	if err != nil || code != 200 {
		t.Fatalf("/metrics: %d %v", code, err)
	}
	// The samples, not the HELP texts (which say what a commit is).
	var samples strings.Builder
	for _, line := range strings.Split(body, "\n") {
		if !strings.HasPrefix(line, "#") {
			samples.WriteString(line + "\n")
		}
	}
	for _, text := range append(threadgen.VCSTexts(), "/pull/", "merge_requests", "git commit", "pr create", "Amp-Thread-ID") {
		if strings.Contains(samples.String(), text) {
			t.Errorf("/metrics holds %q, a shell call's text", text)
		}
	}
	if strings.Contains(e.output.String(), "Fix the retry loop") {
		t.Error("the exporter's log holds a commit message")
	}
}
