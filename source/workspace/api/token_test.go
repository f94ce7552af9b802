package api

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	ws "github.com/amp-exporter/amp-exporter/internal/testsupport/workspacetest"
)

func TestRenewAfter(t *testing.T) {
	for _, tc := range []struct{ life, want time.Duration }{
		{time.Hour, 59 * time.Minute},
		{10 * time.Minute, 9 * time.Minute},
		{2 * time.Minute, time.Minute},
		{time.Minute, 30 * time.Second}, // the margin would leave nothing: half
		{10 * time.Second, 5 * time.Second},
		{0, 15 * time.Minute}, // no expires_in
	} {
		if got := renewAfter(tc.life); got != tc.want {
			t.Errorf("renewAfter(%s) = %s, want %s", tc.life, got, tc.want)
		}
	}
}

// TestTokenRequest: the client authenticates the way client_auth says and
// never both ways; resource is sent only when set.
func TestTokenRequest(t *testing.T) {
	for _, tc := range []struct {
		name     string
		shape    ws.Options
		auth     string
		resource string
		wantErr  string // "" for a token
	}{
		{name: "basic to basic", shape: ws.Options{ClientAuth: ws.AuthBasic}, auth: AuthBasic},
		{name: "post to post", shape: ws.Options{ClientAuth: ws.AuthPost}, auth: AuthPost},
		{name: "basic to post only", shape: ws.Options{ClientAuth: ws.AuthPost}, auth: AuthBasic,
			wantErr: "token: HTTP 401: invalid_client: client authentication method not allowed"},
		{name: "post to basic only", shape: ws.Options{ClientAuth: ws.AuthBasic}, auth: AuthPost,
			wantErr: "token: HTTP 401: invalid_client: client authentication method not allowed"},
		{name: "post to basic only, plain error body", shape: ws.Options{ClientAuth: ws.AuthBasic, TokenErrorPlain: true}, auth: AuthPost,
			wantErr: "token: HTTP 401: client authentication method not allowed"},
		{name: "resource required, not sent", shape: ws.Options{Resource: ws.ResourceRequired}, auth: AuthBasic,
			wantErr: "token: HTTP 400: invalid_target: resource required"},
		{name: "resource required, sent", shape: ws.Options{Resource: ws.ResourceRequired}, auth: AuthBasic, resource: ws.ResourceURL},
		{name: "resource rejected, sent", shape: ws.Options{Resource: ws.ResourceRejected}, auth: AuthBasic, resource: ws.ResourceURL,
			wantErr: "token: HTTP 400: invalid_target: resource not allowed"},
		{name: "resource rejected, not sent", shape: ws.Options{Resource: ws.ResourceRejected}, auth: AuthPost},
		{name: "scope not granted refused", shape: ws.Options{UngrantedScopeRefused: true}, auth: AuthBasic,
			wantErr: "token: HTTP 400: invalid_scope: scope not granted"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, ws.Config{Users: 2, Threads: 10}, tc.shape, func(o *Options) { o.ClientAuth, o.Resource = tc.auth, tc.resource })
			if strings.Contains(tc.name, "not granted") {
				f.s.Grant(ws.ScopeThreadsMeta)
			}
			err := f.c.Token(context.Background())
			if tc.wantErr == "" {
				if err != nil {
					t.Fatal(err)
				}
				if f.s.TokenRequests() != 1 {
					t.Fatalf("%d tokens", f.s.TokenRequests())
				}
				return
			}
			var te *TokenError
			if !errors.As(err, &te) || err.Error() != tc.wantErr {
				t.Fatalf("err %v, want %q", err, tc.wantErr)
			}
		})
	}
}

// TestTokenForm reads what the client sends: grant_type, the scopes
// space-separated, the credentials in one place only.
func TestTokenForm(t *testing.T) {
	for _, auth := range []string{AuthBasic, AuthPost} {
		t.Run(auth, func(t *testing.T) {
			var mu sync.Mutex
			var form url.Values
			var basic bool
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				b, _ := io.ReadAll(r.Body)
				mu.Lock()
				form, _ = url.ParseQuery(string(b))
				_, _, basic = r.BasicAuth()
				mu.Unlock()
				w.Header().Set("Content-Type", "application/json")
				_, _ = io.WriteString(w, `{"access_token":"tok-1","token_type":"bearer","expires_in":3600,"scope":"a:view b:view"}`)
			}))
			defer srv.Close()
			c, err := New(Options{APIURL: srv.URL, TokenURL: srv.URL + "/oauth2/token", ClientID: "id-1", ClientSecret: "sec-1",
				ClientAuth: auth, Scopes: []string{"a:view", "b:view"}})
			if err != nil {
				t.Fatal(err)
			}
			if err := c.Token(context.Background()); err != nil {
				t.Fatal(err)
			}
			mu.Lock()
			defer mu.Unlock()
			if form.Get("grant_type") != "client_credentials" || form.Get("scope") != "a:view b:view" || form.Has("resource") {
				t.Errorf("form %v", form)
			}
			inForm := form.Has("client_secret") || form.Has("client_id")
			if basic == inForm || basic != (auth == AuthBasic) {
				t.Errorf("basic %v, in the form %v", basic, inForm)
			}
			if g := c.GrantedScopes(); len(g) != 2 || g[1] != "b:view" {
				t.Errorf("granted %q", g)
			}
		})
	}
}

// TestTokenCachedUntilShortlyBeforeExpiry: a token of an hour is used for
// 59 minutes, then replaced.
func TestTokenCachedUntilShortlyBeforeExpiry(t *testing.T) {
	f := newFixture(t, ws.Config{Users: 2, Threads: 10}, ws.Options{TokenLifetime: time.Hour}, nil)
	list := func() {
		t.Helper()
		f.run(t, func() {
			if _, err := f.c.ListThreads(context.Background(), ListQuery{Limit: 5}); err != nil {
				t.Error(err)
			}
		})
	}
	list()
	f.clk.Advance(59*time.Minute - time.Second)
	list()
	if n := f.s.TokenRequests(); n != 1 {
		t.Fatalf("%d tokens before 59 minutes, want 1", n)
	}
	f.clk.Advance(time.Second)
	list()
	if n := f.s.TokenRequests(); n != 2 {
		t.Fatalf("%d tokens at 59 minutes, want 2", n)
	}
}

// TestTokenRefetchedOnceOn401: a token the API refuses is replaced once
// and the request made again; a second refusal is an error, not a loop.
func TestTokenRefetchedOnceOn401(t *testing.T) {
	f := newFixture(t, ws.Config{Users: 2, Threads: 10}, ws.Options{}, nil)
	ctx := context.Background()
	f.run(t, func() {
		if _, err := f.c.ListThreads(ctx, ListQuery{Limit: 5}); err != nil {
			t.Error(err)
		}
	})
	f.s.ExpireTokens() // revoked before expires_in said
	f.run(t, func() {
		if _, err := f.c.ListThreads(ctx, ListQuery{Limit: 5}); err != nil {
			t.Error(err)
		}
	})
	if n := f.s.TokenRequests(); n != 2 {
		t.Fatalf("%d tokens, want 2", n)
	}
	if n := f.rec.request(EndpointThreads, "401"); n != 1 {
		t.Fatalf("%d answers 401, want 1", n)
	}
	// Refused twice: one more token, then an error.
	f.s.Fail(ws.RouteThreads, ws.Fault{Status: 401}, ws.Fault{Status: 401}, ws.Fault{Status: 401})
	var err error
	f.run(t, func() { _, err = f.c.ListThreads(ctx, ListQuery{Limit: 5}) })
	var se *StatusError
	if !errors.As(err, &se) || se.Status != 401 {
		t.Fatalf("err %v, want a 401 StatusError", err)
	}
	if n := f.s.TokenRequests(); n != 3 {
		t.Fatalf("%d tokens, want 3", n)
	}
}

// TestTokenEndpointTransientFailures: a 5xx or 429 from the token
// endpoint is retried like the API's (within the request's attempts); a
// refusal (4xx) is not.
func TestTokenEndpointTransientFailures(t *testing.T) {
	for _, tc := range []struct {
		name     string
		faults   []ws.Fault
		ok       bool
		requests int // to the token endpoint
	}{
		{"503 then a token", []ws.Fault{{Status: 503}}, true, 2},
		{"429 with Retry-After then a token", []ws.Fault{{Status: 429, RetryAfter: "2"}}, true, 2},
		{"400 not retried", []ws.Fault{{Status: 400}}, false, 1},
		{"5xx until the attempts end", []ws.Fault{{Status: 502}, {Status: 502}, {Status: 502}, {Status: 502}, {Status: 502}}, false, 5},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, ws.Config{Users: 2, Threads: 10}, ws.Options{}, nil)
			f.s.Fail(ws.RouteToken, tc.faults...)
			var err error
			f.run(t, func() { _, err = f.c.ListThreads(context.Background(), ListQuery{Limit: 5}) })
			if (err == nil) != tc.ok {
				t.Fatalf("err %v", err)
			}
			if n := f.s.Count(ws.RouteToken); n != tc.requests {
				t.Fatalf("%d token requests, want %d", n, tc.requests)
			}
		})
	}
}
