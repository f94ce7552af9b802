package amy

import (
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
)

// authLog records the Authorization header of every request a server got.
type authLog struct {
	mu   sync.Mutex
	seen []string // path + " " + Authorization
}

func (a *authLog) add(r *http.Request) {
	a.mu.Lock()
	a.seen = append(a.seen, r.URL.Path+" "+r.Header.Get("Authorization"))
	a.mu.Unlock()
}

func (a *authLog) all() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]string(nil), a.seen...)
}

// TestRedirectsNeverCarryCredentialsElsewhere is issue 19's 302 to another
// port of the same host: Go's default redirect rule kept Authorization (the
// configured key, or the client's token for a turn found through the
// proxy), because the host name matched. Credentials go only to the
// configured scheme, host and port: a redirect elsewhere is refused (the
// follower counts an error and retries the configured URL); one within the
// configured origin is followed with them.
func TestRedirectsNeverCarryCredentialsElsewhere(t *testing.T) {
	var other authLog
	elsewhere := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		other.add(r)
		http.NotFound(w, r)
	}))
	defer elsewhere.Close()
	var home authLog
	configured := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		home.add(r)
		switch {
		case strings.HasPrefix(r.URL.Path, "/moved/"):
			http.NotFound(w, r) // the follower gives the turn up
		case strings.HasSuffix(r.URL.Path, "/turns/same/events"):
			http.Redirect(w, r, "/moved"+r.URL.Path, http.StatusFound)
		default:
			http.Redirect(w, r, elsewhere.URL+r.URL.Path, http.StatusFound)
		}
	}))
	defer configured.Close()
	base, _ := url.Parse(configured.URL)
	if eu, _ := url.Parse(elsewhere.URL); eu.Hostname() != base.Hostname() || eu.Port() == base.Port() {
		t.Fatalf("want the same host on another port: %s and %s", base, eu)
	}

	e := newEnv(t, envOpts{fake: true, auto: true})
	e.up.BaseURL = base
	e.client.Follow(e.ctx, e.up, "turn_key", "")                         // the configured key
	e.client.Follow(e.ctx, e.up, "turn_token", "Bearer client-token-42") // a proxy client's token
	// Refused, the follower retries until turn_timeout gives the turns up
	// (the fake clock runs through the backoff); followed, the 404 does.
	waitStopped(t, e.client)
	if len(home.all()) < 2 {
		t.Fatalf("the configured server saw %d requests", len(home.all()))
	}
	for _, s := range other.all() {
		if strings.Contains(s, " ") && !strings.HasSuffix(s, " ") {
			t.Errorf("another port of the same host received credentials: %q", s)
		}
	}

	if n := len(other.all()); n != 0 {
		t.Errorf("the follower went to another origin %d times", n)
	}
	if n := len(e.logs.Lines("redirected")); n != 2 {
		t.Errorf("%d warnings for the refused redirects, want one per turn:\n%s", n, e.logs)
	}
	if m := metrics(t, e.reg); m[`amy_stream_reconnects_total{reason="error"}`] < 2 {
		t.Errorf("refused redirects not counted as reconnect errors: %v", m)
	}

	// Within the configured origin the redirect is followed, with them.
	e2 := newEnv(t, envOpts{fake: true, auto: true})
	e2.up.BaseURL = base
	e2.follow("same")
	waitStopped(t, e2.client)
	moved := 0
	for _, s := range home.all() {
		if strings.HasPrefix(s, "/moved/") {
			moved++
			if !strings.HasSuffix(s, " Bearer "+goodKey) {
				t.Errorf("a redirect within the configured origin lost the key: %q", s)
			}
		}
	}
	if moved == 0 {
		t.Error("a redirect within the configured origin was not followed")
	}
}
