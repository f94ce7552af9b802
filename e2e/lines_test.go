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

// linesWant is what a generated corpus changed, keyed as the queries of
// TestLinesChangedAgainstPrometheus key their results: by kind, by
// "tool/kind", by "repository|kind" (the repository empty for threads
// without a remote), and shell commands by outcome. Zero values are left
// out (the exporter may or may not expose a series that stays 0).
func linesWant(g *threadgen.Generator) (byKind, byToolKind, byRepoKind, shell map[string]float64) {
	byKind, byToolKind, byRepoKind, shell = map[string]float64{}, map[string]float64{}, map[string]float64{}, map[string]float64{}
	for repo, c := range g.Changes() {
		for k, v := range c.Lines {
			byKind[k.Kind] += float64(v)
			byToolKind[k.Tool+"/"+k.Kind] += float64(v)
			byRepoKind[repo+"|"+k.Kind] += float64(v)
		}
		for o, v := range c.Shell {
			shell[o] += float64(v)
		}
	}
	for _, m := range []map[string]float64{byKind, byToolKind, byRepoKind, shell} {
		for k, v := range m {
			if v == 0 {
				delete(m, k)
			}
		}
	}
	return byKind, byToolKind, byRepoKind, shell
}

// withoutZeros drops the series whose value is 0.
func withoutZeros(m map[string]float64) map[string]float64 {
	out := map[string]float64{}
	for k, v := range m {
		if v != 0 {
			out[k] = v
		}
	}
	return out
}

// TestLinesChangedAgainstPrometheus: a real Prometheus scraping the
// exporter sees the lines the generator's edits changed (by kind, by tool
// and kind, by repository and kind) and the shell commands by outcome,
// exactly as the generator knows it wrote them
// (threadgen's Changes, not the exporter's own line counter), for thread
// files (source="threads") and for threads on the Amp server stand-in
// (source="server"). The legacy edit tools count no lines.
func TestLinesChangedAgainstPrometheus(t *testing.T) {
	local := threadgen.New(threadgen.Options{Threads: 60, TotalBytes: 60 * 30_000, Seed: 29, Repositories: 3, Edits: true})
	remote := threadgen.New(threadgen.Options{Threads: 60, TotalBytes: 60 * 30_000, Seed: 31, Repositories: 2, Edits: true})

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
		byKind, byToolKind, byRepoKind, shell := linesWant(g)
		if len(byRepoKind) < 6 {
			t.Fatalf("%s: lines changed in too few repositories: %v", source, byRepoKind)
		}
		if len(byKind) != 2 || len(shell) != 3 || byToolKind["Edit/added"] == 0 || byToolKind["Write/added"] == 0 || byToolKind["apply_patch/added"] == 0 {
			t.Fatalf("%s: the corpus does not change lines with every tool and run commands of every outcome: %v %v", source, byToolKind, shell)
		}
		sel := fmt.Sprintf(`{job="amp",source=%q}`, source)
		checks = append(checks,
			check{`sum by (kind) (amp_lines_changed_total` + sel + `)`, "kind", byKind},
			check{`sum by (tk) (label_join(amp_lines_changed_total` + sel + `, "tk", "/", "tool", "kind"))`, "tk", byToolKind},
			check{`sum by (rk) (label_join(amp_lines_changed_total` + sel + `, "rk", "|", "repository", "kind"))`, "rk", byRepoKind},
			check{`sum by (outcome) (amp_shell_commands_total` + sel + `)`, "outcome", shell},
		)
	}
	checks = append(checks, check{`count(amp_lines_changed_total{job="amp",tool=~"fastmod|enqueue_file_edit"}) or vector(0)`, "", map[string]float64{"": 0}})

	const timeout = 60 * time.Second
	deadline := time.Now().Add(timeout)
	for {
		var problems []string
		for _, c := range checks {
			got, err := p.query(c.query, c.key)
			switch {
			case err != nil:
				problems = append(problems, fmt.Sprintf("%s: %v", c.query, err))
			case c.key != "" && !equalVectors(withoutZeros(got), c.want), c.key == "" && !equalVectors(got, c.want):
				problems = append(problems, fmt.Sprintf("%s = %s, want %s", c.query, formatVector(got), formatVector(c.want)))
			}
		}
		if len(problems) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("Prometheus did not see the generator's counts within %s:\n  %s", timeout, strings.Join(problems, "\n  "))
		}
		if e.exited() {
			t.Fatalf("exporter exited: %v\n%s", e.err, e.output.String())
		}
		time.Sleep(500 * time.Millisecond)
	}
}
