package config

import (
	"fmt"
	"net/http"
	"net/url"
	"sort"
	"strings"
	"time"
	"unicode/utf8"

	commoncfg "github.com/prometheus/common/config"
	"github.com/prometheus/common/model"
	"golang.org/x/net/http/httpguts"
)

// OTLPConfig is one OpenTelemetry receiver the exporter pushes its metrics
// to over OTLP/HTTP (an OpenTelemetry Collector, a vendor's OTLP intake,
// Prometheus 3 with --web.enable-otlp-receiver). The HTTP client keys
// (basic_auth, authorization, oauth2, tls_config, proxy_url, http_headers,
// …) are prometheus/common's HTTPClientConfig, as in remote_write.
type OTLPConfig struct {
	// Endpoint is the full OTLP/HTTP metrics URL, …/v1/metrics.
	Endpoint RemoteURL `yaml:"endpoint"`
	// Interval is how often the registry is gathered and pushed.
	Interval model.Duration `yaml:"interval"`
	// Timeout bounds one HTTP request (never more than Interval).
	Timeout model.Duration `yaml:"timeout"`
	// ResourceAttributes identify this instance; service.name defaults to
	// amp-exporter and service.instance.id to the host name (applied when
	// the push starts, so /config shows what the file says).
	ResourceAttributes map[string]string `yaml:"resource_attributes"`
	// GenAINames also sends the token usage under the OpenTelemetry GenAI
	// semantic conventions' name, gen_ai.client.token.usage.
	GenAINames bool `yaml:"genai_names"`
	// HeadersEnv takes headers from environment variables: header name →
	// variable name. The values are read at load and never shown.
	HeadersEnv map[string]string `yaml:"headers_env"`

	HTTPClientConfig commoncfg.HTTPClientConfig `yaml:",inline"`

	headers map[string]string // HeadersEnv's values
}

// Headers are the headers taken from the environment (HeadersEnv), by
// header name.
func (c OTLPConfig) Headers() map[string]string { return c.headers }

// Defaults of an otlp entry (those of remote_write).
const (
	DefaultOTLPInterval = DefaultRemoteWriteInterval
	DefaultOTLPTimeout  = DefaultRemoteWriteTimeout
)

// otlpOwnHeaders are set by the exporter on every push.
var otlpOwnHeaders = map[string]bool{"Content-Type": true, "Content-Encoding": true, "Content-Length": true, "User-Agent": true, "Host": true}

func (c *Config) resolveOTLP(env Env, errs *[]string) {
	seen := map[string]bool{}
	for i := range c.OTLP {
		o := &c.OTLP[i]
		where := fmt.Sprintf("otlp[%d]", i)
		if p, err := url.Parse(string(o.Endpoint)); err != nil || (p.Scheme != "http" && p.Scheme != "https") || p.Host == "" {
			*errs = append(*errs, where+".endpoint: want an http:// or https:// URL, the receiver's full OTLP/HTTP metrics path, e.g. https://collector.example.com:4318/v1/metrics")
		} else if p.User != nil {
			*errs = append(*errs, where+".endpoint: credentials do not belong in the URL; use basic_auth, authorization or headers_env")
		} else if seen[string(o.Endpoint)] {
			*errs = append(*errs, where+".endpoint: the same receiver is configured twice")
		}
		seen[string(o.Endpoint)] = true
		if o.Interval == 0 {
			o.Interval = model.Duration(DefaultOTLPInterval)
		}
		if time.Duration(o.Interval) < time.Second {
			*errs = append(*errs, where+".interval: use at least 1s")
		}
		if o.Timeout == 0 {
			o.Timeout = model.Duration(min(DefaultOTLPTimeout, time.Duration(o.Interval)))
		}
		if o.Timeout < 0 || o.Timeout > o.Interval {
			*errs = append(*errs, fmt.Sprintf("%s.timeout: %s, must be positive and at most interval (%s)", where, o.Timeout, o.Interval))
		}
		for _, n := range sortedNames(o.ResourceAttributes) {
			v := o.ResourceAttributes[n]
			switch {
			case strings.TrimSpace(n) == "":
				*errs = append(*errs, where+".resource_attributes: an empty name")
			case !utf8.ValidString(n) || len(n) > 256:
				*errs = append(*errs, fmt.Sprintf("%s.resource_attributes: %q is not a name (valid UTF-8, at most 256 bytes)", where, n))
			case strings.TrimSpace(v) == "":
				*errs = append(*errs, fmt.Sprintf("%s.resource_attributes.%s: empty value", where, n))
			case !utf8.ValidString(v) || len(v) > 256:
				*errs = append(*errs, fmt.Sprintf("%s.resource_attributes.%s: value not valid UTF-8 or longer than 256 bytes", where, n))
			}
		}
		o.headers = nil
		for _, h := range sortedNames(o.HeadersEnv) {
			canon := http.CanonicalHeaderKey(h)
			switch {
			case !httpguts.ValidHeaderFieldName(h):
				*errs = append(*errs, fmt.Sprintf("%s.headers_env: %q is not a header name", where, h))
				continue
			case otlpOwnHeaders[canon]:
				*errs = append(*errs, fmt.Sprintf("%s.headers_env.%s: set by the exporter on every push", where, h))
				continue
			case canon == "Authorization" && (o.HTTPClientConfig.Authorization != nil || o.HTTPClientConfig.BasicAuth != nil ||
				o.HTTPClientConfig.OAuth2 != nil || o.HTTPClientConfig.BearerToken != "" || o.HTTPClientConfig.BearerTokenFile != ""):
				*errs = append(*errs, fmt.Sprintf("%s.headers_env.%s: also set by authorization, basic_auth, bearer_token or oauth2; keep one", where, h))
				continue
			}
			if o.HTTPClientConfig.HTTPHeaders != nil {
				dup := false
				for k := range o.HTTPClientConfig.HTTPHeaders.Headers {
					dup = dup || http.CanonicalHeaderKey(k) == canon
				}
				if dup {
					*errs = append(*errs, fmt.Sprintf("%s.headers_env.%s: also in http_headers; keep one", where, h))
					continue
				}
			}
			name := o.HeadersEnv[h]
			v := env.Getenv(name)
			if strings.TrimSpace(v) == "" {
				*errs = append(*errs, fmt.Sprintf("%s.headers_env.%s: the environment variable %s is not set (or empty)", where, h, name))
				continue
			}
			if !httpguts.ValidHeaderFieldValue(v) {
				*errs = append(*errs, fmt.Sprintf("%s.headers_env.%s: the environment variable %s holds characters a header cannot carry", where, h, name))
				continue
			}
			if o.headers == nil {
				o.headers = map[string]string{}
			}
			o.headers[canon] = v
		}
		if err := o.HTTPClientConfig.Validate(); err != nil {
			*errs = append(*errs, fmt.Sprintf("%s: %v", where, err))
		}
	}
}

func sortedNames(m map[string]string) []string {
	names := make([]string, 0, len(m))
	for n := range m {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}
