package ampserver

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/amp-exporter/amp-exporter/internal/regfile"
)

// An OAuth login of the Amp CLI is a short-lived JWT in
// apiKey@<url> and a rotating refresh token in oauth-refresh-token@<url>.
// Login keeps it valid the way another CLI process would (docs/amp-login.md):
//
//   - when less than Margin (120 s) of the token's validity is left, ask
//     the server's GET {url}/api/auth/oauth-config for {clientID, apiURL};
//   - POST {apiURL}/user_management/authenticate, form-encoded
//     grant_type=refresh_token&refresh_token=…&client_id=…; the answer is
//     {access_token, refresh_token, user?};
//   - store the new refresh token and access token in secrets.json,
//     re-read just before and replaced atomically, every other entry kept;
//   - on invalid_grant, read the stored refresh token again: if it is no
//     longer the one sent, another process rotated it and the stored
//     access token is the fresh one; if it is, the login is gone;
//   - 429 and 5xx are retried twice (1 s, 2 s, at least Retry-After up to
//     5 s, plus up to 0.5 s of jitter); anything else fails this refresh.

// OAuthOptions configures the refresh of an OAuth login.
type OAuthOptions struct {
	// HTTP sends the refresh requests (proxy and TLS settings); redirects
	// are not followed. Default: a plain client.
	HTTP *http.Client
	// Logger gets one line per refresh outcome; never a token.
	Logger *slog.Logger
	// Now is the clock (tests inject one); default time.Now.
	Now func() time.Time
	// Sleep waits between retries; default a timer honouring ctx.
	Sleep func(ctx context.Context, d time.Duration) error
	// Version goes into the User-Agent.
	Version string
	// Margin is the CLI's: a CLI process refreshes when less validity
	// than this is left (default 120 s).
	Margin time.Duration
	// Lead: the exporter refreshes this much earlier than a CLI process
	// would (default 60 s, a sync interval), so that the two seldom
	// refresh at the same moment: the protocol has a window, between the
	// issuer rotating a token and its new holder storing it, in which the
	// other side would take its own refused refresh for a lost login.
	Lead time.Duration
	// Pause: when the token is already within Margin (where CLI processes
	// refresh too), wait this long and read the login again before
	// refreshing, so a CLI process in the middle of its refresh finishes
	// first (default 1 s).
	Pause time.Duration
	// Timeout bounds one request (default 10 s, as the CLI).
	Timeout time.Duration
	// RetryFailedAfter: after a refresh that failed (not invalid_grant),
	// the next try waits this long while the token is still valid
	// (default 30 s), so a sync's many requests do not each retry it.
	RetryFailedAfter time.Duration
}

func (o *OAuthOptions) defaults() {
	if o.HTTP == nil {
		o.HTTP = &http.Client{}
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Sleep == nil {
		o.Sleep = sleep
	}
	if o.Version == "" {
		o.Version = "devel"
	}
	if o.Margin <= 0 {
		o.Margin = 120 * time.Second
	}
	if o.Lead <= 0 {
		o.Lead = time.Minute
	}
	if o.Pause <= 0 {
		o.Pause = time.Second
	}
	if o.Timeout <= 0 {
		o.Timeout = 10 * time.Second
	}
	if o.RetryFailedAfter <= 0 {
		o.RetryFailedAfter = 30 * time.Second
	}
}

// maxOAuthBody bounds an oauth-config or token answer.
const maxOAuthBody = 64 << 10

// Retry delays of the refresh, as the CLI's: two retries.
var refreshDelays = []time.Duration{time.Second, 2 * time.Second}

const (
	maxRefreshRetryAfter = 5 * time.Second
	refreshJitter        = 500 * time.Millisecond
)

// Login is the Amp CLI's login in secrets.json for one server URL.
type Login struct {
	path    string
	url     string
	refresh bool
	o       OAuthOptions

	mu   sync.Mutex
	conf *oauthConfig
	// dead is a refresh token the issuer refused that no other process
	// had rotated: it is not sent again.
	dead string
	// retryAt: a refresh failed; the next waits until then.
	retryAt time.Time
	lastErr string
	// lastTransient: that failure was a transient one (429, 5xx, network).
	lastTransient bool
	// own is the access token this process stored last, and short says
	// it was issued with less than Margin+Lead of validity (then it is
	// refreshed at Margin only, not at every use).
	own    string
	short  bool
	warned string // the last warning logged, not to repeat it
}

func newLogin(path, url string, refresh bool, o OAuthOptions) *Login {
	o.defaults()
	hc := *o.HTTP
	// The refresh token is in the body; a redirect must not carry it on.
	hc.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	o.HTTP = &hc
	return &Login{path: path, url: url, refresh: refresh, o: o}
}

// stored returns the stored key, refreshing nothing (Key.Read).
func (l *Login) stored() (string, error) {
	s, err := readLogin(l.path, l.url)
	return s.access, err
}

// isOAuth reports whether the stored login is an OAuth session.
func (l *Login) isOAuth() bool {
	s, err := readLogin(l.path, l.url)
	return err == nil && isJWT(s.access) && s.refresh != ""
}

// Refused implements KeySource: a key the server refused is worth a retry
// when secrets.json holds another one now.
func (l *Login) Refused(key string) bool {
	s, err := readLogin(l.path, l.url)
	return err == nil && s.access != key
}

// APIKey implements KeySource: the stored key, refreshed first when it is
// an OAuth session token with less than Margin of validity left.
func (l *Login) APIKey(ctx context.Context) (string, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	s, err := readLogin(l.path, l.url)
	if err != nil {
		return "", err
	}
	if !isJWT(s.access) {
		return s.access, nil // an access token: it does not expire
	}
	now := l.o.Now()
	exp, hasExp := jwtExpiry(s.access)
	valid := !hasExp || now.Before(exp)
	early := l.o.Margin + l.o.Lead
	if s.access == l.own && l.short {
		early = l.o.Margin
	}
	if (hasExp && exp.Sub(now) > early) || (!hasExp && s.access == l.own) {
		return s.access, nil
	}
	if l.refresh && s.refresh != "" && s.refresh != l.dead && valid && !now.Before(l.retryAt) && (!hasExp || exp.Sub(now) <= l.o.Margin) {
		// Where CLI processes refresh too: let one that is refreshing
		// now finish, then read again.
		if err := l.o.Sleep(ctx, l.o.Pause); err != nil {
			return "", err
		}
		again, err := readLogin(l.path, l.url)
		if err != nil {
			return "", err
		}
		if again.access != s.access {
			if e2, ok := jwtExpiry(again.access); !isJWT(again.access) || (ok && e2.Sub(l.o.Now()) > l.o.Margin) {
				return again.access, nil
			}
			s = again
		}
	}
	switch {
	case s.refresh == "":
		if valid {
			return s.access, nil
		}
		return "", fmt.Errorf("%w at %s, and %q holds no refresh token for it: run `amp login`", ErrLoginExpired, fmtTime(exp), l.path)
	case !l.refresh:
		if valid {
			return s.access, nil
		}
		return "", fmt.Errorf("%w at %s; amp_server.refresh_login is false, so the exporter does not refresh it: put an access token from the Amp settings page in amp_server.api_key_file, or allow refresh_login: %w",
			ErrLoginExpired, fmtTime(exp), ErrAuth)
	case s.refresh == l.dead:
		return "", fmt.Errorf("%q: %w", l.path, ErrLoginGone)
	case now.Before(l.retryAt):
		if valid {
			return s.access, nil
		}
		err := fmt.Errorf("%w at %s and refreshing it failed (%s); retrying after %s", ErrLoginExpired, fmtTime(exp), l.lastErr, fmtTime(l.retryAt))
		if l.lastTransient {
			err = fmt.Errorf("%w: %w", err, ErrTransient)
		}
		return "", err
	}
	return l.refreshLocked(ctx, s, valid)
}

func fmtTime(t time.Time) string { return t.UTC().Format(time.RFC3339) }

// refreshLocked runs the CLI's refresh procedure for the stored login s.
func (l *Login) refreshLocked(ctx context.Context, s stored, valid bool) (string, error) {
	access, err := l.refreshOnce(ctx, s)
	switch {
	case err == nil:
		l.retryAt, l.lastErr, l.warned = time.Time{}, "", ""
		l.own = access
		exp, ok := jwtExpiry(access)
		l.short = ok && exp.Sub(l.o.Now()) <= l.o.Margin+l.o.Lead
		return access, nil
	case ctx.Err() != nil:
		return "", ctx.Err()
	case errors.Is(err, ErrLoginGone):
		// Not logged here: the error is what the sync logs, once.
		l.dead = s.refresh
		return "", fmt.Errorf("%q: %w", l.path, ErrLoginGone)
	}
	l.lastErr = err.Error()
	l.lastTransient = errors.Is(err, ErrTransient)
	l.retryAt = l.o.Now().Add(l.o.RetryFailedAfter)
	if l.warned != l.lastErr {
		l.warned = l.lastErr
		l.o.Logger.Warn("cannot refresh the Amp CLI login yet", "secrets", l.path, "url", l.url, "err", err)
	}
	if valid {
		return s.access, nil
	}
	return "", fmt.Errorf("%w and refreshing it failed: %w", ErrLoginExpired, err)
}

func (l *Login) refreshOnce(ctx context.Context, s stored) (string, error) {
	// The issuer rotates the refresh token as it answers: a new one that
	// cannot be stored is the CLI's login lost. So the folder the new
	// tokens go to must take a file before anything is sent.
	if err := writable(l.path); err != nil {
		return "", err
	}
	conf, err := l.config(ctx)
	if err != nil {
		return "", err
	}
	form := url.Values{"grant_type": {"refresh_token"}, "refresh_token": {s.refresh}, "client_id": {conf.ClientID}}
	endpoint := strings.TrimSuffix(conf.APIURL, "/") + "/user_management/authenticate"
	for attempt := 0; ; attempt++ {
		status, body, retryAfter, err := l.post(ctx, endpoint, form)
		if ctx.Err() != nil {
			return "", ctx.Err()
		}
		if err == nil && status >= 200 && status <= 299 {
			var tok struct {
				AccessToken  *string `json:"access_token"`
				RefreshToken *string `json:"refresh_token"`
			}
			if json.Unmarshal(body, &tok) != nil || tok.AccessToken == nil || tok.RefreshToken == nil ||
				!tokenLike(*tok.AccessToken) || !tokenLike(*tok.RefreshToken) {
				return "", errors.New("oauth refresh: unexpected answer (no usable access_token and refresh_token)")
			}
			if err := storeLogin(l.path, s.url, *tok.RefreshToken, *tok.AccessToken); err != nil {
				return "", err
			}
			l.o.Logger.Debug("refreshed the Amp CLI login", "secrets", l.path, "url", l.url)
			return *tok.AccessToken, nil
		}
		var oerr struct {
			Error string `json:"error"`
		}
		if err == nil {
			_ = json.Unmarshal(body, &oerr)
		}
		if err == nil && oerr.Error == "invalid_grant" {
			return l.invalidGrant(ctx, s)
		}
		if err == nil && status != http.StatusTooManyRequests && status < 500 {
			code := ""
			if oerr.Error != "" {
				code = ", " + bounded(oerr.Error, 64)
			}
			return "", fmt.Errorf("oauth refresh: HTTP %d%s", status, code)
		}
		if err == nil {
			err = fmt.Errorf("oauth refresh: HTTP %d", status)
		}
		if attempt >= len(refreshDelays) {
			// Worth trying again soon: the sync treats it as a transient
			// failure, not as a refused key.
			return "", fmt.Errorf("%w (after %d tries): %w", err, attempt+1, ErrTransient)
		}
		wait := max(refreshDelays[attempt], min(retryAfter, maxRefreshRetryAfter)) + rand.N(refreshJitter)
		if err := l.o.Sleep(ctx, wait); err != nil {
			return "", err
		}
	}
}

// invalidGrant tells a refresh token rotated by another process from a
// login that is gone: the stored refresh token is read again. Another
// process stores its new tokens a moment after the issuer rotated them, so
// an unchanged token is read again twice more before the login is given
// up.
func (l *Login) invalidGrant(ctx context.Context, sent stored) (string, error) {
	for i := 0; ; i++ {
		now, err := readLogin(l.path, l.url)
		if err != nil {
			return "", err
		}
		if now.refresh != "" && now.refresh != sent.refresh {
			l.o.Logger.Debug("the Amp CLI login was refreshed by another process", "secrets", l.path, "url", l.url)
			if exp, ok := jwtExpiry(now.access); ok && !l.o.Now().Before(exp) {
				return "", fmt.Errorf("%w (the one stored by the other process too)", ErrLoginExpired)
			}
			return now.access, nil
		}
		if i == 2 {
			return "", ErrLoginGone
		}
		if err := l.o.Sleep(ctx, 250*time.Millisecond); err != nil {
			return "", err
		}
	}
}

// oauthConfig is the server's GET /api/auth/oauth-config.
type oauthConfig struct {
	ClientID string `json:"clientID"`
	APIURL   string `json:"apiURL"`
}

// config fetches the server's OAuth configuration once (a failure is not
// kept, as the CLI's cache).
func (l *Login) config(ctx context.Context) (*oauthConfig, error) {
	if l.conf != nil {
		return l.conf, nil
	}
	ctx, cancel := context.WithTimeout(ctx, l.o.Timeout)
	defer cancel()
	u := strings.TrimSuffix(l.url, "/") + "/api/auth/oauth-config"
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, fmt.Errorf("oauth-config: %w", err)
	}
	req.Header.Set("User-Agent", "amp-exporter/"+l.o.Version)
	req.Header.Set("Accept", "application/json")
	resp, err := l.o.HTTP.Do(req)
	if err != nil {
		return nil, fmt.Errorf("oauth-config: %s", urlErr(err))
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxOAuthBody+1))
	if err != nil {
		return nil, fmt.Errorf("oauth-config: %s", urlErr(err))
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return nil, fmt.Errorf("OAuth login is not available on this server (HTTP %d from /api/auth/oauth-config)", resp.StatusCode)
	}
	var c oauthConfig
	if len(body) > maxOAuthBody || json.Unmarshal(body, &c) != nil || c.ClientID == "" || !apiURLAllowed(c.APIURL) {
		return nil, errors.New("OAuth login is not available on this server (invalid /api/auth/oauth-config)")
	}
	l.conf = &c
	return l.conf, nil
}

// apiURLAllowed: the refresh token goes only to https, or to http on
// loopback (the CLI's rule).
func apiURLAllowed(s string) bool {
	u, err := url.Parse(s)
	if err != nil || u.Host == "" || u.User != nil {
		return false
	}
	switch u.Scheme {
	case "https":
		return true
	case "http":
		h := u.Hostname()
		return h == "localhost" || h == "127.0.0.1" || h == "::1"
	}
	return false
}

func (l *Login) post(ctx context.Context, endpoint string, form url.Values) (status int, body []byte, retryAfterD time.Duration, err error) {
	ctx, cancel := context.WithTimeout(ctx, l.o.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, endpoint, strings.NewReader(form.Encode()))
	if err != nil {
		return 0, nil, 0, fmt.Errorf("oauth refresh: %w", err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Accept", "application/json")
	req.Header.Set("User-Agent", "amp-exporter/"+l.o.Version)
	resp, err := l.o.HTTP.Do(req)
	if err != nil {
		return 0, nil, 0, fmt.Errorf("oauth refresh: %s", urlErr(err))
	}
	defer resp.Body.Close()
	body, err = io.ReadAll(io.LimitReader(resp.Body, maxOAuthBody+1))
	if err != nil {
		return 0, nil, 0, fmt.Errorf("oauth refresh: %s", urlErr(err))
	}
	if len(body) > maxOAuthBody {
		return 0, nil, 0, fmt.Errorf("oauth refresh: answer larger than %d bytes", maxOAuthBody)
	}
	if n, err := strconv.Atoi(strings.TrimSpace(resp.Header.Get("Retry-After"))); err == nil && n > 0 {
		retryAfterD = time.Duration(min(n, 3600)) * time.Second
	}
	return resp.StatusCode, body, retryAfterD, nil
}

// tokenLike: what can go into secrets.json and an Authorization header.
func tokenLike(s string) bool {
	if s == "" || len(s) > 16<<10 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] <= ' ' || s[i] >= 0x7f {
			return false
		}
	}
	return true
}

var jwtShape = regexp.MustCompile(`^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$`)

// isJWT reports whether a key is an OAuth session token (three base64url
// parts), the CLI's test.
func isJWT(k string) bool { return jwtShape.MatchString(k) }

// jwtExpiry reads the exp claim (seconds) of a JWT's payload; the
// signature is the server's business.
func jwtExpiry(k string) (time.Time, bool) {
	parts := strings.Split(k, ".")
	if len(parts) != 3 {
		return time.Time{}, false
	}
	payload, err := base64.RawURLEncoding.DecodeString(strings.TrimRight(parts[1], "="))
	if err != nil {
		return time.Time{}, false
	}
	var claims struct {
		Exp *float64 `json:"exp"`
	}
	if json.Unmarshal(payload, &claims) != nil || claims.Exp == nil || *claims.Exp <= 0 || *claims.Exp > 1e12 {
		return time.Time{}, false
	}
	return time.UnixMilli(int64(*claims.Exp * 1000)), true
}

// storeLogin writes a refreshed login into secrets.json: the file is read
// again right before (the CLI may have changed other entries), only the
// two entries of this login change, and it is replaced atomically (a
// temporary file in the same directory, then a rename) with mode 0600.
// Both entries go in one replace, refresh token first, as the CLI's own
// file store does (its setMany): a reader never sees the new refresh
// token beside an access token older than it. Writing and flushing the
// temporary file takes a while; when secrets.json changed meanwhile (a
// CLI process wrote it), the change is merged in again before the
// replace, so the CLI's write is kept.
func storeLogin(path, url, refresh, access string) error {
	target := path
	if real, err := filepath.EvalSymlinks(path); err == nil {
		target = real // a symlinked secrets.json stays a symlink
	}
	raw, err := regfile.ReadFile(target, maxKeyFile)
	if err != nil {
		return fmt.Errorf("amp secrets: %w", err)
	}
	for try := 1; ; try++ {
		m, err := parseSecrets(target, raw)
		if err != nil {
			return err
		}
		set := func(name, v string) error {
			b, err := json.Marshal(v)
			m[name+"@"+url] = b
			return err
		}
		if err := set("oauth-refresh-token", refresh); err != nil {
			return err
		}
		if err := set("apiKey", access); err != nil {
			return err
		}
		data, err := json.MarshalIndent(m, "", "  ")
		if err != nil {
			return fmt.Errorf("amp secrets: %w", err)
		}
		err = replaceFile(target, data, func() bool {
			now, err := regfile.ReadFile(target, maxKeyFile)
			if err != nil || bytes.Equal(now, raw) || try == 3 {
				return true
			}
			raw = now
			return false
		})
		if !errors.Is(err, errChangedMeanwhile) {
			return err
		}
	}
}

// errChangedMeanwhile: the file to replace changed while its replacement
// was written.
var errChangedMeanwhile = errors.New("changed meanwhile")

// writable checks that secrets.json (through its symbolic links) can be
// replaced: a temporary file can be made in its folder and given the
// file's owner.
func writable(path string) error {
	target := path
	if real, err := filepath.EvalSymlinks(path); err == nil {
		target = real
	}
	f, err := createTemp(filepath.Dir(target), ".amp-exporter-secrets-*")
	if err == nil {
		// The new file must also be able to keep the old one's owner.
		err = keepOwner(f, target)
		name := f.Name()
		f.Close()
		_ = os.Remove(name)
	}
	if err != nil {
		return fmt.Errorf("cannot write the folder of %q (or give a new file the owner of the old), so a refreshed login could not be stored (the issuer would have replaced the CLI's refresh token): not refreshing, the stored token is used while it is valid; make the folder writable, or put an access token from the Amp settings page in amp_server.api_key_file: %w", path, err)
	}
	return nil
}

// beforeReplace, when set, runs between the new secrets.json being written
// and it replacing the old one (tests write the file there as a CLI
// process would).
var beforeReplace func()

// createTemp is os.CreateTemp (tests make a folder that cannot be
// written).
var createTemp = os.CreateTemp

// replaceFile replaces target with data atomically. Right before the
// rename, unchanged reports whether target may be replaced; when it says
// no, nothing is replaced and the error is errChangedMeanwhile.
func replaceFile(target string, data []byte, unchanged func() bool) (err error) {
	dir := filepath.Dir(target)
	f, err := createTemp(dir, ".amp-exporter-secrets-*")
	if err != nil {
		return fmt.Errorf("amp secrets: %w", err)
	}
	tmp := f.Name()
	defer func() {
		if err != nil {
			os.Remove(tmp)
		}
	}()
	if err := f.Chmod(0o600); err != nil && !errors.Is(err, errors.ErrUnsupported) {
		f.Close()
		return fmt.Errorf("amp secrets: %w", err)
	}
	if err := keepOwner(f, target); err != nil {
		f.Close()
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return fmt.Errorf("amp secrets: write %q: %w", tmp, err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return fmt.Errorf("amp secrets: sync %q: %w", tmp, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("amp secrets: %w", err)
	}
	if beforeReplace != nil {
		beforeReplace()
	}
	if !unchanged() {
		return errChangedMeanwhile
	}
	if err := os.Rename(tmp, target); err != nil {
		return fmt.Errorf("amp secrets: replace %q: %w", target, err)
	}
	syncDir(dir)
	return nil
}
