package app

import (
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/amp-exporter/amp-exporter/internal/spend"
	"github.com/amp-exporter/amp-exporter/internal/statusline"
	"github.com/amp-exporter/amp-exporter/internal/testsupport/ampservertest"
	"github.com/amp-exporter/amp-exporter/internal/testsupport/testutil"
)

// The runway on the landing page and in the statusline, from a server
// stand-in's entitlement and a thread it serves: 1,000,000 output tokens
// of claude-sonnet-4-5 (21 USD estimated at the default prices, 10.50 USD
// billed) spent `ago` before now. Spent a minute ago, that is the last 6
// hours' 1.75 USD/h billed (the lower rate: the last 15 minutes' is about
// 42), so 10.50 USD last 6 hours; spent an hour ago, nothing is being
// spent and no runway is shown.
func TestRunwayFromTheServerEntitlement(t *testing.T) {
	tests := []struct {
		name      string
		ago       time.Duration
		resetsIn  int // seconds
		wantLine  string
		wantPage  string
		wantShown bool
	}{
		{"out before the reset", time.Minute, 36000, " · $10.50 left (10h 0m) · out in ~6h at this pace",
			`<p id="spend-runway">$10.50 left · <strong>out in ~6h at this pace</strong> ($1.75/h`, true},
		{"the reset comes first", time.Minute, 7200, " · $10.50 left (2h 0m) · lasts until the reset",
			`<p id="spend-runway">$10.50 left · lasts until the reset ($1.75/h`, true},
		{"nothing spent lately", time.Hour, 36000, " · $10.50 left (10h 0m)", "", false},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			const key = "sgamp_right_key_0123456789"
			srv := ampservertest.New(key, "dev@example.com")
			defer srv.Close()
			at := time.Now().Add(-tt.ago).UTC()
			id := threadID(100 + i)
			doc := fmt.Sprintf(`{"v":1,"id":%q,"created":%d,"agentMode":"smart","messages":[
 {"role":"user","messageId":0,"createdAt":%q,"content":[{"type":"text","text":"hi"}]},
 {"role":"assistant","messageId":1,"createdAt":%q,"content":[{"type":"text","text":"ok"}],
  "state":{"type":"complete","stopReason":"end_turn"},
  "usage":{"model":"claude-sonnet-4-5","inputTokens":0,"outputTokens":1000000}}]}`,
				id, at.UnixMilli(), at.Format(time.RFC3339Nano), at.Format(time.RFC3339Nano))
			if _, err := srv.Put([]byte(doc), at.UnixMilli()); err != nil {
				t.Fatal(err)
			}
			srv.SetCost(id, map[string]any{
				"title": "x", "totalCostUSD": 10.5,
				"entitlement": map[string]any{"limitUSD": 20.0, "remainingUSD": 10.5, "percentUsed": 47.5, "windowPeriod": "daily", "windowResetsInSeconds": tt.resetsIn},
			})
			keyFile := filepath.Join(t.TempDir(), "amp-key")
			if err := os.WriteFile(keyFile, []byte(key), 0o600); err != nil {
				t.Fatal(err)
			}
			a := buildTestApp(t, fmt.Sprintf("ledger:\n  timezone: UTC\namp_server:\n  enabled: true\n  url: %s\n  api_key_file: %q\n  sync_interval: 1h\n", srv.URL, keyFile), "")
			h := a.web.Handler // Run wraps it
			a.run()
			get := func(path string) *httptest.ResponseRecorder {
				rec := httptest.NewRecorder()
				h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "http://127.0.0.1:9974"+path, nil))
				return rec
			}
			var j spend.JSON
			testutil.WaitUntil(t, "the thread priced, its day billed and the entitlement read", func() bool {
				j = spend.JSON{}
				return json.Unmarshal(get(SpendPath).Body.Bytes(), &j) == nil && j.Last7.EstimatedUSD > 0 && j.Last7.BilledUSD != nil && *j.Last7.BilledUSD > 0 && j.Entitlement != nil
			})
			if j.Last7.EstimatedUSD != 21 || *j.Last7.BilledUSD != 10.5 {
				t.Fatalf("last 7 days %v USD estimated, %v billed; want 21 (1,000,000 output tokens of claude-sonnet-4-5) and 10.5", j.Last7.EstimatedUSD, *j.Last7.BilledUSD)
			}
			if (j.Runway != nil) != tt.wantShown {
				t.Fatalf("runway %+v, want shown %v (entitlement %+v)", j.Runway, tt.wantShown, j.Entitlement)
			}
			if tt.wantShown && math.Abs(j.Runway.USDPerHour-1.75) > 1e-9 {
				t.Errorf("pace %v USD/h, want 1.75 (billed)", j.Runway.USDPerHour)
			}
			line := statusline.Format(j, time.Now(), false)
			if !strings.HasSuffix(line, tt.wantLine) {
				t.Errorf("statusline %q, want it to end in %q", line, tt.wantLine)
			}

			page := get("/").Body.String()
			if tt.wantPage == "" {
				if strings.Contains(page, "spend-runway") {
					t.Errorf("a runway on the page while nothing is spent")
				}
			} else if !strings.Contains(page, tt.wantPage) {
				i := strings.Index(page, "spend-entitlement")
				t.Errorf("landing page: no %q near\n%s", tt.wantPage, page[max(0, i-20):min(len(page), i+600)])
			}
		})
	}
}
