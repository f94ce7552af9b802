package workspacetest

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"
)

// token is an access token issued: its scopes and when it stops working.
type token struct {
	scopes  map[string]bool
	expires time.Time
}

// TokenRequests is how many token requests were answered 200.
func (s *Server) TokenRequests() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.seq
}

// ExpireTokens makes every token issued so far stop working.
func (s *Server) ExpireTokens() {
	s.mu.Lock()
	defer s.mu.Unlock()
	clear(s.tokens)
}

// token serves POST /oauth2/token: the client-credentials grant, the
// client authenticated by HTTP Basic or in the form as ClientAuth allows.
func (s *Server) token(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	o := s.opts
	s.mu.Unlock()
	fail := func(status int, code, desc string) {
		if o.TokenErrorPlain {
			writeError(w, status, desc)
			return
		}
		writeJSON(w, status, map[string]any{"error": code, "error_description": desc})
	}
	if mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type")); mt != "application/x-www-form-urlencoded" {
		fail(http.StatusBadRequest, "invalid_request", "the body must be application/x-www-form-urlencoded")
		return
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, 64<<10))
	form, err2 := url.ParseQuery(string(body))
	if err != nil || err2 != nil {
		fail(http.StatusBadRequest, "invalid_request", "unreadable form")
		return
	}
	basicID, basicSecret, basic := r.BasicAuth()
	_, formHas := form["client_secret"]
	switch {
	case basic && formHas:
		fail(http.StatusBadRequest, "invalid_request", "more than one client authentication")
		return
	case basic && o.ClientAuth == AuthPost, formHas && o.ClientAuth == AuthBasic:
		fail(http.StatusUnauthorized, "invalid_client", "client authentication method not allowed")
		return
	case basic:
		if basicID != ClientID || basicSecret != ClientSecret {
			fail(http.StatusUnauthorized, "invalid_client", "client authentication failed")
			return
		}
	case formHas:
		if form.Get("client_id") != ClientID || form.Get("client_secret") != ClientSecret {
			fail(http.StatusUnauthorized, "invalid_client", "client authentication failed")
			return
		}
	default:
		fail(http.StatusUnauthorized, "invalid_client", "no client authentication")
		return
	}
	if form.Get("grant_type") != "client_credentials" {
		fail(http.StatusBadRequest, "unsupported_grant_type", "only client_credentials")
		return
	}
	_, hasResource := form["resource"]
	switch {
	case o.Resource == ResourceRequired && form.Get("resource") != ResourceURL:
		fail(http.StatusBadRequest, "invalid_target", "resource required")
		return
	case o.Resource == ResourceRejected && hasResource:
		fail(http.StatusBadRequest, "invalid_target", "resource not allowed")
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	scopes := map[string]bool{}
	asked := strings.Fields(form.Get("scope"))
	if len(asked) == 0 {
		if o.ScopeRequired {
			fail(http.StatusBadRequest, "invalid_scope", "scope required")
			return
		}
		asked = s.granted
	}
	for _, sc := range asked {
		switch {
		case slices.Contains(s.granted, sc):
			scopes[sc] = true
		case o.UngrantedScopeRefused:
			fail(http.StatusBadRequest, "invalid_scope", "scope not granted")
			return
		}
	}
	s.seq++
	sum := sha256.Sum256(fmt.Appendf(nil, "%d/%d", s.ws.cfg.Seed, s.seq))
	tok := fmt.Sprintf("wsat_%d_%s", s.seq, hex.EncodeToString(sum[:12]))
	life := o.TokenLifetime
	if o.ExpireEarly > 0 {
		life = o.ExpireEarly
	}
	s.tokens[tok] = token{scopes: scopes, expires: s.clock().Add(life)}
	granted := make([]string, 0, len(scopes))
	for sc := range scopes {
		granted = append(granted, sc)
	}
	slices.Sort(granted)
	writeJSON(w, http.StatusOK, map[string]any{
		"access_token": tok, "token_type": o.TokenType,
		"expires_in": int64(o.TokenLifetime / time.Second), "scope": strings.Join(granted, " "),
	})
}

// bearer checks the request's bearer token and returns its scopes.
func (s *Server) bearer(r *http.Request) (map[string]bool, bool) {
	h := r.Header.Get("Authorization")
	if len(h) < 7 || !strings.EqualFold(h[:7], "Bearer ") {
		return nil, false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	t, ok := s.tokens[h[7:]]
	if !ok || !s.clock().Before(t.expires) {
		return nil, false
	}
	return t.scopes, true
}
