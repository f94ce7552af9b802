package config

import (
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"

	promconfig "github.com/prometheus/common/config"
	"github.com/prometheus/common/model"
)

// client_auth values: how the client's id and secret reach the token
// endpoint (never both ways at once).
const (
	WorkspaceAuthBasic = "basic"
	WorkspaceAuthPost  = "post"
)

// user_label values.
const (
	WorkspaceUserID    = "id"
	WorkspaceUserEmail = "email"
	WorkspaceUserOff   = "off"
)

// Scope names of Amp's workspace API. A scope written without the
// "amp.api:" prefix gets ScopePrefix.
const (
	ScopePrefix          = "amp.api:workspace."
	ScopeThreadsMeta     = ScopePrefix + "threads.meta:view"
	ScopeThreadsContents = ScopePrefix + "threads.contents:view"
	ScopeAnalytics       = ScopePrefix + "analytics:view"
	ScopeMembers         = ScopePrefix + "members:view"
)

const workspaceWhere = "amp_workspace"

// WorkspaceConfig configures the workspace source: every thread of an Amp
// Enterprise workspace, read through Amp's workspace API with an OAuth2
// client-credentials application (docs/workspace.md).
type WorkspaceConfig struct {
	Enabled  bool   `yaml:"enabled"`
	APIURL   string `yaml:"api_url"`
	TokenURL string `yaml:"token_url"`
	ClientID string `yaml:"client_id"`
	// The secret comes from a file or an environment variable, never from
	// this file: the configuration is shown on /config.
	ClientSecretFile string `yaml:"client_secret_file"`
	ClientSecretEnv  string `yaml:"client_secret_env"`
	// ClientSecret is the secret's value, read at load; never rendered.
	ClientSecret Secret `yaml:"-"`
	// ClientAuth is basic (HTTP Basic) or post (in the form body).
	ClientAuth string `yaml:"client_auth"`
	// Resource is sent as resource= in the token request when set.
	Resource string `yaml:"resource"`
	// Scopes asked for; empty means the defaults (DefaultWorkspaceScopes).
	// Come back in full ("amp.api:workspace.…:view").
	Scopes    []string `yaml:"scopes"`
	UserLabel string   `yaml:"user_label"`
	// SyncInterval is how often the workspace is read.
	SyncInterval model.Duration `yaml:"sync_interval"`
	// HistoryDays is how far back the daily rollup is read on the first
	// run (1 to 365).
	HistoryDays int `yaml:"history_days"`
	// MaxRequestsPerMinute is the request budget of all endpoints
	// together.
	MaxRequestsPerMinute int `yaml:"max_requests_per_minute"`
	// PageSize is the listing's limit (1 to 100).
	PageSize      int                    `yaml:"page_size"`
	ListingParams WorkspaceListingParams `yaml:"listing_params"`
	// HTTPClient holds proxy and TLS settings; the token is set by the
	// exporter.
	HTTPClient promconfig.HTTPClientConfig `yaml:"http_client,omitempty"`
}

// WorkspaceListingParams are the names of the listing's query parameters
// that no first-hand source settles. An empty Sort sends no sort.
type WorkspaceListingParams struct {
	Cursor string `yaml:"cursor"`
	After  string `yaml:"after"`
	Before string `yaml:"before"`
	Sort   string `yaml:"sort"`
}

func init() {
	sectionOf["WorkspaceConfig"] = workspaceWhere
	sectionOf["WorkspaceListingParams"] = workspaceWhere + ".listing_params"
}

// DefaultWorkspaceScopes are asked for when scopes is empty; user_label:
// email adds ScopeMembers.
var DefaultWorkspaceScopes = []string{ScopeThreadsMeta, ScopeThreadsContents, ScopeAnalytics}

func defaultWorkspace() WorkspaceConfig {
	return WorkspaceConfig{
		APIURL:               "https://ampcode.com",
		TokenURL:             "https://auth.ampcode.com/oauth2/token",
		ClientAuth:           WorkspaceAuthBasic,
		UserLabel:            WorkspaceUserID,
		SyncInterval:         model.Duration(5 * time.Minute),
		HistoryDays:          365,
		MaxRequestsPerMinute: 120,
		PageSize:             100,
		ListingParams:        WorkspaceListingParams{Cursor: "cursor", After: "after", Before: "before", Sort: "sort"},
		HTTPClient:           promconfig.HTTPClientConfig{EnableHTTP2: true, ProxyConfig: promconfig.ProxyConfig{ProxyFromEnvironment: true}},
	}
}

var queryParamName = regexp.MustCompile(`^[A-Za-z0-9_.\-\[\]]{1,64}$`)

// maxSecretBytes bounds the secret file: a secret is short, and a wrong
// path (a log, a disk image) must not be read whole.
const maxSecretBytes = 64 << 10

func (c *Config) resolveWorkspace(env Env, errs *[]string) {
	w := &c.Workspace
	add := func(format string, args ...any) {
		*errs = append(*errs, workspaceWhere+fmt.Sprintf(format, args...))
	}
	checkURL := func(key, v string) {
		if u, err := url.Parse(v); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			add(".%s: %q, want an http:// or https:// URL", key, v)
		} else if u.User != nil {
			add(".%s: credentials do not belong in the URL", key)
		}
	}
	checkURL("api_url", w.APIURL)
	w.APIURL = strings.TrimRight(w.APIURL, "/")
	checkURL("token_url", w.TokenURL)
	if u, err := url.Parse(w.TokenURL); err == nil && strings.HasPrefix(u.Path, "/api/v2/") {
		add(".token_url: %q is under /api/v2/, where only GET is ever sent", w.TokenURL)
	}
	if w.Resource != "" {
		checkURL("resource", w.Resource)
	}
	w.ClientAuth = strings.ToLower(strings.TrimSpace(w.ClientAuth))
	if w.ClientAuth != WorkspaceAuthBasic && w.ClientAuth != WorkspaceAuthPost {
		add(".client_auth: %q, want basic or post", w.ClientAuth)
	}
	w.UserLabel = strings.ToLower(strings.TrimSpace(w.UserLabel))
	if w.UserLabel != WorkspaceUserID && w.UserLabel != WorkspaceUserEmail && w.UserLabel != WorkspaceUserOff {
		add(".user_label: %q, want id, email or off", w.UserLabel)
	}
	w.resolveScopes(add)
	if d := time.Duration(w.SyncInterval); d < 10*time.Second {
		add(".sync_interval: %s is too short, use at least 10s", d)
	}
	if w.HistoryDays < 1 || w.HistoryDays > 365 {
		add(".history_days: %d, want 1 to 365", w.HistoryDays)
	}
	if w.MaxRequestsPerMinute < 1 || w.MaxRequestsPerMinute > 6000 {
		add(".max_requests_per_minute: %d, want 1 to 6000", w.MaxRequestsPerMinute)
	}
	if w.PageSize < 1 || w.PageSize > 100 {
		add(".page_size: %d, want 1 to 100", w.PageSize)
	}
	p := w.ListingParams
	for _, f := range []struct{ key, v string }{{"cursor", p.Cursor}, {"after", p.After}, {"before", p.Before}, {"sort", p.Sort}} {
		if (f.v != "" || f.key != "sort") && !queryParamName.MatchString(f.v) {
			add(".listing_params.%s: %q is not a query parameter name", f.key, f.v)
		}
	}
	if err := w.HTTPClient.Validate(); err != nil {
		add(".http_client: %v", err)
	}
	// Credentials are needed when the source runs, and read whenever they
	// are configured (for `amp-exporter workspace check`).
	if !w.Enabled && w.ClientID == "" && w.ClientSecretFile == "" && w.ClientSecretEnv == "" {
		return
	}
	if strings.TrimSpace(w.ClientID) == "" {
		add(".client_id: required (the application's client id)")
	} else if len(w.ClientID) > 256 || strings.ContainsAny(w.ClientID, "\x00\r\n:") {
		add(".client_id: not a client id")
	}
	w.ClientSecret = ""
	switch {
	case w.ClientSecretFile != "" && w.ClientSecretEnv != "":
		add(": set client_secret_file or client_secret_env, not both")
	case w.ClientSecretFile != "":
		f := w.ClientSecretFile
		if f == "~" || strings.HasPrefix(f, "~/") {
			f = filepath.Join(env.Home, strings.TrimPrefix(f, "~"))
		}
		if abs, err := filepath.Abs(f); err == nil {
			w.ClientSecretFile = abs
		}
		s, err := readSecretFile(w.ClientSecretFile)
		switch {
		case err != nil:
			add(".client_secret_file: cannot read it: %v", err)
		case s == "":
			add(".client_secret_file: %q is empty", w.ClientSecretFile)
		}
		w.ClientSecret = Secret(s)
	case w.ClientSecretEnv != "":
		s := strings.TrimSpace(env.Getenv(w.ClientSecretEnv))
		if s == "" {
			add(".client_secret_env: the environment variable %q is empty or not set", w.ClientSecretEnv)
		}
		w.ClientSecret = Secret(s)
	default:
		add(": set client_secret_file or client_secret_env (the secret is never written in this file)")
	}
}

// resolveScopes expands short scope names and refuses any but :view ones.
func (w *WorkspaceConfig) resolveScopes(add func(string, ...any)) {
	explicit := len(w.Scopes) > 0
	if !explicit {
		w.Scopes = slices.Clone(DefaultWorkspaceScopes)
		if w.UserLabel == WorkspaceUserEmail {
			w.Scopes = append(w.Scopes, ScopeMembers)
		}
	}
	out := make([]string, 0, len(w.Scopes))
	for _, s := range w.Scopes {
		s = strings.TrimSpace(s)
		if !strings.HasPrefix(s, "amp.api:") {
			s = ScopePrefix + s
		}
		switch {
		case strings.HasSuffix(s, ":manage"):
			add(".scopes: %q is a manage scope; the exporter only reads (:view scopes)", s)
		case !strings.HasSuffix(s, ":view") || strings.ContainsAny(s, " \t\r\n\""):
			add(".scopes: %q is not a :view scope", s)
		}
		if !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	w.Scopes = out
	if explicit && w.UserLabel == WorkspaceUserEmail && !slices.Contains(out, ScopeMembers) {
		add(".user_label: email needs the scope %s", ScopeMembers)
	}
}

func readSecretFile(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxSecretBytes+1))
	if err != nil {
		return "", err
	}
	if len(b) > maxSecretBytes {
		return "", fmt.Errorf("more than %d bytes: not a secret", maxSecretBytes)
	}
	return strings.TrimSpace(string(b)), nil
}
