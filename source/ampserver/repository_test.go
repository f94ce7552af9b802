package ampserver

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/amp-exporter/amp-exporter/parser/gitremote"
)

// A listing's summaries carry env: the repository is read from it as from
// the thread's document, and the URL as written, token included, is not
// kept.
func TestSummaryRepository(t *testing.T) {
	page := `{"threads":[
	  {"id":"T-1","v":3,"env":{"initial":{"trees":[{"uri":"file:///home/alice/web","repository":{"type":"git","url":"https://x-access-token:ghs_Zk4Lq@GitHub.com/acme/web.git?token=Pq7Vw","ref":"refs/heads/main"}}],"hostname":"alice-laptop"}}},
	  {"id":"T-2","v":1},
	  {"id":"T-3","v":1,"env":{"initial":{"trees":[{"repository":{"url":"/home/alice/git/web.git"}}]}}},
	  {"id":"T-4","v":1,"env":"not an object"},
	  {"id":"T-5","v":1,"env":{"initial":{"trees":[{"repository":{"url":"git@github.com:acme/web"}}]}},"summaryStats":{"messageCount":4}}
	]}`
	var out struct {
		Threads []Summary `json:"threads"`
	}
	if err := json.Unmarshal([]byte(page), &out); err != nil {
		t.Fatal(err)
	}
	want := []struct {
		repo   string
		reason gitremote.Reason
	}{
		{"github.com/acme/web", ""},
		{"", ""},
		{"", gitremote.ReasonLocal},
		{"", ""},
		{"github.com/acme/web", ""},
	}
	if len(out.Threads) != len(want) {
		t.Fatalf("%d summaries", len(out.Threads))
	}
	for i, w := range want {
		s := out.Threads[i]
		if s.Repository != w.repo || s.RepositoryReason != w.reason {
			t.Errorf("%s: repository %q (%q), want %q (%q)", s.ID, s.Repository, s.RepositoryReason, w.repo, w.reason)
		}
	}
	if out.Threads[4].MessageCount != 4 {
		t.Errorf("message count %d, want 4", out.Threads[4].MessageCount)
	}
	kept := fmt.Sprintf("%+v", out.Threads)
	for _, secret := range []string{"x-access-token", "ghs_Zk4Lq", "Pq7Vw", "alice"} {
		if strings.Contains(kept, secret) {
			t.Errorf("a summary keeps %q", secret)
		}
	}
}
