package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// reportConfig is a configuration reading the parser fixture usage-era.json
// and nothing else (no Amp server).
func reportConfig(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	data, err := os.ReadFile(filepath.Join("..", "..", "parser", "thread", "testdata", "usage-era.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "T-1.json"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(t.TempDir(), "amp.yml")
	if err := os.WriteFile(cfg, []byte("threads:\n  dirs: ["+dir+"]\namp_server:\n  enabled: false\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return cfg
}

// TestReportCommand: `report session --json` prints the thread of the
// fixture; the daily report is the default; flags take ccusage's short
// names; a bad zone or date is one clear error, exit 1.
func TestReportCommand(t *testing.T) {
	cfg := reportConfig(t)
	var out, errOut bytes.Buffer
	if code := run([]string{"report", "session", "-j", "-z", "Asia/Kolkata", "--config.file=" + cfg}, &out, &errOut); code != 0 {
		t.Fatalf("exit %d: %s", code, errOut.String())
	}
	var r struct {
		Sessions []struct {
			SessionID   string `json:"sessionId"`
			TotalTokens int64  `json:"totalTokens"`
		} `json:"sessions"`
	}
	if err := json.Unmarshal(out.Bytes(), &r); err != nil {
		t.Fatalf("%v: %s", err, out.String())
	}
	if len(r.Sessions) != 1 || r.Sessions[0].SessionID != "T-019c4811-2a5e-7c3d-8e21-5b6f0a9d4c11" || r.Sessions[0].TotalTokens == 0 {
		t.Errorf("sessions %+v", r.Sessions)
	}

	out.Reset()
	if code := run([]string{"report", "--config.file=" + cfg}, &out, &errOut); code != 0 {
		t.Fatalf("exit %d: %s", code, errOut.String())
	}
	if !strings.HasPrefix(out.String(), "Date ") || !strings.Contains(out.String(), "\nTotal ") {
		t.Errorf("the default report is not the daily table:\n%s", out.String())
	}
	if strings.Contains(out.String(), "\x1b[") {
		t.Errorf("color on a buffer:\n%q", out.String())
	}
	// ccusage's --offline is accepted; --color forces color.
	out.Reset()
	if code := run([]string{"report", "monthly", "--offline", "--color", "--config.file=" + cfg}, &out, &errOut); code != 0 {
		t.Fatalf("exit %d: %s", code, errOut.String())
	}
	if !strings.Contains(out.String(), "\x1b[33mTotal") {
		t.Errorf("--color: no color:\n%q", out.String())
	}

	// ccusage's --compact, --no-cost and --config are accepted: the
	// table without its cache columns and dollars; ccusage's
	// configuration file is said to be unread.
	out.Reset()
	errOut.Reset()
	ccusageCfg := filepath.Join(t.TempDir(), "ccusage.json")
	if code := run([]string{"report", "daily", "--compact", "--no-cost", "--config", ccusageCfg, "--config.file=" + cfg}, &out, &errOut); code != 0 {
		t.Fatalf("exit %d: %s", code, errOut.String())
	}
	if head, _, _ := strings.Cut(out.String(), "\n"); !strings.HasPrefix(head, "Date ") || strings.Contains(head, "Cache") || strings.Contains(out.String(), "$") {
		t.Errorf("--compact --no-cost:\n%s", out.String())
	}
	if !strings.Contains(errOut.String(), "--config") {
		t.Errorf("no word on ccusage's --config: %q", errOut.String())
	}

	for _, args := range [][]string{{"--timezone", "Mars/Olympus"}, {"--since", "2026-13-01"}, {"--since", "20260301", "--until", "20260201"}} {
		errOut.Reset()
		if code := run(append([]string{"report", "daily", "--config.file=" + cfg}, args...), &out, &errOut); code != 1 {
			t.Errorf("%v: exit %d, want 1", args, code)
		}
		if !strings.HasPrefix(errOut.String(), "amp-exporter report: ") || strings.Count(errOut.String(), "\n") != 1 {
			t.Errorf("%v: error output %q, want one line", args, errOut.String())
		}
	}
}
