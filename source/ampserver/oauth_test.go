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
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/amp-exporter/amp-exporter/internal/clock"
	"github.com/amp-exporter/amp-exporter/internal/testsupport/ampservertest"
	"github.com/amp-exporter/amp-exporter/internal/testsupport/testutil"
	"github.com/amp-exporter/amp-exporter/internal/testsupport/threadgen"
	"github.com/amp-exporter/amp-exporter/store"
)

// oauthEnv is an Amp server with OAuth logins (the stand-in), a CLI data
// directory whose secrets.json holds a login for it, and a fake clock.
type oauthEnv struct {
	t       *testing.T
	clk     *clock.Fake
	back    *ampservertest.Server
	o       *ampservertest.OAuth
	data    string // XDG_DATA_HOME
	secrets string
	cliURL  string // the URL as the CLI keeps it (AMP_URL as typed: no slash)
	log     *testutil.SyncBuffer
	sleeps  []time.Duration
	mu      sync.Mutex
	// outcomes counts the refreshes of the keys made by key, by outcome.
	outcomes map[string]int
}

func (e *oauthEnv) countRefresh(outcome string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.outcomes == nil {
		e.outcomes = map[string]int{}
	}
	e.outcomes[outcome]++
}

func (e *oauthEnv) refreshes(outcome string) int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.outcomes[outcome]
}

// otherEntries are secrets.json entries a refresh must keep as they are.
var otherEntries = map[string]any{
	"apiKey@https://ampcode.com/":                "sgamp_user_other",
	"mcp-oauth-token@https://mcp.example/linear": `{"access_token":"x"}`,
	"someFutureSetting@x":                        map[string]any{"nested": []any{1.0, true}},
}

func newOAuthEnv(t *testing.T, lifetime time.Duration) *oauthEnv {
	t.Helper()
	clk := clock.NewFake(t0)
	back := ampservertest.New(testKey, "alice@example.com")
	t.Cleanup(back.Close)
	o := ampservertest.NewOAuth(back, testKey, clk.Now, lifetime)
	t.Cleanup(o.Close)
	e := &oauthEnv{t: t, clk: clk, back: back, o: o, data: t.TempDir(), cliURL: o.URL, log: &testutil.SyncBuffer{}}
	if err := os.MkdirAll(filepath.Join(e.data, "amp"), 0o700); err != nil {
		t.Fatal(err)
	}
	e.secrets = filepath.Join(e.data, "amp", "secrets.json")
	access, refresh := o.Login()
	m := map[string]any{"apiKey@" + e.cliURL: access, "oauth-refresh-token@" + e.cliURL: refresh}
	for k, v := range otherEntries {
		m[k] = v
	}
	b, _ := json.MarshalIndent(m, "", "  ")
	if err := os.WriteFile(e.secrets, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return e
}

func (e *oauthEnv) sleep(_ context.Context, d time.Duration) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.sleeps = append(e.sleeps, d)
	return nil
}

func (e *oauthEnv) logger() *slog.Logger {
	return slog.New(slog.NewTextHandler(e.log, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

// key finds the key as the exporter does, for the URL as the exporter's
// configuration has it (with the trailing slash).
func (e *oauthEnv) key(refresh bool, vars map[string]string, apiKeyFile string) (Key, error) {
	all := map[string]string{"XDG_DATA_HOME": e.data}
	for k, v := range vars {
		all[k] = v
	}
	return FindKeyWith(KeyOptions{APIKeyFile: apiKeyFile, URL: e.o.URL + "/", Env: KeyEnv{Getenv: envOf(all), Home: e.t.TempDir()},
		RefreshLogin: refresh, OAuth: OAuthOptions{Now: e.clk.Now, Logger: e.logger(), Sleep: e.sleep, OnRefresh: e.countRefresh}})
}

func (e *oauthEnv) mustKey(refresh bool) Key {
	e.t.Helper()
	k, err := e.key(refresh, nil, "")
	if err != nil {
		e.t.Fatal(err)
	}
	return k
}

func (e *oauthEnv) file() map[string]any {
	e.t.Helper()
	b, err := os.ReadFile(e.secrets)
	if err != nil {
		e.t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		e.t.Fatal(err)
	}
	return m
}

func (e *oauthEnv) stored() (access, refresh string) {
	m := e.file()
	a, _ := m["apiKey@"+e.cliURL].(string)
	r, _ := m["oauth-refresh-token@"+e.cliURL].(string)
	return a, r
}

// checkFile: every other entry is as it was, and the mode is 0600.
func (e *oauthEnv) checkFile() {
	e.t.Helper()
	m := e.file()
	for k, v := range otherEntries {
		got, _ := json.Marshal(m[k])
		want, _ := json.Marshal(v)
		if !bytes.Equal(got, want) {
			e.t.Errorf("entry %s is %s, want %s", k, got, want)
		}
	}
	if len(m) != len(otherEntries)+2 {
		e.t.Errorf("%d entries, want %d", len(m), len(otherEntries)+2)
	}
	if fi, err := os.Stat(e.secrets); err != nil || (runtime.GOOS != "windows" && fi.Mode().Perm() != 0o600) {
		e.t.Errorf("secrets.json: %v %v, want mode 0600", err, fi.Mode())
	}
	if fi, err := os.Lstat(e.secrets); err != nil || !fi.Mode().IsRegular() {
		e.t.Errorf("secrets.json is no longer a regular file")
	}
	entries, _ := os.ReadDir(filepath.Dir(e.secrets))
	if len(entries) != 1 {
		e.t.Errorf("left behind in the data directory: %v", entries)
	}
}

// noTokensLogged: neither a JWT (its header starts eyJ) nor a refresh
// token (rt_) is in the log.
func (e *oauthEnv) noTokensLogged() {
	e.t.Helper()
	if s := e.log.String(); strings.Contains(s, "eyJ") || strings.Contains(s, "rt_") {
		e.t.Errorf("a token was logged:\n%s", s)
	}
}

func TestOAuthRefreshKeepsOtherEntries(t *testing.T) {
	e := newOAuthEnv(t, 5*time.Minute)
	k := e.mustKey(true)
	if !k.OAuth() {
		t.Fatal("the login is not taken for an OAuth login")
	}
	before, rtBefore := e.stored()
	// Fresh (5 minutes left): used as it is.
	got, err := k.APIKey(context.Background())
	if err != nil || got != before {
		t.Fatalf("fresh token: %v (changed: %v)", err, got != before)
	}
	if rot, req, _ := e.o.Stats(); rot != 0 || req != 0 {
		t.Fatalf("a fresh token was refreshed (%d requests)", req)
	}
	// Under 120 s left: refreshed, stored, returned.
	e.clk.Advance(3*time.Minute + time.Second)
	got, err = k.APIKey(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	after, rtAfter := e.stored()
	if got == before || got != after || rtAfter == rtBefore {
		t.Fatalf("refresh: returned new %v, stored access new %v, stored refresh new %v", got != before, after != before, rtAfter != rtBefore)
	}
	if rot, _, _ := e.o.Stats(); rot != 1 {
		t.Fatalf("%d rotations, want 1", rot)
	}
	// Stored under the URL as the CLI typed it (no slash), nothing added.
	if _, ok := e.file()["apiKey@"+e.cliURL+"/"]; ok {
		t.Fatal("the login was stored under a second URL form")
	}
	e.checkFile()
	e.noTokensLogged()
	if !strings.Contains(e.log.String(), "refreshed the Amp CLI login") {
		t.Errorf("no log line for the refresh:\n%s", e.log)
	}
}

// A symlinked secrets.json (dotfiles) is written through, as the CLI does.
func TestOAuthRefreshThroughSymlink(t *testing.T) {
	e := newOAuthEnv(t, time.Minute)
	real := filepath.Join(t.TempDir(), "real-secrets.json")
	if err := os.Rename(e.secrets, real); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(real, e.secrets); err != nil {
		t.Fatal(err)
	}
	if _, err := e.mustKey(true).APIKey(context.Background()); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Lstat(e.secrets); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Fatalf("secrets.json is no longer a symlink: %v", err)
	}
	if rot, _, _ := e.o.Stats(); rot != 1 {
		t.Fatalf("%d rotations", rot)
	}
}

func TestOAuthRefreshLoginFalse(t *testing.T) {
	e := newOAuthEnv(t, 5*time.Minute)
	k := e.mustKey(false)
	if k.OAuth() {
		t.Fatal("refresh_login false, yet taken for a login the exporter keeps valid")
	}
	before, _ := e.stored()
	e.clk.Advance(4 * time.Minute) // one minute left: still used
	if got, err := k.APIKey(context.Background()); err != nil || got != before {
		t.Fatalf("valid token: %v", err)
	}
	e.clk.Advance(2 * time.Minute) // expired
	_, err := k.APIKey(context.Background())
	if !errors.Is(err, ErrLoginExpired) || !strings.Contains(err.Error(), "api_key_file") || !strings.Contains(err.Error(), "refresh_login") {
		t.Fatalf("expired token: %v", err)
	}
	if after, _ := e.stored(); after != before {
		t.Fatal("secrets.json was written with refresh_login false")
	}
	if _, req, _ := e.o.Stats(); req != 0 {
		t.Fatalf("%d refresh requests with refresh_login false", req)
	}
	e.noTokensLogged()
}

// A key from AMP_API_KEY or api_key_file is never refreshed, even when
// secrets.json holds a refresh token for the server.
func TestOAuthNeverRefreshesEnvOrKeyFile(t *testing.T) {
	e := newOAuthEnv(t, 5*time.Minute)
	access, _ := e.stored()
	keyFile := filepath.Join(t.TempDir(), "key")
	if err := os.WriteFile(keyFile, []byte(access+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, where, file string
		vars              map[string]string
	}{
		{name: "AMP_API_KEY", where: "AMP_API_KEY", vars: map[string]string{"AMP_API_KEY": access}},
		{name: "api_key_file", where: "api_key_file", file: keyFile},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clk := clock.NewFake(t0)
			k, err := FindKeyWith(KeyOptions{APIKeyFile: tc.file, URL: e.o.URL + "/",
				Env:          KeyEnv{Getenv: envOf(mergeVars(tc.vars, map[string]string{"XDG_DATA_HOME": e.data})), Home: t.TempDir()},
				RefreshLogin: true, OAuth: OAuthOptions{Now: clk.Now, Logger: e.logger(), Sleep: e.sleep}})
			if err != nil || k.Where != tc.where || k.OAuth() {
				t.Fatalf("%v %q oauth=%v", err, k.Where, k.OAuth())
			}
			clk.Advance(4 * time.Minute) // under 120 s left: a login would be refreshed
			if got, err := k.APIKey(context.Background()); err != nil || got != access {
				t.Fatalf("%v", err)
			}
			clk.Advance(2 * time.Minute) // expired
			_, err = k.APIKey(context.Background())
			if !errors.Is(err, ErrLoginExpired) || !strings.Contains(err.Error(), tc.where) || strings.Contains(err.Error(), access) {
				t.Fatalf("expired: %v", err)
			}
			if _, req, _ := e.o.Stats(); req != 0 {
				t.Fatalf("%d refresh requests", req)
			}
		})
	}
	e.noTokensLogged()
}

func envOf(vars map[string]string) func(string) string {
	return func(k string) string { return vars[k] }
}

func mergeVars(a, b map[string]string) map[string]string {
	out := map[string]string{}
	for k, v := range a {
		out[k] = v
	}
	for k, v := range b {
		out[k] = v
	}
	return out
}

// An access token (not a JWT) does not expire and is never refreshed.
func TestOAuthAccessTokenNotRefreshed(t *testing.T) {
	e := newOAuthEnv(t, time.Minute)
	m := e.file()
	m["apiKey@"+e.cliURL] = "sgamp_user_01ABCDEF"
	b, _ := json.Marshal(m)
	if err := os.WriteFile(e.secrets, b, 0o600); err != nil {
		t.Fatal(err)
	}
	k := e.mustKey(true)
	e.clk.Advance(24 * time.Hour)
	if got, err := k.APIKey(context.Background()); err != nil || got != "sgamp_user_01ABCDEF" || k.OAuth() {
		t.Fatalf("%q %v", got, err)
	}
	if _, req, _ := e.o.Stats(); req != 0 {
		t.Fatalf("%d refresh requests", req)
	}
}

func TestOAuthInvalidGrant(t *testing.T) {
	t.Run("rotated by another process", func(t *testing.T) {
		e := newOAuthEnv(t, time.Minute)
		k := e.mustKey(true)
		// Another CLI process refreshes after the exporter read the
		// login and before the issuer sees the exporter's request.
		var started atomic.Bool
		e.o.OnAuthenticate(func() {
			if started.CompareAndSwap(false, true) { // not for its own request
				if out := cliRefresh(e.secrets, e.cliURL, e.clk.Now); out != "refreshed" {
					t.Errorf("the other process: %s", out)
				}
			}
		})
		got, err := k.APIKey(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		stored, _ := e.stored()
		if got != stored {
			t.Fatal("not the access token the other process stored")
		}
		if rot, _, refused := e.o.Stats(); rot != 1 || refused != 1 {
			t.Fatalf("%d rotations, %d refused, want 1 and 1", rot, refused)
		}
		if s := e.log.String(); !strings.Contains(s, "refreshed by another process") || strings.Contains(s, "amp login") {
			t.Fatalf("log:\n%s", s)
		}
		e.checkFile()
		e.noTokensLogged()
	})
	t.Run("login gone", func(t *testing.T) {
		e := newOAuthEnv(t, time.Minute)
		k := e.mustKey(true)
		e.o.Revoke()
		before, rtBefore := e.stored()
		for i := 0; i < 3; i++ {
			if _, err := k.APIKey(context.Background()); !errors.Is(err, ErrLoginGone) {
				t.Fatalf("try %d: %v, want ErrLoginGone", i, err)
			}
		}
		if _, req, _ := e.o.Stats(); req != 1 {
			t.Fatalf("%d refresh requests, want 1 (a dead refresh token is not sent again)", req)
		}
		// The error says what to do; the sync logs it (once per refusal).
		if _, err := k.APIKey(context.Background()); err == nil || !strings.Contains(err.Error(), "run `amp login`") {
			t.Fatalf("error %v does not say to run amp login", err)
		}
		if after, rtAfter := e.stored(); after != before || rtAfter != rtBefore {
			t.Fatal("secrets.json changed")
		}
		// The user logs in again: followed without a restart.
		access, refresh := e.o.Login()
		m := e.file()
		m["apiKey@"+e.cliURL], m["oauth-refresh-token@"+e.cliURL] = access, refresh
		b, _ := json.Marshal(m)
		if err := os.WriteFile(e.secrets, b, 0o600); err != nil {
			t.Fatal(err)
		}
		if got, err := k.APIKey(context.Background()); err != nil || got == before {
			t.Fatalf("after amp login: %v", err)
		}
		e.noTokensLogged()
	})
}

func TestOAuthTransientFailuresRetried(t *testing.T) {
	e := newOAuthEnv(t, time.Minute)
	k := e.mustKey(true)
	e.o.FailRefresh(ampservertest.Fault{Status: 500}, ampservertest.Fault{Status: 429, RetryAfter: "30"})
	if _, err := k.APIKey(context.Background()); err != nil {
		t.Fatal(err)
	}
	if rot, req, _ := e.o.Stats(); rot != 1 || req != 3 {
		t.Fatalf("%d rotations in %d requests, want 1 in 3", rot, req)
	}
	// The pause where CLI processes refresh too (1 s), then the retries:
	// 1 s, then 2 s raised to Retry-After capped at 5 s; each plus < 0.5 s.
	if len(e.sleeps) != 3 || e.sleeps[0] != time.Second || e.sleeps[1] < time.Second || e.sleeps[1] >= 1500*time.Millisecond ||
		e.sleeps[2] < 5*time.Second || e.sleeps[2] >= 5500*time.Millisecond {
		t.Fatalf("waits %v", e.sleeps)
	}

	// Three failures: the still-valid token is used, and the next try
	// waits RetryFailedAfter instead of coming with every request.
	e.clk.Advance(59 * time.Second) // the new token has 1 s left
	e.o.FailRefresh(ampservertest.Fault{Status: 503}, ampservertest.Fault{Status: 503}, ampservertest.Fault{Status: 503})
	valid, _ := e.stored()
	if got, err := k.APIKey(context.Background()); err != nil || got != valid {
		t.Fatalf("valid token after failed refresh: %v", err)
	}
	if got, err := k.APIKey(context.Background()); err != nil || got != valid {
		t.Fatalf("second call: %v", err)
	}
	if _, req, _ := e.o.Stats(); req != 6 {
		t.Fatalf("%d requests, want 6 (no new try right after a failure)", req)
	}
	e.clk.Advance(2 * time.Second) // expired, still before the next try
	if _, err := k.APIKey(context.Background()); !errors.Is(err, ErrLoginExpired) || !errors.Is(err, ErrTransient) {
		t.Fatalf("expired during the pause: %v", err)
	}
	// To the sync that is a transient failure (retried at the next
	// interval), not a refused key (retried slowly).
	c, err := NewClient(Options{URL: e.o.URL + "/", Keys: k, Sleep: e.sleep, Retries: -1})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.GetUserInfo(context.Background()); !errors.Is(err, ErrTransient) || errors.Is(err, ErrAuth) {
		t.Fatalf("client: %v", err)
	}
	e.clk.Advance(30 * time.Second)
	if _, err := k.APIKey(context.Background()); err != nil {
		t.Fatalf("after the pause: %v", err)
	}
	if n := strings.Count(e.log.String(), "cannot refresh the Amp CLI login yet"); n != 1 {
		t.Fatalf("%d warnings, want 1:\n%s", n, e.log)
	}
	e.noTokensLogged()
}

// A key refused by the server is read again; when another process has
// stored a new login meanwhile, the request is repeated with it at once.
func TestClientRetriesWithReplacedKey(t *testing.T) {
	e := newOAuthEnv(t, 10*time.Minute)
	// The stored token is one the server refuses (its signature is not
	// the server's), as after a logout elsewhere.
	m := e.file()
	m["apiKey@"+e.cliURL] = fakeJWT(t0.Add(time.Hour))
	b, _ := json.Marshal(m)
	if err := os.WriteFile(e.secrets, b, 0o600); err != nil {
		t.Fatal(err)
	}
	k := e.mustKey(true)
	var once sync.Once
	tr := roundTrip(func(r *http.Request) (*http.Response, error) {
		// `amp login` elsewhere, after the exporter read the old key.
		once.Do(func() {
			access, refresh := e.o.Login()
			m := e.file()
			m["apiKey@"+e.cliURL], m["oauth-refresh-token@"+e.cliURL] = access, refresh
			b, _ := json.Marshal(m)
			if err := os.WriteFile(e.secrets, b, 0o600); err != nil {
				t.Error(err)
			}
		})
		return http.DefaultTransport.RoundTrip(r)
	})
	rec := &seqRecorder{}
	c, err := NewClient(Options{URL: e.o.URL + "/", Keys: k, Transport: tr, Sleep: e.sleep, OnRequest: rec.request})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.GetUserInfo(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := rec.codes(); got != "getUserInfo 401,getUserInfo 200" {
		t.Fatalf("requests %s", got)
	}
	// A refused key that nothing replaced is not retried.
	e.o.Revoke()
	m = e.file()
	m["apiKey@"+e.cliURL] = fakeJWT(t0.Add(time.Hour))
	b, _ = json.Marshal(m)
	if err := os.WriteFile(e.secrets, b, 0o600); err != nil {
		t.Fatal(err)
	}
	rec2 := &seqRecorder{}
	c2, _ := NewClient(Options{URL: e.o.URL + "/", Keys: k, Sleep: e.sleep, OnRequest: rec2.request})
	if _, err := c2.GetUserInfo(context.Background()); !errors.Is(err, ErrAuth) || rec2.codes() != "getUserInfo 401" {
		t.Fatalf("%v, requests %s", err, rec2.codes())
	}
}

// seqRecorder records requests in order.
type seqRecorder struct {
	mu  sync.Mutex
	seq []string
}

func (r *seqRecorder) request(method, code string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.seq = append(r.seq, method+" "+code)
}

func (r *seqRecorder) codes() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return strings.Join(r.seq, ",")
}

type roundTrip func(*http.Request) (*http.Response, error)

func (f roundTrip) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

func fakeJWT(exp time.Time) string {
	enc := base64.RawURLEncoding
	return enc.EncodeToString([]byte(`{"alg":"HS256"}`)) + "." +
		enc.EncodeToString([]byte(fmt.Sprintf(`{"exp":%d}`, exp.Unix()))) + "." + enc.EncodeToString([]byte("not-the-servers"))
}

func TestJWTExpiry(t *testing.T) {
	enc := base64.RawURLEncoding
	for _, tc := range []struct {
		key     string
		jwt, ok bool
		exp     int64
	}{
		{key: fakeJWT(time.Unix(1_800_000_000, 0)), jwt: true, ok: true, exp: 1_800_000_000},
		{key: "a." + enc.EncodeToString([]byte(`{"exp":1.5e9}`)) + ".c", jwt: true, ok: true, exp: 1_500_000_000},
		{key: "a." + enc.EncodeToString([]byte(`{"sub":"x"}`)) + ".c", jwt: true},
		{key: "a.!!.c"},
		{key: "sgamp_user_01"},
		{key: "a.b"},
	} {
		if isJWT(tc.key) != tc.jwt {
			t.Errorf("isJWT(%q) = %v", tc.key, !tc.jwt)
		}
		exp, ok := jwtExpiry(tc.key)
		if ok != tc.ok || (ok && exp.Unix() != tc.exp) {
			t.Errorf("jwtExpiry(%q) = %v %v", tc.key, exp, ok)
		}
	}
}

// cliRefresh is the Amp CLI's refresh procedure (0.0.1790142911), written
// from its bundle independently of Login: read the login fresh; not a JWT
// with a refresh token → "not-oauth"; more than 120 s left → "fresh";
// oauth-config; POST the refresh grant; on success write both entries in
// one atomic replace (its file store's setMany: a temporary directory
// beside the file, a write with mode 0600, a rename); on invalid_grant
// read the stored refresh token again: another one → "refreshed-elsewhere",
// else "failed" (re-login required); 429 and 5xx retried twice (waits
// left out here).
func cliRefresh(path, ampURL string, now func() time.Time) string {
	read := func() map[string]any {
		b, err := os.ReadFile(path)
		if err != nil {
			return nil
		}
		var m map[string]any
		_ = json.Unmarshal(b, &m)
		return m
	}
	m := read()
	access, _ := m["apiKey@"+ampURL].(string)
	rt, _ := m["oauth-refresh-token@"+ampURL].(string)
	if !isJWT(access) || rt == "" {
		return "not-oauth"
	}
	if exp, ok := jwtExpiry(access); ok && exp.Sub(now()) > 120*time.Second {
		return "fresh"
	}
	resp, err := http.Get(strings.TrimSuffix(ampURL, "/") + "/api/auth/oauth-config")
	if err != nil {
		return "failed"
	}
	var conf struct{ ClientID, APIURL string }
	_ = json.NewDecoder(resp.Body).Decode(&conf)
	resp.Body.Close()
	for s := 0; ; s++ {
		resp, err := http.PostForm(conf.APIURL+"/user_management/authenticate",
			url.Values{"grant_type": {"refresh_token"}, "refresh_token": {rt}, "client_id": {conf.ClientID}})
		if err != nil {
			return "failed"
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		var r struct {
			AccessToken  string `json:"access_token"`
			RefreshToken string `json:"refresh_token"`
			Error        string `json:"error"`
		}
		_ = json.Unmarshal(body, &r)
		if resp.StatusCode/100 == 2 {
			cur := read()
			cur["oauth-refresh-token@"+ampURL] = r.RefreshToken
			cur["apiKey@"+ampURL] = r.AccessToken
			out, _ := json.MarshalIndent(cur, "", "  ")
			dir, err := os.MkdirTemp(filepath.Dir(path), ".amp-temp-")
			if err != nil {
				return "failed"
			}
			defer os.RemoveAll(dir)
			tmp := filepath.Join(dir, filepath.Base(path))
			if os.WriteFile(tmp, out, 0o600) != nil || os.Rename(tmp, path) != nil {
				return "failed"
			}
			return "refreshed"
		}
		if r.Error == "invalid_grant" {
			if now, _ := read()["oauth-refresh-token@"+ampURL].(string); now != "" && now != rt {
				return "refreshed-elsewhere"
			}
			return "failed-invalid-grant"
		}
		if resp.StatusCode != 429 && resp.StatusCode < 500 || s >= 2 {
			return "failed"
		}
	}
}

// The race: the exporter syncs about once a minute while a CLI process,
// active all along, refreshes the same login in the same secrets.json at
// its own moments (every 5 to 25 s of a fake clock), concurrently with the
// syncs. Access tokens live 200 s: every sync, or the CLI, refreshes. Now
// and then a sync is late (as after a long sync), so that the exporter
// finds a token the CLI processes are refreshing too. Over more than 50
// rotations neither side loses the login and no sync fails twice in a row.
func TestOAuthRaceWithTheCLI(t *testing.T) {
	t.Parallel() // mostly waiting (the exporter pauses 100 ms for the CLI): alongside the other waiter
	e := newOAuthEnv(t, 200*time.Second)
	g := threadgen.New(threadgen.Options{Threads: 4, TotalBytes: 4 * 20_000, Seed: 5})
	if err := e.back.PutGenerated(g, 0, 4); err != nil {
		t.Fatal(err)
	}
	ids := e.back.IDs()
	k, err := FindKeyWith(KeyOptions{URL: e.o.URL + "/", Env: KeyEnv{Getenv: envOf(map[string]string{"XDG_DATA_HOME": e.data}), Home: t.TempDir()},
		RefreshLogin: true, OAuth: OAuthOptions{Now: e.clk.Now, Logger: e.logger(), Sleep: sleep, Pause: 100 * time.Millisecond}})
	if err != nil {
		t.Fatal(err)
	}
	c, err := NewClient(Options{URL: e.o.URL + "/", Keys: k, Sleep: func(context.Context, time.Duration) error { return nil }})
	if err != nil {
		t.Fatal(err)
	}
	owners := store.NewOwners()
	st := store.NewThreadStore(store.StoreOptions{Now: e.clk.Now})
	st.SetClaim(owners, store.SourceAmpServer)
	syncer := NewSyncer(c, SyncConfig{Interval: time.Minute, FullInterval: time.Hour, IncludeArchived: true,
		MaxConcurrency: 2, MaxThreadBytes: 64 << 20}, st, SyncOptions{Owners: owners, Logger: e.logger(), Clock: e.clk})
	rng := rand.New(rand.NewPCG(17, 4))
	outcomes := map[string]int{}
	syncs, failures, failedLast := 0, 0, false
	lastSync := e.clk.Now().Add(-time.Minute)
	for step := 0; step < 2000; step++ {
		if rot, _, _ := e.o.Stats(); rot >= 60 {
			break
		}
		e.clk.Advance(time.Duration(5+rng.IntN(21)) * time.Second)
		doSync := e.clk.Now().Sub(lastSync) >= time.Minute && rng.IntN(100) >= 20
		var wg sync.WaitGroup
		var out string
		wg.Add(1)
		go func() {
			defer wg.Done()
			out = cliRefresh(e.secrets, e.cliURL, e.clk.Now)
		}()
		var err error
		if doSync {
			if syncs%4 == 0 { // something to fetch now and then
				id := ids[syncs%len(ids)]
				var doc struct {
					Messages []json.RawMessage `json:"messages"`
				}
				if err := json.Unmarshal(e.back.Document(id), &doc); err != nil || len(doc.Messages) == 0 {
					t.Fatal(err)
				}
				e.back.AppendMessage(id, doc.Messages[len(doc.Messages)-1], e.clk.Now().UnixMilli())
			}
			_, err = syncer.Sync(context.Background())
		}
		wg.Wait()
		outcomes[out]++
		if strings.HasPrefix(out, "failed") {
			t.Fatalf("step %d: the CLI lost the login (%s)\n%s", step, out, e.log)
		}
		if !doSync {
			continue
		}
		syncs++
		lastSync = e.clk.Now()
		if err != nil {
			failures++
			if failedLast {
				t.Fatalf("sync %d failed, as did the one before: %v", syncs, err)
			}
		}
		failedLast = err != nil
	}
	rot, req, refused := e.o.Stats()
	t.Logf("%d rotations, %d refresh requests, %d invalid_grant; %d syncs, %d failed; CLI: %v", rot, req, refused, syncs, failures, outcomes)
	if rot < 50 {
		t.Fatalf("%d rotations, want at least 50", rot)
	}
	if outcomes["refreshed"] == 0 {
		t.Fatal("the CLI never refreshed: no race")
	}
	// Both still hold the login.
	e.clk.Advance(100 * time.Second)
	if _, err := c.GetUserInfo(context.Background()); err != nil {
		t.Fatalf("exporter after the race: %v", err)
	}
	e.clk.Advance(100 * time.Second)
	if out := cliRefresh(e.secrets, e.cliURL, e.clk.Now); out != "refreshed" {
		t.Fatalf("CLI after the race: %s", out)
	}
	e.checkFile()
	e.noTokensLogged()
	if strings.Contains(e.log.String(), "amp login") {
		t.Fatalf("the exporter gave the login up:\n%s", e.log)
	}
}

func TestTokenLike(t *testing.T) {
	for _, tc := range []struct {
		s  string
		ok bool
	}{
		{"eyJhbGciOiJIUzI1NiJ9.eyJleHAiOjF9.c2ln", true},
		{"rt_000001_ab", true},
		{"", false},
		{"a b", false},
		{"a\nb", false},
		{"é", false},
		{strings.Repeat("a", 16<<10+1), false},
	} {
		if got := tokenLike(tc.s); got != tc.ok {
			t.Errorf("tokenLike(%.20q) = %v", tc.s, got)
		}
	}
}

// Where secrets.json's folder cannot be written (a read-only mount of the
// CLI's data folder), a refresh would rotate the CLI's refresh token at
// the issuer and then fail to store the new one: the CLI's login would be
// gone. The exporter does not refresh there; it uses the stored token
// while it is valid and says why once.
func TestOAuthNoRefreshWhereSecretsCannotBeWritten(t *testing.T) {
	e := newOAuthEnv(t, 5*time.Minute)
	createTemp = func(dir, pattern string) (*os.File, error) {
		return nil, &os.PathError{Op: "open", Path: filepath.Join(dir, pattern), Err: errors.New("read-only file system")}
	}
	// Nor in place: the file is on the same read-only mount.
	openFile = func(name string, flag int, perm os.FileMode) (*os.File, error) {
		if flag&(os.O_WRONLY|os.O_RDWR) != 0 {
			return nil, &os.PathError{Op: "open", Path: name, Err: errors.New("read-only file system")}
		}
		return os.OpenFile(name, flag, perm)
	}
	t.Cleanup(func() { createTemp, openFile = os.CreateTemp, os.OpenFile })
	k := e.mustKey(true)
	before, rtBefore := e.stored()
	e.clk.Advance(3*time.Minute + time.Second) // under 120 s left
	got, err := k.APIKey(context.Background())
	if err != nil || got != before {
		t.Fatalf("valid token: %v (changed: %v)", err, got != before)
	}
	if _, req, _ := e.o.Stats(); req != 0 {
		t.Fatalf("%d refresh requests where the new tokens could not be stored", req)
	}
	if !strings.Contains(e.log.String(), "cannot write") {
		t.Errorf("no line says why the login is not refreshed:\n%s", e.log)
	}
	// The CLI's login is intact: once the folder can be written, the
	// stored refresh token still works.
	createTemp, openFile = os.CreateTemp, os.OpenFile
	e.clk.Advance(31 * time.Second)
	got, err = k.APIKey(context.Background())
	after, rtAfter := e.stored()
	if err != nil || got == before || got != after || rtAfter == rtBefore {
		t.Fatalf("refresh once writable: %v", err)
	}
	e.noTokensLogged()
}

// A CLI process that writes secrets.json while the exporter stores a
// refreshed login (after the exporter read the file, before its replace)
// keeps what it wrote: here a login to another server, which the CLI
// would otherwise find rotated at the issuer and gone from the file.
func TestOAuthRefreshKeepsAConcurrentCLIWrite(t *testing.T) {
	e := newOAuthEnv(t, time.Minute)
	const other = "apiKey@https://other.example/"
	writes := 0
	beforeReplace = func() {
		writes++
		if writes > 1 {
			return
		}
		m := e.file()
		m[other] = "sgamp_written_meanwhile"
		b, _ := json.MarshalIndent(m, "", "  ")
		tmp := e.secrets + ".cli"
		if err := os.WriteFile(tmp, b, 0o600); err != nil {
			t.Error(err)
		}
		if err := os.Rename(tmp, e.secrets); err != nil {
			t.Error(err)
		}
	}
	t.Cleanup(func() { beforeReplace = nil })
	got, err := e.mustKey(true).APIKey(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if rot, _, _ := e.o.Stats(); rot != 1 {
		t.Fatalf("%d rotations", rot)
	}
	if v, _ := e.file()[other].(string); v != "sgamp_written_meanwhile" {
		t.Fatalf("the entry the CLI wrote meanwhile is %q", v)
	}
	if access, _ := e.stored(); access != got {
		t.Fatal("the refreshed login is not stored")
	}
	// checkFile counts the entries: without the one added meanwhile.
	m := e.file()
	delete(m, other)
	b, _ := json.MarshalIndent(m, "", "  ")
	if err := os.WriteFile(e.secrets, b, 0o600); err != nil {
		t.Fatal(err)
	}
	e.checkFile()
}
