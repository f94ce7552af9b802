package config

import (
	"fmt"
	"net/url"
	"path/filepath"
	"strings"
	"time"

	promconfig "github.com/prometheus/common/config"
	"github.com/prometheus/common/model"
)

// DefaultAmpURL is the Amp server.
const DefaultAmpURL = "https://ampcode.com/"

// AmpServer's enabled values.
const (
	AmpServerAuto  = "auto"
	AmpServerOn    = "true"
	AmpServerOff   = "false"
	ampServerWhere = "amp_server"
)

// AmpServerConfig configures the Amp server source: the user's threads on
// ampcode.com, read with their own API key.
type AmpServerConfig struct {
	// Enabled is auto (on when an API key is found), true or false.
	Enabled string `yaml:"enabled"`
	// URL of the Amp server; empty means what the Amp CLI uses: $AMP_URL,
	// else amp.url in its managed settings, else in its settings file,
	// else DefaultAmpURL.
	URL string `yaml:"url"`
	// URLFrom says where URL came from (for the log line): "amp_server.url",
	// "AMP_URL", the CLI's settings file, or "default".
	URLFrom string `yaml:"-"`
	// APIKeyFile holds the key; empty means $AMP_API_KEY, else the Amp
	// CLI's secrets.json.
	APIKeyFile       string         `yaml:"api_key_file"`
	SyncInterval     model.Duration `yaml:"sync_interval"`
	FullSyncInterval model.Duration `yaml:"full_sync_interval"`
	IncludeArchived  bool           `yaml:"include_archived"`
	InstallationID   string         `yaml:"installation_id"`
	MaxConcurrency   int            `yaml:"max_concurrency"`
	// RefreshLogin: an OAuth login of the Amp CLI (a short-lived token and
	// a refresh token in its secrets.json) is refreshed the way another
	// CLI process would, writing secrets.json; false never writes it.
	RefreshLogin bool `yaml:"refresh_login"`
	// DayBillsHorizon is how far back a thread's bill per day is asked
	// (threadDisplayCostInfo with start and end, for the usage ledger's
	// billed USD per day): a day to a year.
	DayBillsHorizon model.Duration `yaml:"day_bills_horizon"`
	// HTTPClient holds proxy and TLS settings (prometheus/common's HTTP
	// client configuration); the key is set by the exporter, not here.
	HTTPClient promconfig.HTTPClientConfig `yaml:"http_client,omitempty"`
}

func init() { sectionOf["AmpServerConfig"] = "amp_server" }

// maxDayBillsHorizon bounds day_bills_horizon: a year of days, which is
// what the store keeps a thread's bills for.
const maxDayBillsHorizon = 366 * 24 * time.Hour

func defaultAmpServer() AmpServerConfig {
	return AmpServerConfig{
		Enabled:          AmpServerAuto,
		SyncInterval:     model.Duration(time.Minute),
		FullSyncInterval: model.Duration(6 * time.Hour),
		IncludeArchived:  true,
		MaxConcurrency:   4,
		RefreshLogin:     true,
		DayBillsHorizon:  model.Duration(35 * 24 * time.Hour),
		HTTPClient:       promconfig.HTTPClientConfig{EnableHTTP2: true, ProxyConfig: promconfig.ProxyConfig{ProxyFromEnvironment: true}},
	}
}

func (c *Config) resolveAmpServer(env Env, errs *[]string) {
	a := &c.AmpServer
	add := func(format string, args ...any) {
		*errs = append(*errs, ampServerWhere+"."+fmt.Sprintf(format, args...))
	}
	switch strings.ToLower(strings.TrimSpace(a.Enabled)) {
	case "", AmpServerAuto:
		a.Enabled = AmpServerAuto
	case "true", "yes", "on":
		a.Enabled = AmpServerOn
	case "false", "no", "off":
		a.Enabled = AmpServerOff
	default:
		add("enabled: %q, want auto, true or false", a.Enabled)
	}
	a.URLFrom = "amp_server.url"
	if a.URL == "" {
		a.URL, a.URLFrom = env.Getenv("AMP_URL"), "AMP_URL"
	}
	if a.URL == "" && a.Enabled != AmpServerOff {
		u, file, err := cliSettingsURL(env)
		if err != nil {
			add("url: cannot read the server URL from the Amp CLI's settings (amp.url): %v; fix the file, or set amp_server.url", err)
		}
		a.URL, a.URLFrom = u, file
	}
	if a.URL == "" {
		a.URL, a.URLFrom = DefaultAmpURL, "default"
	}
	if u, err := url.Parse(a.URL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		add("url: %q (from %s), want an http:// or https:// URL", a.URL, a.URLFrom)
	} else if u.User != nil {
		add("url: credentials do not belong in the URL; use api_key_file")
	} else if !strings.HasSuffix(a.URL, "/") {
		a.URL += "/" // the CLI's secrets.json keys end with the slash
	}
	if f := a.APIKeyFile; f != "" {
		if f == "~" || strings.HasPrefix(f, "~/") {
			f = filepath.Join(env.Home, strings.TrimPrefix(f, "~"))
		}
		if abs, err := filepath.Abs(f); err == nil {
			a.APIKeyFile = abs
		}
	}
	if d := time.Duration(a.SyncInterval); d < time.Second {
		add("sync_interval: %s is too short, use at least 1s", d)
	}
	if d := time.Duration(a.FullSyncInterval); d < time.Duration(a.SyncInterval) {
		add("full_sync_interval: %s is shorter than sync_interval", d)
	}
	if a.MaxConcurrency < 1 || a.MaxConcurrency > 32 {
		add("max_concurrency: %d, want 1 to 32", a.MaxConcurrency)
	}
	if d := time.Duration(a.DayBillsHorizon); d < 24*time.Hour || d > maxDayBillsHorizon {
		add("day_bills_horizon: %s, want 1d to 366d", d)
	}
	if len(a.InstallationID) > 128 || strings.ContainsAny(a.InstallationID, "\x00\r\n") {
		add("installation_id: not an installation id")
	}
	if err := a.HTTPClient.Validate(); err != nil {
		add("http_client: %v", err)
	}
}
