package main

import (
	"bytes"
	"fmt"
	"testing"
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
