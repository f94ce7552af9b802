package statusline

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/amp-exporter/amp-exporter/internal/spend"
)

func f(v float64) *float64 { return &v }

func TestFormat(t *testing.T) {
	now := time.Date(2026, 12, 2, 9, 0, 0, 0, time.UTC)
	resets := now.Add(28*time.Hour + 10*time.Minute)
	base := spend.JSON{Version: 1, Today: spend.PeriodJSON{EstimatedUSD: 1.234}, Month: spend.PeriodJSON{EstimatedUSD: 1234.5}}
	tests := []struct {
		name  string
		mod   func(*spend.JSON)
		color bool
		want  string
	}{
		{"estimated", func(*spend.JSON) {}, false, "$1.23 today · $1,234.50 month"},
		{"billed", func(s *spend.JSON) { s.Today.BilledUSD, s.Month.BilledUSD = f(0.5), f(99) }, false, "$1.23 ($0.50 billed) today · $1,234.50 ($99.00 billed) month"},
		{"entitlement", func(s *spend.JSON) {
			s.Entitlement = &spend.EntitlementJSON{Window: "monthly", LimitUSD: f(20), RemainingUSD: f(7.5), ResetsAt: &resets}
		}, false, "$1.23 today · $1,234.50 month · $7.50 left (1d 4h)"},
		{"entitlement without a reset", func(s *spend.JSON) {
			s.Entitlement = &spend.EntitlementJSON{Window: "monthly", RemainingUSD: f(7.5)}
		}, false, "$1.23 today · $1,234.50 month · $7.50 left"},
		{"entitlement: only the share", func(s *spend.JSON) {
			s.Entitlement = &spend.EntitlementJSON{Window: "monthly", UsedRatio: f(0.855), ResetsAt: &resets}
		}, false, "$1.23 today · $1,234.50 month · 86% used (1d 4h)"},
		{"entitlement unknown", func(s *spend.JSON) { s.Entitlement = &spend.EntitlementJSON{Window: "monthly", LimitUSD: f(20)} }, false,
			"$1.23 today · $1,234.50 month"},
		{"runway: out before the reset", func(s *spend.JSON) {
			s.Entitlement = &spend.EntitlementJSON{Window: "monthly", LimitUSD: f(20), RemainingUSD: f(7.5), ResetsAt: &resets}
			out := now.Add(3 * time.Hour)
			s.Runway = &spend.RunwayJSON{USDPerHour: 2.5, RunsOutAt: out, BeforeReset: true}
		}, false, "$1.23 today · $1,234.50 month · $7.50 left (1d 4h) · out in ~3h at this pace"},
		{"runway: the reset first", func(s *spend.JSON) {
			soon := now.Add(2 * time.Hour)
			s.Entitlement = &spend.EntitlementJSON{Window: "daily", RemainingUSD: f(7.5), ResetsAt: &soon}
			s.Runway = &spend.RunwayJSON{USDPerHour: 2.5, RunsOutAt: now.Add(3 * time.Hour)}
		}, false, "$1.23 today · $1,234.50 month · $7.50 left (2h 0m) · lasts until the reset"},
		{"runway: read at the line's time", func(s *spend.JSON) {
			s.Entitlement = &spend.EntitlementJSON{RemainingUSD: f(7.5)}
			s.Runway = &spend.RunwayJSON{USDPerHour: 2.5, RunsOutAt: now.Add(40 * time.Minute), BeforeReset: true}
		}, false, "$1.23 today · $1,234.50 month · $7.50 left · out in ~40m at this pace"},
		{"runway, color", func(s *spend.JSON) {
			s.Entitlement = &spend.EntitlementJSON{RemainingUSD: f(7.5)}
			s.Runway = &spend.RunwayJSON{USDPerHour: 2.5, RunsOutAt: now.Add(3 * time.Hour), BeforeReset: true}
		}, true, "$1.23 \x1b[2mtoday\x1b[0m · $1,234.50 \x1b[2mmonth\x1b[0m · $7.50 \x1b[2mleft\x1b[0m · \x1b[33mout in ~3h at this pace\x1b[0m"},
		{"color, little left", func(s *spend.JSON) {
			s.Entitlement = &spend.EntitlementJSON{LimitUSD: f(20), RemainingUSD: f(2)}
		}, true, "$1.23 \x1b[2mtoday\x1b[0m · $1,234.50 \x1b[2mmonth\x1b[0m · \x1b[33m$2.00\x1b[0m \x1b[2mleft\x1b[0m"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := base
			tt.mod(&s)
			if got := Format(s, now, tt.color); got != tt.want {
				t.Errorf("got  %q\nwant %q", got, tt.want)
			}
		})
	}
}

func TestFetch(t *testing.T) {
	tests := []struct {
		name, body string
		status     int
		err        string
	}{
		{"ok", `{"version":1,"timezone":"UTC","today":{"from":"2026-12-02","estimated_usd":1.5},"month":{"from":"2026-12-01","estimated_usd":3}}`, 200, ""},
		{"version", `{"version":2}`, 200, "version 2"},
		{"status", `no`, 404, "404"},
		{"not json", `<html>`, 200, "invalid character"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.URL.Path != SpendPath {
					http.NotFound(w, r)
					return
				}
				w.WriteHeader(tt.status)
				_, _ = w.Write([]byte(tt.body))
			}))
			defer srv.Close()
			s, err := Fetch(context.Background(), srv.Client(), srv.URL+"/")
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("error %v, want %q", err, tt.err)
				}
				return
			}
			if err != nil || s.Today.EstimatedUSD != 1.5 || s.Month.EstimatedUSD != 3 {
				t.Fatalf("%+v %v", s, err)
			}
		})
	}
}
