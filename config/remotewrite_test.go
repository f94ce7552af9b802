package config

import (
	"strings"
	"testing"
	"time"
)

func TestRemoteWriteSection(t *testing.T) {
	cfg, err := Load(writeConfig(t, `
remote_write:
  - url: https://prom.example.com/api/v1/write?token=abc123
    external_labels: {user: alice, host: laptop-7}
    basic_auth: {username: alice, password: hunter2}
    tls_config: {insecure_skip_verify: true}
    proxy_url: http://proxyuser:proxypass@proxy:3128
  - url: http://mimir:9009/api/v1/push
    interval: 1m
    timeout: 20s
    authorization: {credentials: tok3n}
    external_labels: {user: bob}
    protobuf_message: io.prometheus.write.v2.Request
`), testEnv(nil))
	if err != nil {
		t.Fatal(err)
	}
	a, b := cfg.RemoteWrite[0], cfg.RemoteWrite[1]
	if time.Duration(a.Interval) != 30*time.Second || time.Duration(a.Timeout) != 10*time.Second {
		t.Errorf("defaults: interval %s timeout %s", a.Interval, a.Timeout)
	}
	if a.ProtobufMessage != RemoteWriteMessageV1 || b.ProtobufMessage != RemoteWriteMessageV2 {
		t.Errorf("protobuf_message %q %q", a.ProtobufMessage, b.ProtobufMessage)
	}
	if time.Duration(b.Interval) != time.Minute || time.Duration(b.Timeout) != 20*time.Second || b.ExternalLabels["user"] != "bob" {
		t.Errorf("second entry %+v", b)
	}
	if a.HTTPClientConfig.BasicAuth == nil || string(a.HTTPClientConfig.BasicAuth.Password) != "hunter2" ||
		b.HTTPClientConfig.Authorization == nil || b.HTTPClientConfig.Authorization.Type != "Bearer" {
		t.Errorf("HTTP client settings not decoded: %+v %+v", a.HTTPClientConfig, b.HTTPClientConfig)
	}
	out := cfg.String()
	for _, secret := range []string{"hunter2", "tok3n", "abc123", "proxypass"} {
		if strings.Contains(out, secret) {
			t.Errorf("/config shows %q:\n%s", secret, out)
		}
	}
	for _, shown := range []string{"prom.example.com/api/v1/write", "user: alice", "insecure_skip_verify: true"} {
		if !strings.Contains(out, shown) {
			t.Errorf("/config lacks %q:\n%s", shown, out)
		}
	}
}

func TestRemoteWriteErrors(t *testing.T) {
	for _, tc := range []struct{ yaml, want string }{
		{"remote_write: [{url: 'https://p/w'}]", "remote_write[0].external_labels: required"},
		{"remote_write: [{url: 'https://p/w', external_labels: {}}]", "remote_write[0].external_labels: required"},
		{"remote_write: [{url: 'ftp://p/w', external_labels: {user: a}}]", "remote_write[0].url: want an http"},
		{"remote_write: [{url: 'https://u:p@p/w', external_labels: {user: a}}]", "credentials do not belong in the URL"},
		{"remote_write: [{url: 'https://p/w', external_labels: {user: a}}, {url: 'https://p/w', external_labels: {user: b}}]", "remote_write[1].url: the same receiver"},
		{"remote_write: [{url: 'https://p/w', interval: 10ms, external_labels: {user: a}}]", "remote_write[0].interval: use at least 1s"},
		{"remote_write: [{url: 'https://p/w', interval: 10s, timeout: 1m, external_labels: {user: a}}]", "remote_write[0].timeout"},
		{"remote_write: [{url: 'https://p/w', external_labels: {__user: a}}]", `"__user" is not a label name`},
		{"remote_write: [{url: 'https://p/w', external_labels: {user: ''}}]", "external_labels.user: empty value"},
		{"remote_write: [{url: 'https://p/w', external_labels: {user: a}, basic_auth: {username: a, password: b}, authorization: {credentials: c}}]", "remote_write[0]: at most one of basic_auth"},
		{"remote_write: [{url: 'https://p/w', external_labels: {user: a}, protobuf_message: v2}]", `remote_write[0].protobuf_message: "v2", want prometheus.WriteRequest or io.prometheus.write.v2.Request`},
		{"remote_write: [{url: 'https://p/w', external_labels: {user: a}, remote_timeout: 1s}]", `unknown key "remote_timeout" in a remote_write entry`},
	} {
		_, err := Load(writeConfig(t, tc.yaml), testEnv(nil))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s:\n got %v\nwant …%s…", tc.yaml, err, tc.want)
		}
	}
}
