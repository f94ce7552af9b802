package thread

import (
	"github.com/amp-exporter/amp-exporter/internal/jsonscan"
	"github.com/amp-exporter/amp-exporter/parser/gitremote"
)

// env reads the thread's repository from env.initial.trees[0].repository.url
// (docs/repositories.md): the first tree is the thread's repository. Only
// the normalised value and the reason it has none are kept; the URL as
// written, which may carry credentials, is dropped here. Everything else in
// env (paths, host and user names, a directory listing) is skipped unread.
//
// A key given twice takes its last value, as JSON.parse does: each key on
// the way to the URL forgets what an earlier one of the same name gave.
func (p *Parser) env(t *Thread) {
	sc := p.sc
	t.Repository, t.RepositoryReason = "", gitremote.ReasonNone
	if sc.Peek() != jsonscan.Object {
		sc.Skip()
		return
	}
	obj := sc.Object()
	for key, ok := obj.Next(); ok; key, ok = obj.Next() {
		if string(key) != "initial" {
			sc.Skip()
			continue
		}
		t.Repository, t.RepositoryReason = "", gitremote.ReasonNone
		p.member(t, "trees", p.firstTree)
	}
}

// member reads the object at the scanner, handing the value of its member
// named key to read (after forgetting the repository found so far) and
// skipping every other member.
func (p *Parser) member(t *Thread, key string, read func(*Thread)) {
	sc := p.sc
	if sc.Peek() != jsonscan.Object {
		sc.Skip()
		return
	}
	obj := sc.Object()
	for k, ok := obj.Next(); ok; k, ok = obj.Next() {
		if string(k) != key {
			sc.Skip()
			continue
		}
		t.Repository, t.RepositoryReason = "", gitremote.ReasonNone
		read(t)
	}
}

// firstTree reads the repository of the first entry of trees[].
func (p *Parser) firstTree(t *Thread) {
	sc := p.sc
	if sc.Peek() != jsonscan.Array {
		sc.Skip()
		return
	}
	arr := sc.Array()
	for i := 0; arr.Next(); i++ {
		if i > 0 {
			sc.Skip()
			continue
		}
		p.member(t, "repository", p.repository)
	}
}

// repository reads a tree's repository object.
func (p *Parser) repository(t *Thread) { p.member(t, "url", p.remoteURL) }

// remoteURL reads repository.url: a string is normalised (an empty one is
// no remote), null is no remote, any other value is a remote that cannot
// be read. At most gitremote.MaxInputBytes+1 bytes are decoded, enough to
// tell a remote that is too long.
func (p *Parser) remoteURL(t *Thread) {
	sc := p.sc
	switch sc.Peek() {
	case jsonscan.String:
		if v, ok := sc.StringPrefix(gitremote.MaxInputBytes + 1); ok {
			t.Repository, t.RepositoryReason = gitremote.Normalize(string(v))
		}
	case jsonscan.Null:
		sc.Skip()
	default:
		sc.Skip()
		t.RepositoryReason = gitremote.ReasonInvalid
	}
}

// RepositoryOf reads the repository from a thread's env value alone, by
// the rules Parse reads it with: for a server listing, whose summaries
// carry env. A value that is not JSON gives no repository.
func RepositoryOf(env []byte) (string, gitremote.Reason) {
	p := Parser{sc: jsonscan.NewBytes(env)}
	var t Thread
	p.env(&t)
	if p.sc.Err() != nil {
		return "", gitremote.ReasonNone
	}
	return t.Repository, t.RepositoryReason
}
