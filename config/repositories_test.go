package config

import (
	"strings"
	"testing"
)

func TestRepositoriesSection(t *testing.T) {
	cfg, err := Load(writeConfig(t, `
labels:
  repository: false
repositories:
  - match: 'github\.com/acme-forks/(.+)'
    name: 'github.com/acme/$1'
  - match: 'gitlab\.example\.com/mirrors/.*'
    name: mirrors
`), testEnv(nil))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Labels.Repository {
		t.Error("labels.repository: false read as true")
	}
	m, err := cfg.RepositoryMapper()
	if err != nil {
		t.Fatal(err)
	}
	for in, want := range map[string]string{
		"github.com/acme-forks/web":        "github.com/acme/web",
		"gitlab.example.com/mirrors/a/b/c": "mirrors",
		"github.com/acme/web":              "github.com/acme/web",
	} {
		if got := m.Map(in); got != want {
			t.Errorf("Map(%q) = %q, want %q", in, got, want)
		}
	}
	if out := cfg.String(); !strings.Contains(out, `github\.com/acme-forks/(.+)`) || !strings.Contains(out, "repository: false") {
		t.Errorf("the configuration shown lacks the rules:\n%s", out)
	}

	def, err := Load("", testEnv(nil))
	if err != nil {
		t.Fatal(err)
	}
	if !def.Labels.Repository || len(def.Repositories) != 0 {
		t.Errorf("defaults: labels %+v, repositories %+v", def.Labels, def.Repositories)
	}
}

// A bad rule is reported with the line and the key it is on, every one of
// them at once.
func TestRepositoriesErrorsNameLineAndKey(t *testing.T) {
	_, err := Load(writeConfig(t, `labels:
  repository: true
repositories:
  - match: 'github\.com/acme/.*'
    name: acme
  - match: 'github\.com/(acme'
    name: acme
  - match: 'gitlab\.example\.com/(.*)'
    name: '$2'
  - name: nameless
`), testEnv(nil))
	if err == nil {
		t.Fatal("bad rules accepted")
	}
	for _, want := range []string{
		"line 6: repositories[1].match: error parsing regexp: missing closing ): `github\\.com/(acme`",
		`line 9: repositories[2].name: "$2": $2 names no group of match`,
		"line 10: repositories[3].match: required",
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
	if strings.Contains(err.Error(), "repositories[0]") {
		t.Errorf("a good rule reported: %v", err)
	}
	for content, wants := range map[string][]string{
		"repositories:\n  - regex: x\n    name: y\n": {"line 2", `unknown key "regex" in a repositories entry`},
		"labels:\n  repo: true\n":                    {"line 2", `unknown key "repo" in labels`},
		"labels:\n  repository: sometimes\n":         {"line 2", "labels.repository"},
		"repositories:\n  match: x\n":                {"line 2", "repositories"},
	} {
		_, err := Load(writeConfig(t, content), testEnv(nil))
		for _, want := range wants {
			if err == nil || !strings.Contains(err.Error(), want) {
				t.Errorf("%q: error %v, want it to mention %q", content, err, want)
			}
		}
	}
}
