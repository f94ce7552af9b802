package config

import (
	"strings"
	"testing"
	"time"
)

func TestOTLPSection(t *testing.T) {
	cfg, err := Load(writeConfig(t, `
otlp:
  - endpoint: https://collector.example.com:4318/v1/metrics?api_key=abc123
    resource_attributes: {service.instance.id: laptop-7, user: alice, host: laptop-7}
    headers_env: {X-Api-Key: OTLP_KEY}
    basic_auth: {username: alice, password: hunter2}
    tls_config: {insecure_skip_verify: true}
    http_headers:
      X-Scope-OrgID: {values: [team-a]}
      X-Token: {secrets: [s3cr3t]}
  - endpoint: http://prometheus:9090/api/v1/otlp/v1/metrics
    interval: 1m
    timeout: 20s
    authorization: {credentials: tok3n}
    genai_names: true
`), testEnv(map[string]string{"OTLP_KEY": "envk3y"}))
	if err != nil {
		t.Fatal(err)
	}
	if len(cfg.OTLP) != 2 {
		t.Fatalf("%d otlp entries", len(cfg.OTLP))
	}
	a, b := cfg.OTLP[0], cfg.OTLP[1]
	if time.Duration(a.Interval) != 30*time.Second || time.Duration(a.Timeout) != 10*time.Second {
		t.Errorf("defaults: interval %s timeout %s", a.Interval, a.Timeout)
	}
	if time.Duration(b.Interval) != time.Minute || time.Duration(b.Timeout) != 20*time.Second || !b.GenAINames || a.GenAINames {
		t.Errorf("second entry %+v", b)
	}
	if a.ResourceAttributes["user"] != "alice" || a.ResourceAttributes["service.instance.id"] != "laptop-7" {
		t.Errorf("resource attributes %v", a.ResourceAttributes)
	}
	if h := a.Headers(); len(h) != 1 || h["X-Api-Key"] != "envk3y" {
		t.Errorf("headers from the environment %v", h)
	}
	if a.HTTPClientConfig.BasicAuth == nil || string(a.HTTPClientConfig.BasicAuth.Password) != "hunter2" ||
		b.HTTPClientConfig.Authorization == nil || b.HTTPClientConfig.Authorization.Type != "Bearer" {
		t.Errorf("HTTP client settings not decoded: %+v %+v", a.HTTPClientConfig, b.HTTPClientConfig)
	}
	out := cfg.String()
	for _, secret := range []string{"hunter2", "tok3n", "abc123", "s3cr3t", "envk3y"} {
		if strings.Contains(out, secret) {
			t.Errorf("/config shows %q:\n%s", secret, out)
		}
	}
	for _, shown := range []string{"collector.example.com:4318/v1/metrics", "user: alice", "X-Api-Key: OTLP_KEY", "team-a", "insecure_skip_verify: true"} {
		if !strings.Contains(out, shown) {
			t.Errorf("/config lacks %q:\n%s", shown, out)
		}
	}
}

func TestOTLPErrors(t *testing.T) {
	for _, tc := range []struct{ yaml, want string }{
		{"otlp: [{}]", "otlp[0].endpoint: want an http"},
		{"otlp: [{endpoint: 'grpc://c:4317'}]", "otlp[0].endpoint: want an http"},
		{"otlp: [{endpoint: 'https://u:p@c/v1/metrics'}]", "credentials do not belong in the URL"},
		{"otlp: [{endpoint: 'https://c/v1/metrics'}, {endpoint: 'https://c/v1/metrics'}]", "otlp[1].endpoint: the same receiver"},
		{"otlp: [{endpoint: 'https://c/v1/metrics', interval: 10ms}]", "otlp[0].interval: use at least 1s"},
		{"otlp: [{endpoint: 'https://c/v1/metrics', interval: 10s, timeout: 1m}]", "otlp[0].timeout"},
		{"otlp: [{endpoint: 'https://c/v1/metrics', resource_attributes: {user: ''}}]", "otlp[0].resource_attributes.user: empty value"},
		{"otlp: [{endpoint: 'https://c/v1/metrics', resource_attributes: {'': a}}]", "otlp[0].resource_attributes: an empty name"},
		{"otlp: [{endpoint: 'https://c/v1/metrics', headers_env: {X-Api-Key: NOPE}}]", "otlp[0].headers_env.X-Api-Key: the environment variable NOPE is not set"},
		{"otlp: [{endpoint: 'https://c/v1/metrics', headers_env: {'Bad Header': KEY}}]", `otlp[0].headers_env: "Bad Header" is not a header name`},
		{"otlp: [{endpoint: 'https://c/v1/metrics', headers_env: {Content-Encoding: KEY}}]", "otlp[0].headers_env.Content-Encoding: set by the exporter"},
		{"otlp: [{endpoint: 'https://c/v1/metrics', headers_env: {X-K: KEY}, http_headers: {x-k: {values: [a]}}}]", "otlp[0].headers_env.X-K: also in http_headers"},
		{"otlp: [{endpoint: 'https://c/v1/metrics', headers_env: {Authorization: KEY}, authorization: {credentials: c}}]", "otlp[0].headers_env.Authorization: also set by authorization"},
		{"otlp: [{endpoint: 'https://c/v1/metrics', basic_auth: {username: a, password: b}, authorization: {credentials: c}}]", "otlp[0]: at most one of basic_auth"},
		{"otlp: [{endpoint: 'https://c/v1/metrics', external_labels: {user: a}}]", `unknown key "external_labels" in an otlp entry`},
	} {
		_, err := Load(writeConfig(t, tc.yaml), testEnv(map[string]string{"KEY": "v"}))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s:\n got %v\nwant …%s…", tc.yaml, err, tc.want)
		}
	}
}
