package workspacetest

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// TestClientAuthentication: each mode accepts its way of sending the
// client's credentials, refuses the other, and every mode refuses both at
// once, none, and a wrong secret.
func TestClientAuthentication(t *testing.T) {
	s := New(Config{Seed: 1, Users: 2, Threads: 10, Days: 5}, Options{})
	defer s.Close()
	grant := func() url.Values { return url.Values{"grant_type": {"client_credentials"}} }
	for _, tc := range []struct {
		mode        ClientAuth
		basic, post bool
		want        int
	}{
		{AuthEither, true, false, 200},
		{AuthEither, false, true, 200},
		{AuthEither, true, true, 400},
		{AuthEither, false, false, 401},
		{AuthBasic, true, false, 200},
		{AuthBasic, false, true, 401},
		{AuthBasic, true, true, 400},
		{AuthPost, false, true, 200},
		{AuthPost, true, false, 401},
		{AuthPost, true, true, 400},
	} {
		s.SetOptions(Options{ClientAuth: tc.mode})
		if got, body := tokenRequest(t, s, tc.basic, tc.post, grant()); got != tc.want {
			t.Errorf("mode %d, basic %t, form %t: %d %s, want %d", tc.mode, tc.basic, tc.post, got, body, tc.want)
		}
	}
	s.SetOptions(Options{})
	form := grant()
	form.Set("client_id", ClientID)
	form.Set("client_secret", "wrong")
	if got, _ := tokenRequest(t, s, false, false, form); got != http.StatusUnauthorized {
		t.Errorf("a wrong secret: %d", got)
	}
	if got, _ := tokenRequest(t, s, true, false, url.Values{"grant_type": {"password"}}); got != http.StatusBadRequest {
		t.Errorf("another grant: %d", got)
	}
}

func tokenAnswer(t *testing.T, body []byte) (tok, typ, scope string, expiresIn int64) {
	t.Helper()
	var tr struct {
		AccessToken string `json:"access_token"`
		TokenType   string `json:"token_type"`
		ExpiresIn   int64  `json:"expires_in"`
		Scope       string `json:"scope"`
	}
	if err := json.Unmarshal(body, &tr); err != nil {
		t.Fatalf("%s: %v", body, err)
	}
	return tr.AccessToken, tr.TokenType, tr.Scope, tr.ExpiresIn
}

// TestTokenSwitches: resource, scope left out or not granted, lifetime,
// token type and the error body, each as its switch says.
func TestTokenSwitches(t *testing.T) {
	s := New(Config{Seed: 1, Users: 2, Threads: 10, Days: 5}, Options{})
	defer s.Close()
	s.Grant(ScopeThreadsMeta, ScopeAnalytics)
	for _, tc := range []struct {
		name      string
		opts      Options
		form      url.Values
		want      int
		wantScope string
		wantBody  string
	}{
		{"resource ignored", Options{}, url.Values{"resource": {ResourceURL}}, 200, ScopeAnalytics + " " + ScopeThreadsMeta, ""},
		{"resource required, missing", Options{Resource: ResourceRequired}, url.Values{}, 400, "", `"error":"invalid_target"`},
		{"resource required, given", Options{Resource: ResourceRequired}, url.Values{"resource": {ResourceURL}}, 200, ScopeAnalytics + " " + ScopeThreadsMeta, ""},
		{"resource rejected", Options{Resource: ResourceRejected}, url.Values{"resource": {ResourceURL}}, 400, "", "invalid_target"},
		{"scope required", Options{ScopeRequired: true}, url.Values{}, 400, "", "invalid_scope"},
		{"scope asked", Options{ScopeRequired: true}, url.Values{"scope": {ScopeThreadsMeta}}, 200, ScopeThreadsMeta, ""},
		{"ungranted dropped", Options{}, url.Values{"scope": {ScopeThreadsMeta + " " + ScopeMembers}}, 200, ScopeThreadsMeta, ""},
		{"ungranted refused", Options{UngrantedScopeRefused: true}, url.Values{"scope": {ScopeThreadsMeta + " " + ScopeMembers}}, 400, "", "invalid_scope"},
		{"plain error", Options{TokenErrorPlain: true, Resource: ResourceRejected}, url.Values{"resource": {ResourceURL}}, 400, "", `{"error":"resource not allowed"}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s.SetOptions(tc.opts)
			tc.form.Set("grant_type", "client_credentials")
			status, body := tokenRequest(t, s, true, false, tc.form)
			if status != tc.want || !strings.Contains(string(body), tc.wantBody) {
				t.Fatalf("%d %s, want %d with %s", status, body, tc.want, tc.wantBody)
			}
			if status == 200 {
				if _, _, scope, _ := tokenAnswer(t, body); scope != tc.wantScope {
					t.Errorf("scope %q, want %q", scope, tc.wantScope)
				}
			}
		})
	}
}

// TestTokenExpiry: a token works until expires_in by the stand-in's
// clock, or only until ExpireEarly while expires_in still promises more;
// ExpireTokens ends every token at once.
func TestTokenExpiry(t *testing.T) {
	s := New(Config{Seed: 1, Users: 2, Threads: 10, Days: 5}, Options{TokenLifetime: 10 * time.Minute, TokenType: "bearer"})
	defer s.Close()
	var now atomic.Int64
	now.Store(time.Date(2026, 8, 12, 0, 0, 0, 0, time.UTC).Unix())
	s.SetClock(func() time.Time { return time.Unix(now.Load(), 0) })
	for _, tc := range []struct {
		early       time.Duration
		after       time.Duration
		wantWorking bool
	}{
		{0, 9 * time.Minute, true},
		{0, 10 * time.Minute, false},
		{time.Minute, 59 * time.Second, true},
		{time.Minute, 61 * time.Second, false},
	} {
		s.Update(func(o *Options) { o.ExpireEarly = tc.early })
		_, body := tokenRequest(t, s, true, false, url.Values{"grant_type": {"client_credentials"}})
		tok, typ, _, exp := tokenAnswer(t, body)
		if exp != 600 || typ != "bearer" {
			t.Errorf("expires_in %d, token_type %q", exp, typ)
		}
		c := &client{t: t, s: s, tok: tok}
		now.Add(int64(tc.after / time.Second))
		status, _, _ := c.get("/api/v2/threads", nil)
		if (status == http.StatusOK) != tc.wantWorking {
			t.Errorf("early %v, %v later: %d", tc.early, tc.after, status)
		}
	}
	c := newClient(t, s)
	s.ExpireTokens()
	if status, _, b := c.get("/api/v2/threads", nil); status != http.StatusUnauthorized || string(b) != `{"error":"invalid or expired token"}` {
		t.Errorf("after ExpireTokens: %d %s", status, b)
	}
	if status, _, _ := (&client{t: t, s: s, tok: "made-up"}).get("/api/v2/threads", nil); status != http.StatusUnauthorized {
		t.Errorf("a made-up token: %d", status)
	}
	if s.TokenRequests() != 5 {
		t.Errorf("%d tokens issued, want 5", s.TokenRequests())
	}
}

// TestScopesPerEndpoint: each endpoint answers 403 without its scope, and
// fields that need another scope are left out, not refused.
func TestScopesPerEndpoint(t *testing.T) {
	s := New(Config{Seed: 1, Users: 3, Threads: 40, Days: 5}, Options{Members: true})
	defer s.Close()
	id := s.ThreadID(39, 0)
	endpoints := map[string]string{
		"/api/v2/threads":                         ScopeThreadsMeta,
		"/api/v2/threads/" + id + "/usage":        ScopeThreadsMeta,
		"/api/v2/workspace/analytics/daily-usage": ScopeAnalytics,
		"/api/v2/workspace/members":               ScopeMembers,
	}
	for path, need := range endpoints {
		var others []string
		for _, sc := range ViewScopes {
			if sc != need {
				others = append(others, sc)
			}
		}
		c := newClient(t, s, others...)
		status, _, b := c.get(path, nil)
		if status != http.StatusForbidden || !strings.Contains(string(b), need) {
			t.Errorf("%s without %s: %d %s", path, need, status, b)
		}
		if status, _, b := newClient(t, s, need).get(path, nil); status != http.StatusOK {
			t.Errorf("%s with %s alone: %d %s", path, need, status, b)
		}
	}
	meta := newClient(t, s, ScopeThreadsMeta, ScopeAnalytics)
	full := newClient(t, s)
	for _, tc := range []struct {
		c    *client
		want bool
	}{{meta, false}, {full, true}} {
		rows, _ := tc.c.listAll(nil)
		for _, row := range rows {
			_, title := row["title"]
			_, repos := row["repositories"]
			if title != tc.want || repos != tc.want {
				t.Fatalf("contents scope %t: a row %v", tc.want, row)
			}
		}
		m := tc.c.object("/api/v2/workspace/analytics/daily-usage", nil)
		for _, d := range m["data"].([]any) {
			for _, u := range d.(map[string]any)["users"].([]any) {
				if _, ok := u.(map[string]any)["user"].(map[string]any)["email"]; ok != tc.want {
					t.Fatalf("members scope %t: %v", tc.want, u)
				}
			}
		}
	}
}

// TestOnlyGETUnderAPI: any other method under /api/v2/ is refused and
// counted, whether or not the path exists; the token endpoint is not
// under it.
func TestOnlyGETUnderAPI(t *testing.T) {
	s := New(Config{Seed: 1, Users: 2, Threads: 10, Days: 5}, Options{})
	defer s.Close()
	c := newClient(t, s)
	for _, m := range []string{http.MethodDelete, http.MethodPost, http.MethodPut, http.MethodPatch} {
		for _, p := range []string{"/api/v2/threads/" + s.ThreadID(1, 0), "/api/v2/threads", "/api/v2/nowhere"} {
			req, _ := http.NewRequest(m, s.URL+p, nil)
			req.Header.Set("Authorization", "Bearer "+c.tok)
			if status, _ := do(t, req); status != http.StatusMethodNotAllowed {
				t.Errorf("%s %s: %d", m, p, status)
			}
		}
	}
	if s.NonGET() != 12 {
		t.Errorf("NonGET %d, want 12", s.NonGET())
	}
	if status, _, _ := c.get("/oauth2/token", nil); status != http.StatusMethodNotAllowed {
		t.Errorf("GET of the token endpoint: %d", status)
	}
	if s.NonGET() != 12 {
		t.Errorf("the token endpoint counted as the API")
	}
}
