package config

import (
	"fmt"
	"net/url"
	"sort"
	"strings"
	"time"

	commoncfg "github.com/prometheus/common/config"
	"github.com/prometheus/common/model"
)

// RemoteWriteConfig is one Prometheus remote-write receiver the exporter
// pushes its metrics to (Prometheus with --web.enable-remote-write-receiver,
// Mimir, Thanos Receive, VictoriaMetrics). The HTTP client keys (basic_auth,
// authorization, bearer_token_file, oauth2, tls_config, proxy_url, …) are
// prometheus/common's HTTPClientConfig, spelled as in Prometheus's own
// remote_write.
type RemoteWriteConfig struct {
	URL RemoteURL `yaml:"url"`
	// Interval is how often the registry is gathered and pushed.
	Interval model.Duration `yaml:"interval"`
	// Timeout bounds one HTTP request (never more than Interval).
	Timeout model.Duration `yaml:"timeout"`
	// ExternalLabels identify this instance (e.g. user, host); required.
	ExternalLabels map[string]string `yaml:"external_labels"`
	// ProtobufMessage is the remote-write message sent, as Prometheus
	// spells it: prometheus.WriteRequest (1.0, the default) or
	// io.prometheus.write.v2.Request (2.0; falls back to 1.0 where the
	// receiver does not accept it).
	ProtobufMessage string `yaml:"protobuf_message"`

	HTTPClientConfig commoncfg.HTTPClientConfig `yaml:",inline"`
}

// RemoteURL is a receiver URL; /config shows it without its query values,
// which some receivers use for tokens.
type RemoteURL string

// MarshalYAML implements yaml.Marshaler.
func (u RemoteURL) MarshalYAML() (any, error) { return u.Redacted(), nil }

// Redacted is the URL with user info and query values replaced.
func (u RemoteURL) Redacted() string {
	p, err := url.Parse(string(u))
	if err != nil {
		return "<invalid url>"
	}
	if p.RawQuery != "" {
		q := p.Query()
		for k := range q {
			q[k] = []string{"<secret>"}
		}
		p.RawQuery = strings.ReplaceAll(q.Encode(), "%3Csecret%3E", "<secret>")
	}
	return p.Redacted()
}

// Remote-write messages (protobuf_message).
const (
	RemoteWriteMessageV1 = "prometheus.WriteRequest"
	RemoteWriteMessageV2 = "io.prometheus.write.v2.Request"
)

// Defaults of a remote_write entry.
const (
	DefaultRemoteWriteInterval = 30 * time.Second
	DefaultRemoteWriteTimeout  = 10 * time.Second
)

func (c *Config) resolveRemoteWrite(errs *[]string) {
	seen := map[string]bool{}
	for i := range c.RemoteWrite {
		rw := &c.RemoteWrite[i]
		where := fmt.Sprintf("remote_write[%d]", i)
		if p, err := url.Parse(string(rw.URL)); err != nil || (p.Scheme != "http" && p.Scheme != "https") || p.Host == "" {
			*errs = append(*errs, where+".url: want an http:// or https:// URL, e.g. https://prom.example.com/api/v1/write")
		} else if p.User != nil {
			*errs = append(*errs, where+".url: credentials do not belong in the URL; use basic_auth or authorization")
		} else if seen[string(rw.URL)] {
			*errs = append(*errs, where+".url: the same receiver is configured twice")
		}
		seen[string(rw.URL)] = true
		if rw.Interval == 0 {
			rw.Interval = model.Duration(DefaultRemoteWriteInterval)
		}
		if time.Duration(rw.Interval) < time.Second {
			*errs = append(*errs, where+".interval: use at least 1s")
		}
		if rw.Timeout == 0 {
			rw.Timeout = model.Duration(min(DefaultRemoteWriteTimeout, time.Duration(rw.Interval)))
		}
		if rw.Timeout < 0 || rw.Timeout > rw.Interval {
			*errs = append(*errs, fmt.Sprintf("%s.timeout: %s, must be positive and at most interval (%s)", where, rw.Timeout, rw.Interval))
		}
		switch rw.ProtobufMessage {
		case "":
			rw.ProtobufMessage = RemoteWriteMessageV1
		case RemoteWriteMessageV1, RemoteWriteMessageV2:
		default:
			*errs = append(*errs, fmt.Sprintf("%s.protobuf_message: %q, want %s or %s", where, rw.ProtobufMessage, RemoteWriteMessageV1, RemoteWriteMessageV2))
		}
		if len(rw.ExternalLabels) == 0 {
			*errs = append(*errs, where+".external_labels: required, e.g. {user: alice, host: laptop-7}: "+
				"without labels that tell this instance apart, two machines pushing to one receiver overwrite each other's series")
		}
		names := make([]string, 0, len(rw.ExternalLabels))
		for n := range rw.ExternalLabels {
			names = append(names, n)
		}
		sort.Strings(names)
		for _, n := range names {
			v := rw.ExternalLabels[n]
			switch {
			case !model.LegacyValidation.IsValidLabelName(n) || strings.HasPrefix(n, "__"):
				*errs = append(*errs, fmt.Sprintf("%s.external_labels: %q is not a label name (letters, digits, '_', not starting with a digit or '__')", where, n))
			case strings.TrimSpace(v) == "":
				*errs = append(*errs, fmt.Sprintf("%s.external_labels.%s: empty value", where, n))
			case len(v) > 256:
				*errs = append(*errs, fmt.Sprintf("%s.external_labels.%s: value longer than 256 bytes", where, n))
			}
		}
		if err := rw.HTTPClientConfig.Validate(); err != nil {
			*errs = append(*errs, fmt.Sprintf("%s: %v", where, err))
		}
	}
}
