package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/amp-exporter/amp-exporter/internal/app"
)

func TestFlags(t *testing.T) {
	var out, errOut bytes.Buffer
	if _, code, done := parseFlags([]string{"--version"}, &out, &errOut); !done || code != 0 {
		t.Fatalf("--version: done=%v code=%d", done, code)
	}
	if !strings.Contains(out.String()+errOut.String(), "amp-exporter, version") {
		t.Errorf("--version printed %q", out.String()+errOut.String())
	}
	if _, code, done := parseFlags([]string{"--no-such-flag"}, &out, &errOut); !done || code != 2 {
		t.Errorf("unknown flag: done=%v code=%d", done, code)
	}
	f, _, done := parseFlags(nil, &out, &errOut)
	if done || f.telemetryPath != "/metrics" || f.configFile != "" || f.storagePath != "" {
		t.Fatalf("defaults: %+v", f)
	}
	if got := (*f.web.WebListenAddresses)[0]; got != DefaultListenAddress {
		t.Errorf("default listen address %q", got)
	}
}

func TestConfigCheck(t *testing.T) {
	var out, errOut bytes.Buffer
	if code := run([]string{"--config.file=../../config.example.yaml", "--config.check"}, &out, &errOut); code != 0 {
		t.Fatalf("example config: exit %d: %s", code, errOut.String())
	}
	if !strings.Contains(out.String(), "configuration is valid") {
		t.Errorf("output %q", out.String())
	}
	out.Reset()
	errOut.Reset()
	if code := run([]string{"--config.file=/nonexistent/amp.yml", "--config.check"}, &out, &errOut); code != 1 {
		t.Fatalf("missing config: exit %d", code)
	}
	if !strings.Contains(errOut.String(), "/nonexistent/amp.yml") {
		t.Errorf("error does not name the file: %q", errOut.String())
	}
}

func TestMaxRequestsFlag(t *testing.T) {
	var out, errOut bytes.Buffer
	f, _, done := parseFlags(nil, &out, &errOut)
	if done || f.server.MaxRequests != app.DefaultMaxRequests || f.server.MaxConnections != app.DefaultMaxConnections {
		t.Fatalf("defaults: %+v", f.server)
	}
	f, _, done = parseFlags([]string{"--web.max-requests=0"}, &out, &errOut)
	if done || f.server.MaxRequests != 0 {
		t.Fatalf("--web.max-requests=0: %+v", f.server)
	}
}
