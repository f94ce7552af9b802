package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/amp-exporter/amp-exporter/internal/testsupport/threadgen"
)

// `report --exporter URL --json` prints, byte for byte, the report read
// from the sources directly: the exporter's ledger and the report's replay
// are one ledger, grouped by the same code, in every kind and zone.
func TestReportFromExporterEqualsReportRead(t *testing.T) {
	cfg := generatedThreads(t, 60)
	base := startExporter(t, cfg)
	for _, args := range [][]string{
		{"daily"}, {"monthly"}, {"session"},
		{"daily", "--timezone", "Asia/Kolkata"}, {"daily", "--timezone", "Asia/Kathmandu"},
		{"daily", "--timezone", "America/New_York", "--since", "2026-11-01", "--until", "20261110"},
	} {
		t.Run(fmt.Sprint(args), func(t *testing.T) {
			var direct, remote, errOut bytes.Buffer
			if code := run(append([]string{"report", "--json", "--cache-dir=", "--config.file=" + cfg}, args...), &direct, &errOut); code != 0 {
				t.Fatalf("direct: exit %d: %s", code, errOut.String())
			}
			if code := run(append([]string{"report", "--json", "--exporter", base}, args...), &remote, &errOut); code != 0 {
				t.Fatalf("--exporter: exit %d: %s", code, errOut.String())
			}
			if bytes.Count(direct.Bytes(), []byte(`"totalTokens"`)) < 3 {
				t.Fatalf("the direct report is nearly empty, proving nothing:\n%s", direct.String())
			}
			if !bytes.Equal(direct.Bytes(), remote.Bytes()) {
				t.Errorf("--exporter differs from the report read directly:\n--- direct\n%s\n--- exporter\n%s", head(direct.String()), head(remote.String()))
			}
		})
	}
	// No exporter there: one clear line, exit 1.
	var out, errOut bytes.Buffer
	if code := run([]string{"report", "--exporter", "http://127.0.0.1:1"}, &out, &errOut); code != 1 || !bytes.HasPrefix(errOut.Bytes(), []byte("amp-exporter report: exporter at http://127.0.0.1:1: ")) {
		t.Errorf("no exporter: exit %d, %q", code, errOut.String())
	}
}

// head is the first 3,000 bytes of s.
func head(s string) string {
	if len(s) > 3000 {
		return s[:3000] + "…"
	}
	return s
}

// A long thread (four hours a day for 90 days, beyond the exporter's
// bound): the exporter coarsens it within the days of its ledger.timezone,
// so `report daily --exporter` in that zone prints, byte for byte, the
// report read from the file (which keeps every quarter hour); in a zone
// whose midnights a coarsened hour crosses it warns which days may be off,
// and in its own zone it does not.
func TestReportFromExporterOfALongThread(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "threads")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	long := threadgen.Long{Start: time.Date(2025, 9, 20, 0, 0, 0, 0, time.UTC), Days: 90}
	if err := os.WriteFile(filepath.Join(dir, "T-long.json"), long.File("T-long"), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(t.TempDir(), "amp-exporter.yml")
	if err := os.WriteFile(cfg, []byte(fmt.Sprintf("threads:\n  dirs: [%q]\namp_server:\n  enabled: false\nledger:\n  timezone: Asia/Kathmandu\n", dir)), 0o644); err != nil {
		t.Fatal(err)
	}
	base := startExporter(t, cfg)
	var direct, remote, errDirect, errRemote bytes.Buffer
	args := []string{"report", "daily", "--json", "--timezone", "Asia/Kathmandu"}
	if code := run(append(args, "--cache-dir=", "--config.file="+cfg), &direct, &errDirect); code != 0 {
		t.Fatalf("direct: exit %d: %s", code, errDirect.String())
	}
	if code := run(append(args, "--exporter", base), &remote, &errRemote); code != 0 {
		t.Fatalf("--exporter: exit %d: %s", code, errRemote.String())
	}
	if n := bytes.Count(direct.Bytes(), []byte(`"date"`)); n != 90 {
		t.Fatalf("%d days in the direct report, want 90", n)
	}
	if !bytes.Equal(direct.Bytes(), remote.Bytes()) {
		t.Errorf("--exporter differs from the report read directly:\n--- direct\n%s\n--- exporter\n%s", head(direct.String()), head(remote.String()))
	}
	if strings.Contains(errRemote.String(), "may be off") {
		t.Errorf("a warning in the exporter's own zone: %s", errRemote.String())
	}
	// Marquesas (-09:30): its midnight is 09:30 UTC, inside Kathmandu's
	// hours (which start at a quarter past a UTC hour).
	var out, errOut bytes.Buffer
	if code := run([]string{"report", "daily", "--json", "--timezone", "Pacific/Marquesas", "--exporter", base}, &out, &errOut); code != 0 {
		t.Fatalf("exit %d: %s", code, errOut.String())
	}
	if !strings.Contains(errOut.String(), "may be off") || !strings.Contains(errOut.String(), "days=") {
		t.Errorf("no warning of the days that may be off: %q", errOut.String())
	}
}
