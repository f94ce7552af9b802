package config

import (
	"strings"
	"testing"
	"time"
)

func TestLedgerTimezone(t *testing.T) {
	tests := []struct {
		name, text string
		want       string // the zone's name; "" for an error
		err        string
	}{
		{"default", "", time.Local.String(), ""},
		{"local", "ledger:\n  timezone: Local\n", time.Local.String(), ""},
		{"named", "ledger:\n  timezone: Asia/Kathmandu\n", "Asia/Kathmandu", ""},
		{"utc", "ledger:\n  timezone: UTC\n", "UTC", ""},
		{"unknown", "ledger:\n  timezone: Mars/Olympus\n", "", `line 2: ledger.timezone: "Mars/Olympus" is not a time zone`},
		{"unknown key", "ledger:\n  zone: UTC\n", "", `unknown key "zone" in ledger`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := ""
			if tt.text != "" {
				path = writeConfig(t, tt.text)
			}
			cfg, err := Load(path, testEnv(nil))
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("error %v, want one with %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := cfg.Ledger.Location().String(); got != tt.want {
				t.Errorf("zone %q, want %q", got, tt.want)
			}
		})
	}
	// A configuration built without Load (tests, Default) still has a zone.
	if Default().Ledger.Location() != time.Local {
		t.Error("Default: the zone is not the machine's")
	}
}
