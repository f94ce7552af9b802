package api

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/amp-exporter/amp-exporter/internal/clock"
	ws "github.com/amp-exporter/amp-exporter/internal/testsupport/workspacetest"
)

// answers fetches one raw answer of each endpoint from a stand-in of 200
// members and 20,000 threads over a year: a page of 100 rows, a thread's
// usage, and the whole year of the rollup.
func answers(b *testing.B) map[string][]byte {
	b.Helper()
	s := ws.New(ws.Config{Users: 200, Threads: 20000, Days: 365}, ws.Options{})
	b.Cleanup(s.Close)
	c, err := New(Options{APIURL: s.URL, TokenURL: s.TokenURL(), ClientID: ws.ClientID, ClientSecret: ws.ClientSecret,
		Scopes: ws.ViewScopes, MaxRequestsPerMinute: 6000, Clock: clock.Real{}})
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	out := map[string][]byte{}
	for name, path := range map[string]string{
		EndpointThreads:     "/api/v2/threads?limit=100",
		EndpointThreadUsage: "/api/v2/threads/" + s.ThreadID(19990, 0) + "/usage",
		EndpointDailyUsage:  "/api/v2/workspace/analytics/daily-usage?lookbackDays=365",
	} {
		body, err := c.get(ctx, name, path, nil, MaxDailyBytes)
		if err != nil {
			b.Fatal(name, err)
		}
		out[name] = body
	}
	return out
}

// BenchmarkDecode decodes each answer leniently, and, as the baseline in
// the same run, with encoding/json into map[string]any (what a decoder
// that only parses would cost): compare the two per endpoint.
func BenchmarkDecode(b *testing.B) {
	bodies := answers(b)
	decode := map[string]func([]byte) error{
		EndpointThreads:     func(x []byte) error { _, _, err := DecodeThreadPage(x); return err },
		EndpointThreadUsage: func(x []byte) error { _, _, err := DecodeThreadUsage(x); return err },
		EndpointDailyUsage:  func(x []byte) error { _, _, err := DecodeDailyUsage(x); return err },
	}
	for _, e := range []string{EndpointThreads, EndpointThreadUsage, EndpointDailyUsage} {
		body := bodies[e]
		b.Run(e+"/lenient", func(b *testing.B) {
			b.SetBytes(int64(len(body)))
			b.ReportAllocs()
			for b.Loop() {
				if err := decode[e](body); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(e+"/baseline", func(b *testing.B) {
			b.SetBytes(int64(len(body)))
			b.ReportAllocs()
			for b.Loop() {
				var v map[string]any
				if err := json.Unmarshal(body, &v); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
