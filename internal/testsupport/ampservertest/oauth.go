package ampservertest

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"
)

// OAuth is a stand-in for an Amp server whose users log in with OAuth
// (docs/amp-login.md): short-lived access tokens (JWTs with an exp
// claim) and rotating refresh tokens. It listens on loopback in front of
// a Server and serves:
//
//   - GET  /api/auth/oauth-config → {clientID, apiURL, defaultLoginMethod}
//     (apiURL is this server's /oauth);
//   - POST /oauth/user_management/authenticate, form-encoded
//     grant_type=refresh_token&refresh_token=…&client_id=…, answering
//     {access_token, refresh_token, user: {email}} and rotating the
//     refresh token (the one sent is no longer valid), or HTTP 400
//     {"error": "invalid_grant"} for a refresh token that is not the
//     login's current one;
//   - POST /api/internal?… for a Bearer access token it issued that has
//     not expired: passed on to the Server with the Server's key;
//     otherwise 401 auth-required.
//
// Time is the clock given to NewOAuth, so a test can make tokens expire
// without waiting.
type OAuth struct {
	*httptest.Server
	backendKey string
	now        func() time.Time
	lifetime   time.Duration
	clientID   string
	secret     []byte
	proxy      *httputil.ReverseProxy

	mu        sync.Mutex
	current   string // the valid refresh token; "" when the login is revoked
	seq       int
	rotations int
	refreshes int // authenticate requests
	refused   int // invalid_grant answers
	faults    []Fault
	sub       string // the account of the tokens issued
	// OnAuthenticate, when set, runs at the start of every authenticate
	// request, before the token is checked (a test makes another process
	// rotate the token there).
	onAuth func()
}

// NewOAuth starts the OAuth stand-in in front of backend (which accepts
// backendKey). Access tokens live lifetime by now's clock.
func NewOAuth(backend *Server, backendKey string, now func() time.Time, lifetime time.Duration) *OAuth {
	target, _ := url.Parse(backend.URL)
	o := &OAuth{backendKey: backendKey, now: now, lifetime: lifetime, clientID: "client_standin", sub: "user-1",
		secret: []byte("stand-in signing key"), proxy: httputil.NewSingleHostReverseProxy(target)}
	o.Server = httptest.NewServer(http.HandlerFunc(o.serve))
	return o
}

// Login issues a new login, as `amp login` would get: an access token and
// the refresh token, which becomes the only valid one.
func (o *OAuth) Login() (access, refresh string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.issueLocked()
}

func (o *OAuth) issueLocked() (access, refresh string) {
	o.seq++
	o.current = fmt.Sprintf("rt_%06d_%x", o.seq, sha256.Sum256([]byte(strconv.Itoa(o.seq))))[:24]
	return o.token(o.seq), o.current
}

// Revoke ends the login: every refresh token is refused from now on.
func (o *OAuth) Revoke() {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.current = ""
}

// SetSubject makes the tokens issued from now on tokens of account sub
// (their sub claim), as a faulty issuer answering a refresh with another
// account's login would.
func (o *OAuth) SetSubject(sub string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.sub = sub
}

// FailRefresh makes the next authenticate requests fail with these
// answers (Status, and RetryAfter as a header), one each.
func (o *OAuth) FailRefresh(f ...Fault) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.faults = append(o.faults, f...)
}

// OnAuthenticate sets a hook run at the start of every authenticate
// request.
func (o *OAuth) OnAuthenticate(f func()) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.onAuth = f
}

// Stats: rotations done, authenticate requests, invalid_grant answers.
func (o *OAuth) Stats() (rotations, requests, refused int) {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.rotations, o.refreshes, o.refused
}

// ClientID is the client id oauth-config names.
func (o *OAuth) ClientID() string { return o.clientID }

func (o *OAuth) token(n int) string {
	enc := base64.RawURLEncoding
	head := enc.EncodeToString([]byte(`{"alg":"HS256","typ":"JWT"}`))
	body, _ := json.Marshal(map[string]any{"sub": o.sub, "exp": o.now().Add(o.lifetime).Unix(), "jti": n})
	signed := head + "." + enc.EncodeToString(body)
	mac := hmac.New(sha256.New, o.secret)
	mac.Write([]byte(signed))
	return signed + "." + enc.EncodeToString(mac.Sum(nil))
}

// valid checks a token's signature and expiry.
func (o *OAuth) valid(tok string) bool {
	i := strings.LastIndexByte(tok, '.')
	if i < 0 {
		return false
	}
	mac := hmac.New(sha256.New, o.secret)
	mac.Write([]byte(tok[:i]))
	if !hmac.Equal([]byte(base64.RawURLEncoding.EncodeToString(mac.Sum(nil))), []byte(tok[i+1:])) {
		return false
	}
	parts := strings.Split(tok[:i], ".")
	if len(parts) != 2 {
		return false
	}
	payload, err := base64.RawURLEncoding.DecodeString(parts[1])
	var claims struct {
		Exp int64 `json:"exp"`
	}
	if err != nil || json.Unmarshal(payload, &claims) != nil {
		return false
	}
	return o.now().Before(time.Unix(claims.Exp, 0))
}

func (o *OAuth) serve(w http.ResponseWriter, r *http.Request) {
	switch {
	case r.URL.Path == "/api/auth/oauth-config" && r.Method == http.MethodGet:
		writeJSON(w, http.StatusOK, map[string]any{"clientID": o.clientID, "apiURL": o.URL + "/oauth", "defaultLoginMethod": "oauth"})
	case r.URL.Path == "/oauth/user_management/authenticate" && r.Method == http.MethodPost:
		o.authenticate(w, r)
	case r.URL.Path == "/api/internal":
		tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		if !ok || !o.valid(tok) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusUnauthorized)
			_, _ = w.Write(encode(false, nil, map[string]string{"code": "auth-required", "message": "Authentication required"}))
			return
		}
		r.Header.Set("Authorization", "Bearer "+o.backendKey)
		o.proxy.ServeHTTP(w, r)
	default:
		writeJSON(w, http.StatusNotFound, map[string]any{"error": "not_found"})
	}
}

func (o *OAuth) authenticate(w http.ResponseWriter, r *http.Request) {
	o.mu.Lock()
	hook := o.onAuth
	o.mu.Unlock()
	if hook != nil {
		hook()
	}
	body, _ := io.ReadAll(io.LimitReader(r.Body, 64<<10))
	form, err := url.ParseQuery(string(body))
	o.mu.Lock()
	defer o.mu.Unlock()
	o.refreshes++
	if len(o.faults) > 0 {
		f := o.faults[0]
		o.faults = o.faults[1:]
		if f.RetryAfter != "" {
			w.Header().Set("Retry-After", f.RetryAfter)
		}
		writeJSON(w, f.Status, map[string]any{"error": "server_error"})
		return
	}
	if err != nil || r.Header.Get("Content-Type") != "application/x-www-form-urlencoded" ||
		form.Get("grant_type") != "refresh_token" || form.Get("client_id") != o.clientID {
		writeJSON(w, http.StatusBadRequest, map[string]any{"error": "invalid_request"})
		return
	}
	if rt := form.Get("refresh_token"); o.current == "" || rt != o.current {
		o.refused++
		writeJSON(w, http.StatusBadRequest, map[string]any{"error": "invalid_grant", "error_description": "Refresh token is invalid."})
		return
	}
	o.rotations++
	access, refresh := o.issueLocked()
	writeJSON(w, http.StatusOK, map[string]any{"access_token": access, "refresh_token": refresh,
		"user": map[string]any{"email": "alice@example.com"}})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	b, _ := json.Marshal(v)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(b)
}
