package ampserver

import (
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
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
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
	// OnRefresh, when set, counts each refresh request the exporter made,
	// by outcome (one of RefreshOutcomes).
	OnRefresh func(outcome string)
}

// The outcomes of a refresh (OAuthOptions.OnRefresh).
const (
	// RefreshStored: refreshed, and the new login stored in secrets.json.
	RefreshStored = "stored"
	// RefreshKeptInMemory: refreshed, but secrets.json could not be
	// written: the exporter keeps the new login and writes it when it can.
	RefreshKeptInMemory = "kept_in_memory"
	// RefreshOtherAccount: the issuer answered with a token for another
	// account; refused, neither stored nor used.
	RefreshOtherAccount = "other_account"
	// RefreshInvalidGrant: the refresh token was refused (rotated by
	// another process, or the login is gone).
	RefreshInvalidGrant = "invalid_grant"
	// RefreshFailed: any other failure (HTTP errors, network, a bad
	// answer).
	RefreshFailed = "failed"
)

// RefreshOutcomes are the outcomes OnRefresh is told, for counters that
// start at zero.
var RefreshOutcomes = []string{RefreshStored, RefreshKeptInMemory, RefreshOtherAccount, RefreshInvalidGrant, RefreshFailed}

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
	warned        string // the last warning logged, not to repeat it
	// issued is the login the issuer last answered this process with. It
	// is kept until secrets.json holds a newer one than it: a CLI process
	// that wrote the file from an older read can put back a refresh token
	// the issuer has rotated since, and a store can fail; then these are
	// the live tokens, used and written back (see reconcile).
	issued *issuedLogin
	// spent are refresh tokens this process sent and the issuer rotated
	// (never valid again), the newest last.
	spent []string
	// seenToken is the access token last looked at, seenLife its
	// lifetime (see lifetime).
	seenToken string
	seenLife  time.Duration
}

// issuedLogin is a login as the issuer answered it.
type issuedLogin struct {
	url, access, refresh string
	// unstored: secrets.json does not hold it (its store failed, or a
	// spent one was put back); writing it again waits until storeAt.
	unstored bool
	storeAt  time.Time
	warned   string // the last store failure logged, not to repeat it
}

// maxSpent bounds the spent refresh tokens remembered: a CLI write from
// a read older than a few refreshes is not seen in practice.
const maxSpent = 8

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
// an OAuth session token that is due (see early).
func (l *Login) APIKey(ctx context.Context) (string, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	s, err := readLogin(l.path, l.url)
	if err != nil {
		return "", err
	}
	s = l.reconcile(s)
	if !isJWT(s.access) {
		return s.access, nil // an access token: it does not expire
	}
	now := l.o.Now()
	exp, hasExp := jwtExpiry(s.access)
	valid := !hasExp || now.Before(exp)
	if hasExp && exp.Sub(now) > l.early(s.access, exp, now) {
		return s.access, nil
	}
	if !hasExp && l.issued != nil && s.access == l.issued.access {
		return s.access, nil // no exp to go by: the one just issued is used
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
		again = l.reconcile(again)
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

// early is how much validity left makes the token access due for a
// refresh here. A CLI process refreshes under Margin (120 s) left; the
// exporter Lead (60 s) earlier, so that the two seldom refresh at once.
// A token that lives less than Margin+2*Lead would then be due as soon as
// it is stored, by whoever did not store it (two exporters on one login
// refreshed each other's 150 s tokens at every request): there the
// exporter refreshes halfway between the token's issue and the CLI's
// margin, and a token that lives Margin or less is due at once, as for
// the CLI.
func (l *Login) early(access string, exp, now time.Time) time.Duration {
	life := l.lifetime(access, exp, now)
	if life >= l.o.Margin+2*l.o.Lead {
		return l.o.Margin + l.o.Lead
	}
	return l.o.Margin + max(0, (life-l.o.Margin)/2)
}

// lifetime is how long the token access was issued for: its exp minus
// its iat when it has one, else what was left of it when this process
// first saw it (a token another process just stored: its whole life; one
// seen late: less, which only makes it due sooner).
func (l *Login) lifetime(access string, exp, now time.Time) time.Duration {
	if c := jwtClaimsOf(access); c.iat > 0 && c.exp > c.iat {
		return time.Duration((c.exp - c.iat) * float64(time.Second))
	}
	if access != l.seenToken {
		l.seenToken, l.seenLife = access, exp.Sub(now)
	}
	return l.seenLife
}

// reconcile lays the login this process was issued over the stored one
// s where secrets.json holds a refresh token the issuer has rotated for
// this process (spent): a CLI process wrote the file from a read older
// than the last store, or the store failed. Those tokens are the live
// ones: they are written back, under the same rules as a refresh's
// (every other entry kept, the file's owner and mode), and used. A stored
// login that is neither that one nor a spent one is newer (another
// process refreshed, or `amp login`): it wins, and the issued one is
// forgotten.
func (l *Login) reconcile(s stored) stored {
	i := l.issued
	switch {
	case i == nil:
		return s
	case s.refresh == i.refresh:
		i.unstored = false
		return s
	case s.refresh == "" || !slices.Contains(l.spent, s.refresh):
		l.issued = nil
		return s
	}
	live := stored{url: i.url, access: i.access, refresh: i.refresh}
	now := l.o.Now()
	if i.unstored && now.Before(i.storeAt) {
		return live
	}
	err := storeLogin(l.path, i.url, i.refresh, i.access, func(cur string) bool { return cur == "" || slices.Contains(l.spent, cur) })
	switch {
	case err == nil:
		if i.unstored {
			l.o.Logger.Info("wrote the refreshed Amp CLI login to secrets.json", "secrets", l.path, "url", l.url)
		} else {
			l.o.Logger.Info("secrets.json held a refresh token the exporter had already used (a CLI process wrote the file from an older copy): wrote back the live login", "secrets", l.path, "url", l.url)
		}
		i.unstored, i.warned = false, ""
	case errors.Is(err, errSuperseded):
		l.issued = nil
		if again, err := readLogin(l.path, l.url); err == nil {
			return again
		}
		return s
	default:
		i.unstored, i.storeAt = true, now.Add(l.o.RetryFailedAfter)
		if i.warned != err.Error() {
			i.warned = err.Error()
			l.o.Logger.Warn("cannot write the refreshed Amp CLI login to secrets.json: the exporter keeps using it from memory and writes it when it can; a CLI process on this login may ask for `amp login` meanwhile",
				"secrets", l.path, "url", l.url, "err", err)
		}
	}
	return live
}

func fmtTime(t time.Time) string { return t.UTC().Format(time.RFC3339) }

// refreshLocked runs the CLI's refresh procedure for the stored login s.
func (l *Login) refreshLocked(ctx context.Context, s stored, valid bool) (string, error) {
	access, err := l.refreshOnce(ctx, s)
	switch {
	case err == nil:
		l.retryAt, l.lastErr, l.warned = time.Time{}, "", ""
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

// errOtherAccount: the issuer's answer is a login of another account.
var errOtherAccount = errors.New("the issuer answered the refresh with a token for another account (another sub): refused, neither stored nor used; the stored login is kept")

func (l *Login) count(outcome string) {
	if l.o.OnRefresh != nil {
		l.o.OnRefresh(outcome)
	}
}

func (l *Login) refreshOnce(ctx context.Context, s stored) (string, error) {
	// The issuer rotates the refresh token as it answers: a new one that
	// cannot be stored is the CLI's login lost. So secrets.json must be
	// writable, the way the new tokens will be written, before anything
	// is sent.
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
				l.count(RefreshFailed)
				return "", errors.New("oauth refresh: unexpected answer (no usable access_token and refresh_token)")
			}
			if was, now := jwtClaimsOf(s.access).sub, jwtClaimsOf(*tok.AccessToken).sub; was != "" && now != was {
				// Another account's login would count its threads as
				// this user's: refused before anything uses it.
				l.count(RefreshOtherAccount)
				return "", errOtherAccount
			}
			return l.issue(s, *tok.AccessToken, *tok.RefreshToken), nil
		}
		var oerr struct {
			Error string `json:"error"`
		}
		if err == nil {
			_ = json.Unmarshal(body, &oerr)
		}
		if err == nil && oerr.Error == "invalid_grant" {
			l.count(RefreshInvalidGrant)
			return l.invalidGrant(ctx, s)
		}
		if err == nil && status != http.StatusTooManyRequests && status < 500 {
			l.count(RefreshFailed)
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
			l.count(RefreshFailed)
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

// issue takes the login the issuer answered a refresh of s with: it is
// kept (the sent refresh token is spent now) and stored. A store that
// fails does not drop it: it is used from memory, and written when
// secrets.json can take it (reconcile).
func (l *Login) issue(s stored, access, refresh string) string {
	l.spent = append(l.spent, s.refresh)
	if len(l.spent) > maxSpent {
		l.spent = l.spent[len(l.spent)-maxSpent:]
	}
	now := l.o.Now()
	if exp, ok := jwtExpiry(access); ok {
		l.seenToken, l.seenLife = access, exp.Sub(now)
	}
	i := &issuedLogin{url: s.url, access: access, refresh: refresh}
	l.issued = i
	if err := storeLogin(l.path, s.url, refresh, access, nil); err != nil {
		l.count(RefreshKeptInMemory)
		i.unstored, i.storeAt, i.warned = true, now.Add(l.o.RetryFailedAfter), err.Error()
		l.o.Logger.Warn("refreshed the Amp CLI login but cannot write it to secrets.json: the exporter keeps using it from memory and writes it when it can; a CLI process on this login may ask for `amp login` meanwhile",
			"secrets", l.path, "url", l.url, "err", err)
		return access
	}
	l.count(RefreshStored)
	l.o.Logger.Debug("refreshed the Amp CLI login", "secrets", l.path, "url", l.url)
	return access
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

// jwtClaims are the claims of a JWT's payload the exporter reads; the
// signature is the server's business.
type jwtClaims struct {
	exp, iat float64 // seconds; 0 when absent
	sub      string  // the account; "" when absent
}

// jwtClaimsOf reads a JWT's claims; a part that cannot be read is absent.
func jwtClaimsOf(k string) jwtClaims {
	parts := strings.Split(k, ".")
	if len(parts) != 3 {
		return jwtClaims{}
	}
	payload, err := base64.RawURLEncoding.DecodeString(strings.TrimRight(parts[1], "="))
	if err != nil {
		return jwtClaims{}
	}
	var raw struct {
		Exp *float64 `json:"exp"`
		Iat *float64 `json:"iat"`
		Sub any      `json:"sub"`
	}
	if json.Unmarshal(payload, &raw) != nil {
		return jwtClaims{}
	}
	var c jwtClaims
	sane := func(v *float64) float64 {
		if v == nil || *v <= 0 || *v > 1e12 {
			return 0
		}
		return *v
	}
	c.exp, c.iat = sane(raw.Exp), sane(raw.Iat)
	switch v := raw.Sub.(type) {
	case string:
		c.sub = v
	case float64:
		c.sub = strconv.FormatFloat(v, 'f', -1, 64)
	}
	return c
}

// jwtExpiry reads the exp claim (seconds) of a JWT's payload.
func jwtExpiry(k string) (time.Time, bool) {
	c := jwtClaimsOf(k)
	if c.exp == 0 {
		return time.Time{}, false
	}
	return time.UnixMilli(int64(c.exp * 1000)), true
}
