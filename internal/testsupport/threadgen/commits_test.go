package threadgen

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"
)

// commitsCorpus spans every era of the CLI the generator writes (client
// versions from January to late March 2026, ledger threads, OpenAI
// models' shell_command).
func commitsCorpus(commits bool) *Generator {
	return New(Options{Threads: 80, TotalBytes: 80 * 60_000, Seed: 37, Repositories: 3, Commits: commits,
		Start: time.Date(2026, 1, 5, 9, 0, 0, 0, time.UTC), Span: 100 * 24 * time.Hour})
}

// TestCommitsWritesEveryCase: with Options.Commits every case is written
// (its command, JSON-escaped as in the file), under both shell tools'
// spellings, and Changes knows commits, pull requests and pushes of both
// outcomes in more than one repository.
func TestCommitsWritesEveryCase(t *testing.T) {
	g := commitsCorpus(true)
	seen := make([]bool, len(vcsCases))
	spellings := map[string]bool{}
	for i := range g.Len() {
		_, data := g.Thread(i)
		for k, vc := range vcsCases {
			var buf bytes.Buffer
			enc := json.NewEncoder(&buf)
			enc.SetEscapeHTML(false) // as JSON.stringify writes it
			_ = enc.Encode(vc.command)
			cmd := bytes.TrimSpace(buf.Bytes())
			for _, key := range []string{"cmd", "command"} {
				if bytes.Contains(data, []byte(`"`+key+`": `+string(cmd))) {
					seen[k], spellings[key] = true, true
				}
			}
		}
	}
	for k, ok := range seen {
		if !ok {
			t.Errorf("case %q never written", vcsCases[k].name)
		}
	}
	if !spellings["cmd"] || !spellings["command"] {
		t.Errorf("spellings written %v, want Bash's cmd and shell_command's command", spellings)
	}
	repos := 0
	var total VCS
	for _, c := range g.Changes() {
		if c.VCS.Commits > 0 {
			repos++
		}
		total.Commits += c.VCS.Commits
		total.PullRequests += c.VCS.PullRequests
	}
	if repos < 2 || total.PullRequests == 0 {
		t.Errorf("commits in %d repositories, %d pull requests: want commits in several and some requests", repos, total.PullRequests)
	}
}

// TestCommitsOffIsTheSameCorpus: without Options.Commits the corpus is the
// bytes it was before the option existed, and knows no commits.
func TestCommitsOffIsTheSameCorpus(t *testing.T) {
	off, on := commitsCorpus(false), commitsCorpus(true)
	differ := 0
	for i := range off.Len() {
		_, a := off.Thread(i)
		_, b := on.Thread(i)
		if !bytes.Equal(a, b) {
			differ++
		}
		if bytes.Contains(a, []byte("git commit")) || bytes.Contains(a, []byte("pr create")) {
			t.Fatalf("thread %d commits without the option", i)
		}
	}
	if differ == 0 {
		t.Error("the option changes no thread")
	}
	for repo, c := range off.Changes() {
		if c.VCS.Commits != 0 || c.VCS.PullRequests != 0 || len(c.VCS.Pushes) != 0 {
			t.Errorf("%q: %+v without the option", repo, c.VCS)
		}
	}
}
