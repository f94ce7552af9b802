package api

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/amp-exporter/amp-exporter/internal/clock"
)

// Client authentication at the token endpoint.
const (
	AuthBasic = "basic"
	AuthPost  = "post"
)

const (
	// tokenMargin is how long before its expiry a token is replaced.
	tokenMargin = time.Minute
	// unknownLifetime is how long a token without expires_in is used.
	unknownLifetime = 15 * time.Minute
	// maxTokenBytes bounds the token endpoint's answer.
	maxTokenBytes = 64 << 10
)

// tokens fetches and caches the client-credentials token.
type tokens struct {
	hc                              *http.Client
	clk                             clock.Clock
	url, id, secret, auth, resource string
	scopes                          []string
	userAgent                       string
	onRequest                       func(endpoint, code string)
	maxRetryAfter                   time.Duration

	mu      sync.Mutex
	tok     string
	renew   time.Time
	granted []string
}

// get returns a valid token, fetching one when none is cached or the
// cached one is due for renewal.
func (t *tokens) get(ctx context.Context) (string, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.tok != "" && t.clk.Now().Before(t.renew) {
		return t.tok, nil
	}
	return t.fetchLocked(ctx)
}

// refused drops tok after the API refused it (401), so the next get
// fetches a new one; a token already replaced is left alone.
func (t *tokens) refused(tok string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.tok == tok {
		t.tok = ""
	}
}

// Granted returns the scopes the last token answer named.
func (t *tokens) grantedScopes() []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return append([]string(nil), t.granted...)
}

// renewAfter is how long a token of lifetime life is used: until a
// fixed margin before it expires, and at least half its life when that is
// short.
func renewAfter(life time.Duration) time.Duration {
	if life <= 0 {
		return unknownLifetime
	}
	return max(life-tokenMargin, life/2)
}

func (t *tokens) fetchLocked(ctx context.Context) (string, error) {
	form := url.Values{"grant_type": {"client_credentials"}}
	if len(t.scopes) > 0 {
		form.Set("scope", strings.Join(t.scopes, " "))
	}
	if t.resource != "" {
		form.Set("resource", t.resource)
	}
	if t.auth == AuthPost {
		form.Set("client_id", t.id)
		form.Set("client_secret", t.secret)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, t.url, strings.NewReader(form.Encode()))
	if err != nil {
		return "", &TokenError{Err: errors.New("bad token_url")}
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Accept", "application/json")
	req.Header.Set("User-Agent", t.userAgent)
	if t.auth != AuthPost {
		// As is, as the one client known to use Amp's endpoint sends them
		// (RFC 6749 would form-encode them first; ids and secrets of
		// letters, digits, '_' and '-' are the same either way).
		req.SetBasicAuth(t.id, t.secret)
	}
	sent := t.clk.Now()
	resp, err := t.hc.Do(req)
	if err != nil {
		t.onRequest(EndpointToken, "error")
		return "", &TokenError{Err: t.scrubErr(err), transient: ctx.Err() == nil}
	}
	defer resp.Body.Close()
	t.onRequest(EndpointToken, fmt.Sprint(resp.StatusCode))
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxTokenBytes+1))
	if err != nil {
		return "", &TokenError{Status: resp.StatusCode, Err: t.scrubErr(err)}
	}
	if len(body) > maxTokenBytes {
		return "", &TokenError{Status: resp.StatusCode, Description: "answer too large"}
	}
	var ans struct {
		AccessToken string          `json:"access_token"`
		TokenType   string          `json:"token_type"`
		ExpiresIn   json.Number     `json:"expires_in"`
		Scope       string          `json:"scope"`
		Error       json.RawMessage `json:"error"`
		Description string          `json:"error_description"`
	}
	decodeErr := json.Unmarshal(body, &ans)
	if resp.StatusCode != http.StatusOK {
		e := &TokenError{Status: resp.StatusCode, transient: resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode >= 500}
		e.retryAfter, e.hasRetryAfter = retryAfter(resp.Header.Get("Retry-After"), t.clk.Now(), t.maxRetryAfter)
		if decodeErr == nil {
			var code string
			if json.Unmarshal(ans.Error, &code) == nil {
				if oauthCode.MatchString(code) {
					e.Code = code
				} else {
					e.Description = t.scrub(code)
				}
			}
			if ans.Description != "" {
				e.Description = t.scrub(ans.Description)
			}
		}
		return "", e
	}
	if decodeErr != nil || ans.AccessToken == "" {
		return "", &TokenError{Status: resp.StatusCode, Description: "the answer has no access_token"}
	}
	if tt := strings.ToLower(ans.TokenType); tt != "" && tt != "bearer" {
		return "", &TokenError{Status: resp.StatusCode, Description: "token_type is not Bearer"}
	}
	if strings.ContainsAny(ans.AccessToken, "\r\n\x00") {
		return "", &TokenError{Status: resp.StatusCode, Description: "the access_token cannot go in a header"}
	}
	var life time.Duration
	if n, err := ans.ExpiresIn.Int64(); err == nil && n > 0 {
		life = time.Duration(min(n, 366*24*3600)) * time.Second
	}
	t.tok = ans.AccessToken
	t.renew = sent.Add(renewAfter(life))
	t.granted = strings.Fields(ans.Scope)
	return t.tok, nil
}

// oauthCode is the form of OAuth's error codes (RFC 6749 5.2, bounded).
var oauthCode = regexp.MustCompile(`^[a-z_]{1,64}$`)

// scrub bounds a text from the server and removes the client secret from
// it in every form it was sent (as is, form-encoded, in the Basic
// header), should the server echo it.
func (t *tokens) scrub(s string) string {
	if t.secret != "" {
		basic := base64.StdEncoding.EncodeToString([]byte(t.id + ":" + t.secret))
		for _, v := range []string{basic, t.secret, url.QueryEscape(t.secret)} {
			s = strings.ReplaceAll(s, v, "<secret>")
		}
	}
	s = strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f {
			return ' '
		}
		return r
	}, s)
	if len(s) > 200 {
		s = s[:200] + "…"
	}
	return strings.ToValidUTF8(s, "")
}

// scrubErr keeps a network error's text without anything secret (a URL in
// it carries no credentials: config refuses them).
func (t *tokens) scrubErr(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	return errors.New(t.scrub(err.Error()))
}
