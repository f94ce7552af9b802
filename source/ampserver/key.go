package ampserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"time"

	"github.com/amp-exporter/amp-exporter/internal/amppaths"
	"github.com/amp-exporter/amp-exporter/internal/regfile"
)

// KeySource gives the client the API key for each request.
type KeySource interface {
	// APIKey returns the key to send now. For an OAuth login of the Amp
	// CLI it refreshes the login first when it is about to expire.
	APIKey(ctx context.Context) (string, error)
	// Refused is told that the server did not accept key. It reports
	// whether another key is available now (the stored login changed),
	// so that the request is worth repeating at once.
	Refused(key string) bool
}

// Key is where the API key comes from. It reads its source again on every
// call, so a rotated key or a new login is picked up. Where names the
// source for logs; it never holds the key.
type Key struct {
	Where string
	// Read returns the stored key, without refreshing anything.
	Read func() (string, error)
	// login is set when the key is the Amp CLI's login in secrets.json.
	login *Login
}

// APIKey implements KeySource.
func (k Key) APIKey(ctx context.Context) (string, error) {
	if k.login != nil {
		return k.login.APIKey(ctx)
	}
	return k.Read()
}

// Refused implements KeySource: the source is read again, and a key that
// changed since is worth a retry.
func (k Key) Refused(key string) bool {
	if k.login != nil {
		return k.login.Refused(key)
	}
	cur, err := k.Read()
	return err == nil && cur != key
}

// OAuth reports whether the key is an OAuth session of the Amp CLI that
// the exporter keeps valid (refresh_login).
func (k Key) OAuth() bool { return k.login != nil && k.login.refresh && k.login.isOAuth() }

// KeyEnv is what key discovery looks at.
type KeyEnv struct {
	Getenv func(string) string
	Home   string
}

// KeyOptions configures FindKeyWith.
type KeyOptions struct {
	// APIKeyFile is amp_server.api_key_file ("" for none).
	APIKeyFile string
	// URL is the Amp server's URL: the login in secrets.json is the one
	// stored for it (with or without its trailing slash).
	URL string
	Env KeyEnv
	// RefreshLogin lets the exporter refresh an OAuth login of the Amp
	// CLI found in secrets.json, as another CLI process would (it writes
	// secrets.json). A key from APIKeyFile or AMP_API_KEY is never
	// refreshed.
	RefreshLogin bool
	// OAuth configures the refresh requests.
	OAuth OAuthOptions
}

// secretsFiles are where the Amp CLI's login may be, in the order to try
// (per OS: internal/amppaths).
func secretsFiles(env KeyEnv) []string {
	return amppaths.SecretsFiles(amppaths.Env{Getenv: env.Getenv, Home: env.Home})
}

// maxKeyFile bounds a key file or secrets.json read.
const maxKeyFile = 1 << 20

// Errors of key discovery, matched with errors.Is.
var (
	// ErrNoKey says no key was found anywhere.
	ErrNoKey = errors.New("no Amp API key found")
	// ErrLoginExpired says the key is an OAuth session token that expired
	// and will not be refreshed here.
	ErrLoginExpired = errors.New("the Amp OAuth session token has expired")
	// ErrLoginGone says the OAuth login's refresh token is no longer
	// valid and no other process rotated it: run `amp login`.
	ErrLoginGone = errors.New("the Amp CLI login is no longer valid (its refresh token was refused and no other process had replaced it): run `amp login`, the exporter follows the new login by itself")
	// errNotRegular: a FIFO, device or directory where a file belongs.
	errNotRegular = regfile.ErrNotRegular
)

// FindKey looks for the key the way the Amp CLI does, with the exporter's
// own file first, and never refreshes a login (see FindKeyWith).
func FindKey(apiKeyFile, url string, env KeyEnv) (Key, error) {
	return FindKeyWith(KeyOptions{APIKeyFile: apiKeyFile, URL: url, Env: env})
}

// FindKeyWith looks for the key: APIKeyFile when set (it must be
// readable), else $AMP_API_KEY, else the CLI's secrets.json entry
// "apiKey@<url>". A secrets.json login that is an OAuth session is
// refreshed when o.RefreshLogin is set. Errors never contain the key.
func FindKeyWith(o KeyOptions) (Key, error) {
	o.OAuth.defaults()
	now := o.OAuth.Now
	if o.APIKeyFile != "" {
		f := o.APIKeyFile
		read := func() (string, error) { return staticKey("api_key_file", readKeyFile(f), now) }
		if _, err := read(); err != nil {
			return Key{}, err
		}
		return Key{Where: "api_key_file", Read: read}, nil
	}
	if k := strings.TrimSpace(o.Env.Getenv("AMP_API_KEY")); k != "" {
		read := func() (string, error) { return staticKey("AMP_API_KEY", func() (string, error) { return k, nil }, now) }
		if _, err := read(); err != nil {
			return Key{}, err
		}
		return Key{Where: "AMP_API_KEY", Read: read}, nil
	}
	// The first secrets.json that holds a key for url is the login; a file
	// that exists but cannot be read is an error worth saying.
	var firstErr error
	for _, secrets := range secretsFiles(o.Env) {
		_, err := readLogin(secrets, o.URL)
		switch {
		case err == nil:
			l := newLogin(secrets, o.URL, o.RefreshLogin, o.OAuth)
			return Key{Where: secrets, Read: l.stored, login: l}, nil
		case errors.Is(err, fs.ErrNotExist) || errors.Is(err, ErrNoKey):
		default:
			if firstErr == nil {
				firstErr = err
			}
		}
	}
	if firstErr != nil {
		return Key{}, firstErr
	}
	return Key{}, ErrNoKey
}

// staticKey reads a key the exporter never refreshes. An OAuth session
// token there works until it expires; after, the error says what to do.
func staticKey(where string, read func() (string, error), now func() time.Time) (string, error) {
	k, err := read()
	if err != nil {
		return "", err
	}
	if isJWT(k) {
		if exp, ok := jwtExpiry(k); ok && !now().Before(exp) {
			return "", fmt.Errorf("%s holds an OAuth session token, which expired at %s and is not refreshed from there: put an access token from the Amp settings page in amp_server.api_key_file: %w",
				where, exp.UTC().Format(time.RFC3339), ErrLoginExpired)
		}
	}
	return k, nil
}

func readKeyFile(path string) func() (string, error) {
	return func() (string, error) {
		b, err := regfile.ReadFile(path, maxKeyFile)
		if err != nil {
			return "", fmt.Errorf("api key file: %w", err)
		}
		k := strings.TrimSpace(string(b))
		if k == "" {
			return "", fmt.Errorf("api key file %q is empty", path)
		}
		return k, nil
	}
}

// secrets is the CLI's secrets.json: a flat JSON object of
// "<name>@<server url>" entries. Entries the exporter does not know are
// kept verbatim when it writes the file.
type secrets map[string]json.RawMessage

func readSecrets(path string) (secrets, error) {
	b, err := regfile.ReadFile(path, maxKeyFile)
	if err != nil {
		return nil, fmt.Errorf("amp secrets: %w", err)
	}
	return parseSecrets(path, b)
}

// parseSecrets decodes secrets.json's content b (read from path).
func parseSecrets(path string, b []byte) (secrets, error) {
	var m secrets
	if err := json.Unmarshal(b, &m); err != nil || m == nil {
		// The decoder's message could quote the file; say only where.
		return nil, fmt.Errorf("amp secrets %q: not a JSON object", path)
	}
	return m, nil
}

// str is the entry name@url as a non-empty string, "" otherwise.
func (m secrets) str(name, url string) string {
	var v string
	if raw, ok := m[name+"@"+url]; !ok || json.Unmarshal(raw, &v) != nil {
		return ""
	}
	return strings.TrimSpace(v)
}

// urlForms are the names a server URL can have in secrets.json: the CLI
// keeps a URL given by AMP_URL as typed, with or without its trailing
// slash, and the default one always with it.
func urlForms(url string) []string {
	trimmed := strings.TrimSuffix(url, "/")
	if trimmed == url {
		return []string{url, url + "/"}
	}
	return []string{url, trimmed}
}

// stored is one login as secrets.json holds it now.
type stored struct {
	url     string // the URL form the entries are stored under
	access  string // apiKey@url
	refresh string // oauth-refresh-token@url, "" when none
}

// readLogin reads the login stored for url.
func readLogin(path, url string) (stored, error) {
	m, err := readSecrets(path)
	if err != nil {
		return stored{}, err
	}
	for _, u := range urlForms(url) {
		if k := m.str("apiKey", u); k != "" {
			return stored{url: u, access: k, refresh: m.str("oauth-refresh-token", u)}, nil
		}
	}
	return stored{}, fmt.Errorf("%q has no key for %s: %w", path, url, ErrNoKey)
}
