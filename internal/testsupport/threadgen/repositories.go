package threadgen

import (
	"fmt"
	"maps"
	"strings"
)

// RemoteSecret is in every credential the generator writes into a remote
// URL (a token, a password, a query's token): a test that finds it in a
// metric, a log line, a page or the state has found a leak.
const RemoteSecret = "AmpGenS3cr3t"

// repoHosts are the hosts repositories live on; GitLab's paths have
// nested groups.
var repoHosts = []string{"github.com", "gitlab.example.com", "bitbucket.org"}

// remoteForms write one repository's remote in the spellings git accepts
// and workspaces have: scheme or scp-like, user names, tokens in the
// credentials and in the query, ports, a trailing ".git" or "/", a host in
// upper case. Each gives the same normalised value, host/path.
var remoteForms = []func(host, path, token string) string{
	func(h, p, _ string) string { return "https://" + h + "/" + p + ".git" },
	func(h, p, _ string) string { return "git@" + h + ":" + p + ".git" },
	func(h, p, _ string) string { return "ssh://git@" + h + "/" + p },
	func(h, p, tok string) string { return "https://x-access-token:" + tok + "@" + h + "/" + p },
	func(h, p, _ string) string { return "https://" + h + "/" + p + "/" },
	func(h, p, _ string) string { return "https://" + strings.ToUpper(h) + "/" + p },
	func(h, p, _ string) string { return "git+https://ci-bot@" + h + "/" + p },
	func(h, p, _ string) string { return "ssh://git@" + h + ":22/" + p + ".git" },
	func(h, p, tok string) string { return "https://" + h + "/" + p + "?private_token=" + tok },
	func(h, p, tok string) string { return "https://oauth2:" + tok + "@" + h + ":443/" + p + ".git" },
}

// RemoteForms is how many spellings of a remote the generator writes.
var RemoteForms = len(remoteForms)

// remote is the repository of one thread.
type remote struct {
	set  bool   // Options.Repositories > 0: url and repo below, else the default remote
	url  string // as written; "" for a thread without a remote
	repo string // its normalised value, host/path
}

// remote is thread i's repository. With Options.Repositories = n, thread
// i's slot is i mod (n+1): slot n has no remote, slot j < n is repository
// j, written in form (i div (n+1)) mod RemoteForms, so the first
// (n+1) × RemoteForms threads have every repository in every form. It
// draws from a stream of its own: the rest of the thread is the same bytes
// whatever the repositories.
func (g *Generator) remote(i int) remote {
	n := g.repos
	if n <= 0 {
		return remote{}
	}
	slot := i % (n + 1)
	if slot == n {
		return remote{set: true}
	}
	host, path := repoParts(slot)
	token := "ghs_" + RemoteSecret + randAlnum(g.rng(i, 7), 16)
	form := remoteForms[(i/(n+1))%len(remoteForms)]
	return remote{set: true, url: form(host, path, token), repo: host + "/" + path}
}

// repoParts are repository j's host and path: j's host in turn, a project
// name (numbered once the names run out) and an organisation.
func repoParts(j int) (host, path string) {
	host = repoHosts[j%len(repoHosts)]
	k := j / len(repoHosts)
	name := projectNames[k%len(projectNames)]
	if k >= len(projectNames) {
		name = fmt.Sprintf("%s-%d", name, k/len(projectNames))
	}
	org := orgNames[j%len(orgNames)]
	if host == "gitlab.example.com" {
		return host, "platform/" + org + "/" + name
	}
	return host, org + "/" + name
}

// writeRepository writes the first tree's repository: the project's
// GitHub remote by default; with Options.Repositories, the thread's
// remote in its form, or nothing for a thread without one.
func (t *threadBuilder) writeRepository(w *jsonWriter) {
	p := t.proj
	url := "https://github.com/" + p.org + "/" + p.name
	if t.remote.set {
		if t.remote.url == "" {
			return
		}
		url = t.remote.url
	}
	w.keyObject("repository")
	w.keyString("type", "git")
	w.keyString("url", url)
	w.keyString("ref", "refs/heads/"+p.branch)
	w.keyString("sha", p.sha)
	w.endObj()
}

// Tokens are token counts by type.
type Tokens struct {
	Input, Output, CacheRead, CacheCreation int64
}

// RepositorySpend is what the threads of one repository spent.
type RepositorySpend struct {
	Threads int
	// Tokens by model, as the threads bill them (docs/counting.md): a
	// thread with a usage ledger its events' input and output (title
	// generation included) and the cache tokens of the messages they
	// bill; a thread without one its assistant messages' usage, whatever
	// their state. A sub-agent's inferences, which Amp writes inside a
	// tool result, are not the thread's messages and are not in it.
	Tokens map[string]Tokens
}

// Repository is thread i's repository as host/path ("" for a thread
// without a remote), known from how the remote was written, not read
// back from it.
func (g *Generator) Repository(i int) string {
	if g.repos <= 0 {
		p := newThread(g, i, int(g.TargetSize(i)), nil).proj
		return "github.com/" + p.org + "/" + p.name
	}
	return g.remote(i).repo
}

// Spend is what the corpus spent, by repository (host/path; "" for the
// threads without a remote). It generates every thread once.
func (g *Generator) Spend() map[string]*RepositorySpend {
	out := map[string]*RepositorySpend{}
	for i := range g.n {
		t := g.generate(i)
		repo := "github.com/" + t.proj.org + "/" + t.proj.name
		if t.remote.set {
			repo = t.remote.repo
		}
		rs := out[repo]
		if rs == nil {
			rs = &RepositorySpend{Tokens: map[string]Tokens{}}
			out[repo] = rs
		}
		rs.Threads++
		for model, tok := range t.spentTokens() {
			s := rs.Tokens[model]
			s.Input += tok.Input
			s.Output += tok.Output
			s.CacheRead += tok.CacheRead
			s.CacheCreation += tok.CacheCreation
			rs.Tokens[model] = s
		}
	}
	return out
}

// generate generates thread i's body, for what it spent.
func (g *Generator) generate(i int) *threadBuilder {
	target := int(g.TargetSize(i))
	t := newThread(g, i, target, make([]byte, reserve, target+target/16+reserve+64<<10))
	t.body()
	return t
}

// tally records an assistant message's usage as spent: all of it in a
// thread without a ledger, only its cache tokens in one with a ledger
// (whose events bill input and output: spentTokens).
func (t *threadBuilder) tally(u usage) {
	if t.nested {
		return
	}
	if t.spent == nil {
		t.spent = map[string]Tokens{}
	}
	s := t.spent[u.model]
	item := Tokens{CacheRead: u.cacheRead, CacheCreation: u.cacheCreate}
	if !t.ledger {
		item.Input, item.Output = u.in, u.out
	}
	s.CacheRead += item.CacheRead
	s.CacheCreation += item.CacheCreation
	s.Input += item.Input
	s.Output += item.Output
	t.spent[u.model] = s
	at := u.ms
	if t.ledger {
		// The ledger event that bills the message carries its cache
		// tokens: they count at the event's time, to the second.
		at -= t.serverBehind
		at -= at % 1000
	}
	t.spentAt = append(t.spentAt, spentItem{ms: at, model: u.model, tokens: item})
	t.tallySpeed(u.model, u.speed, item)
}

// spentTokens is what the thread spent, by model.
func (t *threadBuilder) spentTokens() map[string]Tokens {
	out := maps.Clone(t.spent)
	if out == nil {
		out = map[string]Tokens{}
	}
	for _, e := range t.events {
		s := out[e.model]
		s.Input += e.in
		s.Output += e.out
		out[e.model] = s
	}
	return out
}
