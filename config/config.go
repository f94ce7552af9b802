// Package config loads amp-exporter's YAML configuration: strictly (an
// unknown key is an error naming the key and the file), defaults first, then
// validation with messages that say what to change.
package config

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/common/model"
	"gopkg.in/yaml.v3"

	"github.com/amp-exporter/amp-exporter/internal/amppaths"
)

// Config is the whole configuration file.
type Config struct {
	Threads ThreadsConfig `yaml:"threads"`
	Streams StreamsConfig `yaml:"streams"`
	Amy     []AmyUpstream `yaml:"amy"`
	Pricing PricingConfig `yaml:"pricing"`
	Limits  LimitsConfig  `yaml:"limits"`
	// RemoteWrite lists the receivers the metrics are pushed to (remotewrite.go).
	RemoteWrite []RemoteWriteConfig `yaml:"remote_write"`
	// OTLP lists the OpenTelemetry receivers the metrics are pushed to
	// (otlp.go).
	OTLP []OTLPConfig `yaml:"otlp"`

	// AmpServer: the user's threads on the Amp server (ampserver.go).
	AmpServer AmpServerConfig `yaml:"amp_server"`

	// Labels and Repositories: the repository label (repositories.go).
	Labels       LabelsConfig     `yaml:"labels"`
	Repositories []RepositoryRule `yaml:"repositories"`

	// Ledger: the zone the spend is shown in (ledger.go).
	Ledger LedgerConfig `yaml:"ledger"`
}

// AmyUpstream is one Amy API whose turn event streams are followed.
type AmyUpstream struct {
	// Name is the `upstream` label.
	Name    string `yaml:"name"`
	BaseURL string `yaml:"base_url"`
	// APIKey may be written as ${ENV_VAR}; APIKeyFile is read at every
	// connection, so a rotated key is picked up without a reload.
	APIKey     Secret   `yaml:"api_key"`
	APIKeyFile string   `yaml:"api_key_file"`
	Turns      []string `yaml:"turns"`
	Proxy      AmyProxy `yaml:"proxy"`
	// IdleTimeout reconnects a stream silent for this long (keepalive
	// comments count as activity).
	IdleTimeout model.Duration `yaml:"idle_timeout"`
	// TurnTimeout gives up a turn that has not ended this long after it
	// was first followed.
	TurnTimeout model.Duration `yaml:"turn_timeout"`
}

// AmyProxy configures the reverse-proxy tap in front of an Amy API.
type AmyProxy struct {
	ListenAddress string `yaml:"listen_address"`
	// WebConfigFile is an exporter-toolkit web config (TLS, client
	// certificates) for the proxy's listener; empty: plain HTTP.
	WebConfigFile string `yaml:"web_config_file"`
}

// Secret is a credential: never printed, never logged.
type Secret string

// String keeps the secret out of %v and %s.
func (s Secret) String() string {
	if s == "" {
		return ""
	}
	return "<secret>"
}

// LogValue keeps the secret out of structured logs.
func (s Secret) LogValue() slog.Value { return slog.StringValue(s.String()) }

// MarshalYAML implements yaml.Marshaler: a set secret renders as <secret>.
func (s Secret) MarshalYAML() (any, error) {
	if s == "" {
		return "", nil
	}
	return "<secret>", nil
}

// PricingConfig chooses the price table behind amp_cost_usd_total.
type PricingConfig struct {
	// File is a LiteLLM model_prices_and_context_window.json; empty means
	// the embedded table.
	File string `yaml:"file"`
	// Models override the table per model, in USD per million tokens.
	Models map[string]ModelPrice `yaml:"models"`
}

// ModelPrice is a per-model override; a cache price left out is charged at
// the input price.
type ModelPrice struct {
	Input         *float64 `yaml:"input"`
	Output        *float64 `yaml:"output"`
	CacheRead     *float64 `yaml:"cache_read"`
	CacheCreation *float64 `yaml:"cache_creation"`
}

// StreamsConfig configures the Amp --stream-json source.
type StreamsConfig struct {
	// Dirs are directories of *.jsonl captures, tailed.
	Dirs         []string       `yaml:"dirs"`
	PollInterval model.Duration `yaml:"poll_interval"`
	MaxLineBytes ByteSize       `yaml:"max_line_bytes"`
	Ingest       IngestConfig   `yaml:"ingest"`
}

// IngestConfig configures POST /api/v1/ingest/stream-json.
type IngestConfig struct {
	Enabled      bool     `yaml:"enabled"`
	MaxBodyBytes ByteSize `yaml:"max_body_bytes"`
	// MaxConcurrentRequests caps the ingest requests served at once.
	MaxConcurrentRequests int `yaml:"max_concurrent_requests"`
	// ReadTimeout ends a request whose body is silent this long.
	ReadTimeout model.Duration `yaml:"read_timeout"`
}

// ThreadsConfig configures the Amp thread-file source.
type ThreadsConfig struct {
	// Dirs are the thread directories; empty means the default directory
	// (DefaultThreadsDir).
	Dirs           []string       `yaml:"dirs"`
	ResyncInterval model.Duration `yaml:"resync_interval"`
	PollInterval   model.Duration `yaml:"poll_interval"`
}

// LimitsConfig bounds what data can cost the exporter.
type LimitsConfig struct {
	MaxLabelValues int      `yaml:"max_label_values"`
	MaxFileBytes   ByteSize `yaml:"max_file_bytes"`
}

// Default returns the configuration used when no file is given, and the
// base every file is decoded onto.
func Default() *Config {
	return &Config{
		Threads: ThreadsConfig{
			ResyncInterval: model.Duration(5 * time.Minute),
			PollInterval:   model.Duration(time.Second),
		},
		Streams: StreamsConfig{
			PollInterval: model.Duration(500 * time.Millisecond),
			MaxLineBytes: 16 << 20,
			Ingest: IngestConfig{Enabled: true, MaxBodyBytes: 1 << 30,
				MaxConcurrentRequests: 4, ReadTimeout: model.Duration(2 * time.Minute)},
		},
		Limits: LimitsConfig{
			MaxLabelValues: 100,
			MaxFileBytes:   64 << 20,
		},
		AmpServer: defaultAmpServer(),
		Labels:    LabelsConfig{Repository: true},
	}
}

// Env is the environment the defaults are resolved from (os.Getenv and the
// home directory in production; fixed values in tests).
type Env struct {
	Getenv func(string) string
	Home   string
}

// OSEnv reads the process environment.
func OSEnv() Env {
	home, _ := os.UserHomeDir()
	return Env{Getenv: os.Getenv, Home: home}
}

// DefaultThreadsDir is where Amp keeps threads: $AMP_THREADS_DIR, else
// $XDG_DATA_HOME/amp/threads, else ~/.local/share/amp/threads (the first of
// DefaultThreadsDirs).
func DefaultThreadsDir(env Env) string {
	return DefaultThreadsDirs(env)[0]
}

// DefaultThreadsDirs are the thread directories watched when none is
// configured; on macOS and Windows ~/.local/share/amp/threads too, where
// the Amp CLI's platform switch puts data (internal/amppaths).
func DefaultThreadsDirs(env Env) []string {
	return amppaths.ThreadDirs(amppaths.Env{Getenv: env.Getenv, Home: env.Home})
}

// Load reads and validates the file at path; an empty path gives the
// defaults. Thread directories come back absolute and cleaned, with the
// default directory filled in when none is configured.
func Load(path string, env Env) (*Config, error) {
	cfg := Default()
	var doc *document
	if path != "" {
		data, err := os.ReadFile(path)
		if err != nil {
			return nil, fmt.Errorf("read config: %w", err)
		}
		if doc, err = decodeFile(data, cfg); err != nil {
			return nil, fmt.Errorf("config file %q: %w", path, err)
		}
	}
	if err := cfg.resolve(env); err != nil {
		if ve := (*validationErrors)(nil); errors.As(err, &ve) {
			ve.doc = doc // each message gets the line of its key
		}
		if path == "" {
			return nil, err
		}
		return nil, fmt.Errorf("config file %q: %w", path, err)
	}
	return cfg, nil
}

var unknownField = regexp.MustCompile(`line (\d+): field (\S+) not found in type config\.(\w+)`)

var sectionOf = map[string]string{
	"Config":        "the top level",
	"ThreadsConfig": "threads",
	"StreamsConfig": "streams",
	"IngestConfig":  "streams.ingest",
	"PricingConfig": "pricing",
	"AmyUpstream":   "an amy entry",
	"AmyProxy":      "an amy entry's proxy",
	"ModelPrice":    "a pricing.models entry",
	"LimitsConfig":  "limits",
	// remote_write (remotewrite.go)
	"RemoteWriteConfig": "a remote_write entry",
	// otlp (otlp.go)
	"OTLPConfig": "an otlp entry",
	// labels, repositories (repositories.go)
	"LabelsConfig":   "labels",
	"RepositoryRule": "a repositories entry",
	// ledger (ledger.go)
	"LedgerConfig": "ledger",
}

func decode(data []byte, cfg *Config, doc *document) error {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(cfg); err != nil {
		if errors.Is(err, io.EOF) {
			return nil // an empty file: all defaults
		}
		var te *yaml.TypeError
		if errors.As(err, &te) {
			msgs := make([]string, len(te.Errors))
			for i, m := range te.Errors {
				if g := unknownField.FindStringSubmatch(m); g != nil {
					m = fmt.Sprintf("line %s: unknown key %q in %s", g[1], g[2], sectionOf[g[3]])
				}
				m = doc.nameKey(m)
				msgs[i] = m
			}
			return errors.New(strings.Join(msgs, "; "))
		}
		return err
	}
	return nil
}

func (c *Config) resolve(env Env) error {
	var errs []string
	if len(c.Threads.Dirs) == 0 {
		c.Threads.Dirs = DefaultThreadsDirs(env)
	}
	c.Threads.Dirs = resolveDirs("threads.dirs", c.Threads.Dirs, env, &errs)
	c.Streams.Dirs = resolveDirs("streams.dirs", c.Streams.Dirs, env, &errs)
	if d := time.Duration(c.Streams.PollInterval); d < 50*time.Millisecond {
		errs = append(errs, fmt.Sprintf("streams.poll_interval: %s is too short, use at least 50ms", d))
	}
	if c.Streams.MaxLineBytes < 1024 {
		errs = append(errs, fmt.Sprintf("streams.max_line_bytes: %d bytes, must be at least 1KiB", c.Streams.MaxLineBytes))
	}
	if c.Streams.Ingest.MaxBodyBytes < c.Streams.MaxLineBytes {
		errs = append(errs, "streams.ingest.max_body_bytes must be at least streams.max_line_bytes")
	}
	if c.Streams.Ingest.MaxConcurrentRequests < 1 {
		errs = append(errs, fmt.Sprintf("streams.ingest.max_concurrent_requests: %d, must be at least 1", c.Streams.Ingest.MaxConcurrentRequests))
	}
	if d := time.Duration(c.Streams.Ingest.ReadTimeout); d < time.Second {
		errs = append(errs, fmt.Sprintf("streams.ingest.read_timeout: %s is too short, use at least 1s", d))
	}
	c.resolveAmy(env, &errs)
	c.resolveRemoteWrite(&errs)
	c.resolveOTLP(env, &errs)
	c.resolveAmpServer(env, &errs)
	c.resolveRepositories(&errs)
	c.resolveLedger(&errs)
	if f := c.Pricing.File; f != "" {
		if f == "~" || strings.HasPrefix(f, "~/") {
			f = filepath.Join(env.Home, strings.TrimPrefix(f, "~"))
		}
		if abs, err := filepath.Abs(f); err == nil {
			c.Pricing.File = abs
		}
	}
	for model, p := range c.Pricing.Models {
		if p.Input == nil || p.Output == nil {
			errs = append(errs, fmt.Sprintf("pricing.models[%q]: input and output are required (USD per million tokens)", model))
			continue
		}
		for name, v := range map[string]*float64{"input": p.Input, "output": p.Output, "cache_read": p.CacheRead, "cache_creation": p.CacheCreation} {
			if v != nil && (*v < 0 || *v > 1e6) {
				errs = append(errs, fmt.Sprintf("pricing.models[%q].%s: %v is not a price in USD per million tokens", model, name, *v))
			}
		}
	}
	if d := time.Duration(c.Threads.ResyncInterval); d < time.Second {
		errs = append(errs, fmt.Sprintf("threads.resync_interval: %s is too short, use at least 1s", d))
	}
	if d := time.Duration(c.Threads.PollInterval); d < 100*time.Millisecond {
		errs = append(errs, fmt.Sprintf("threads.poll_interval: %s is too short, use at least 100ms", d))
	}
	if c.Limits.MaxLabelValues < 1 {
		errs = append(errs, fmt.Sprintf("limits.max_label_values: %d, must be at least 1", c.Limits.MaxLabelValues))
	}
	if c.Limits.MaxFileBytes < 1024 {
		errs = append(errs, fmt.Sprintf("limits.max_file_bytes: %d bytes, must be at least 1KiB", c.Limits.MaxFileBytes))
	}
	if len(errs) > 0 {
		return &validationErrors{msgs: errs}
	}
	return nil
}

var upstreamName = regexp.MustCompile(`^[a-zA-Z0-9_.-]{1,64}$`)

func (c *Config) resolveAmy(env Env, errs *[]string) {
	seenNames := map[string]bool{}
	seenListen := map[string]bool{}
	for i := range c.Amy {
		u := &c.Amy[i]
		where := fmt.Sprintf("amy[%d]", i)
		if u.Name != "" {
			where = fmt.Sprintf("amy[%q]", u.Name)
		}
		if !upstreamName.MatchString(u.Name) {
			*errs = append(*errs, where+".name: required, letters, digits, '_', '.', '-' (it is the upstream label)")
		} else if seenNames[u.Name] {
			*errs = append(*errs, where+".name: used twice")
		}
		seenNames[u.Name] = true
		if parsed, err := url.Parse(u.BaseURL); err != nil || (parsed.Scheme != "http" && parsed.Scheme != "https") || parsed.Host == "" {
			*errs = append(*errs, where+".base_url: want an http:// or https:// URL")
		} else if parsed.User != nil {
			*errs = append(*errs, where+".base_url: credentials do not belong in the URL; use api_key or api_key_file")
		}
		// ${VAR} in api_key comes from the environment, so the file can be
		// committed without the key.
		u.APIKey = Secret(os.Expand(string(u.APIKey), env.Getenv))
		if u.APIKey != "" && u.APIKeyFile != "" {
			*errs = append(*errs, where+": set api_key or api_key_file, not both")
		}
		if u.APIKeyFile != "" {
			if abs, err := filepath.Abs(u.APIKeyFile); err == nil {
				u.APIKeyFile = abs
			}
		}
		for _, t := range u.Turns {
			if strings.TrimSpace(t) == "" || strings.ContainsAny(t, "/?#") || len(t) > 256 {
				*errs = append(*errs, fmt.Sprintf("%s.turns: %q is not a turn id", where, t))
			}
		}
		if a := u.Proxy.ListenAddress; a != "" {
			if seenListen[a] {
				*errs = append(*errs, where+".proxy.listen_address: used twice")
			}
			seenListen[a] = true
		}
		if f := u.Proxy.WebConfigFile; f != "" {
			if abs, err := filepath.Abs(f); err == nil {
				u.Proxy.WebConfigFile = abs
			}
		}
		if u.IdleTimeout == 0 {
			u.IdleTimeout = model.Duration(time.Minute)
		}
		if u.TurnTimeout == 0 {
			u.TurnTimeout = model.Duration(2 * time.Hour)
		}
		if time.Duration(u.IdleTimeout) < time.Second {
			*errs = append(*errs, where+".idle_timeout: use at least 1s")
		}
		if time.Duration(u.TurnTimeout) < time.Minute {
			*errs = append(*errs, where+".turn_timeout: use at least 1m")
		}
	}
}

// resolveDirs expands "~/", makes paths absolute and drops repeats.
func resolveDirs(key string, in []string, env Env, errs *[]string) []string {
	seen := map[string]bool{}
	var dirs []string
	for _, d := range in {
		if strings.TrimSpace(d) == "" {
			*errs = append(*errs, key+": an entry is empty")
			continue
		}
		if d == "~" || strings.HasPrefix(d, "~/") {
			d = filepath.Join(env.Home, strings.TrimPrefix(d, "~"))
		}
		abs, err := filepath.Abs(d)
		if err != nil {
			*errs = append(*errs, fmt.Sprintf("%s: %q: %v", key, d, err))
			continue
		}
		if !seen[abs] {
			seen[abs] = true
			dirs = append(dirs, abs)
		}
	}
	return dirs
}

// String renders the configuration as YAML, as the exporter sees it.
func (c *Config) String() string {
	b, err := yaml.Marshal(c)
	if err != nil {
		return fmt.Sprintf("<cannot render config: %v>", err)
	}
	return string(b)
}

// ByteSize is a size in bytes written as a number or with a unit: B, KB, MB,
// GB (powers of 1000) or KiB, MiB, GiB (powers of 1024).
type ByteSize int64

var sizeUnits = map[string]int64{
	"": 1, "b": 1,
	"kb": 1000, "mb": 1000 * 1000, "gb": 1000 * 1000 * 1000,
	"kib": 1 << 10, "mib": 1 << 20, "gib": 1 << 30,
}

var sizePattern = regexp.MustCompile(`^\s*(\d+(?:\.\d+)?)\s*([A-Za-z]*)\s*$`)

// ParseByteSize parses "64MiB", "500MB", "1048576".
func ParseByteSize(s string) (ByteSize, error) {
	g := sizePattern.FindStringSubmatch(s)
	if g == nil {
		return 0, fmt.Errorf("invalid size %q: want a number with an optional unit (KiB, MiB, GiB, KB, MB, GB)", s)
	}
	unit, ok := sizeUnits[strings.ToLower(g[2])]
	if !ok {
		return 0, fmt.Errorf("invalid size %q: unknown unit %q (use KiB, MiB, GiB, KB, MB or GB)", s, g[2])
	}
	n, err := strconv.ParseFloat(g[1], 64)
	if err != nil || n*float64(unit) > 1<<62 {
		return 0, fmt.Errorf("invalid size %q", s)
	}
	return ByteSize(n * float64(unit)), nil
}

// UnmarshalYAML implements yaml.Unmarshaler.
func (b *ByteSize) UnmarshalYAML(node *yaml.Node) error {
	v, err := ParseByteSize(node.Value)
	if err != nil {
		return fmt.Errorf("line %d: %w", node.Line, err)
	}
	*b = v
	return nil
}

// MarshalYAML implements yaml.Marshaler, in the largest exact binary unit.
func (b ByteSize) MarshalYAML() (any, error) {
	for _, u := range []struct {
		name string
		n    int64
	}{{"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}} {
		if int64(b) >= u.n && int64(b)%u.n == 0 {
			return fmt.Sprintf("%d%s", int64(b)/u.n, u.name), nil
		}
	}
	return int64(b), nil
}
