package report

import (
	"context"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/amp-exporter/amp-exporter/ledger"
)

func TestLedgerURL(t *testing.T) {
	for _, c := range []struct{ in, want, err string }{
		{"http://localhost:9974", "http://localhost:9974/api/ledger", ""},
		{"http://localhost:9974/", "http://localhost:9974/api/ledger", ""},
		{"https://h.example/amp/", "https://h.example/amp/api/ledger", ""},
		{"http://h:1/api/ledger", "http://h:1/api/ledger", ""},
		{"localhost:9974", "", "is not an exporter's URL"},
		{"ftp://h/", "", "is not an exporter's URL"},
	} {
		got, err := LedgerURL(c.in)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%q: %q, %v; want an error with %q", c.in, got, err, c.err)
			}
			continue
		}
		if err != nil || got != c.want {
			t.Errorf("%q: %q, %v; want %q", c.in, got, err, c.want)
		}
	}
}

// The ledger comes back in Entries' order whatever order it was served
// in, with rows of the same key added; errors say what the exporter said
// and never the password in the URL.
func TestFetchLedger(t *testing.T) {
	tests := []struct {
		name, body string
		status     int
		entries    []Entry
		coarsened  []ledger.Span
		err        string
	}{
		{"rows", `{"version":1,"entries":[
			{"start":1800000900000,"session":"T-b","model":"m","input":2,"cost":5},
			{"start":1800000000000,"session":"T-a","model":"m","repository":"github.com/a/b","output":1},
			{"start":1800000900000,"session":"T-b","model":"m","input":3}],"bills":[]}`, 200,
			[]Entry{{Start: 1800000000000, Session: "T-a", Model: "m", Repo: "github.com/a/b", Usage: Usage{Output: 1}},
				{Start: 1800000900000, Session: "T-b", Model: "m", Usage: Usage{Input: 5, Cost: 5}}}, nil, ""},
		{"coarsened", `{"version":1,"entries":[],"bills":[],"coarsened":[{"start":1800000000000,"end":1800003600000}]}`, 200,
			nil, []ledger.Span{{Start: 1800000000000, End: 1800003600000}}, ""},
		{"version", `{"version":2,"entries":[]}`, 200, nil, nil, "version 2; this amp-exporter reads version 1"},
		{"not json", `<html>`, 200, nil, nil, "the ledger does not read"},
		{"old exporter", `404 page not found`, 404, nil, nil, "has no /api/ledger"},
		{"unauthorized", "Unauthorized\n", 401, nil, nil, "answered 401 Unauthorized: Unauthorized"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var auth string
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.URL.Path != LedgerPath {
					http.NotFound(w, r)
					return
				}
				auth = r.Header.Get("Authorization")
				w.WriteHeader(tt.status)
				_, _ = w.Write([]byte(tt.body))
			}))
			defer srv.Close()
			base := strings.Replace(srv.URL, "http://", "http://me:s3cret@", 1)
			l, _, err := FetchLedger(context.Background(), srv.Client(), base)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("error %v, want %q", err, tt.err)
				}
				if strings.Contains(err.Error(), "s3cret") {
					t.Errorf("the password is in the error: %v", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := l.Entries(); !reflect.DeepEqual(got, tt.entries) && (len(got) > 0 || len(tt.entries) > 0) {
				t.Errorf("entries %+v, want %+v", got, tt.entries)
			}
			if got := l.Coarsened(); !reflect.DeepEqual(got, tt.coarsened) {
				t.Errorf("coarsened %+v, want %+v", got, tt.coarsened)
			}
			if auth == "" {
				t.Error("the URL's user was not sent as basic auth")
			}
		})
	}
	// Nobody there: the error names the URL without its password.
	srv := httptest.NewServer(http.NotFoundHandler())
	url := strings.Replace(srv.URL, "http://", "http://me:s3cret@", 1)
	srv.Close()
	if _, _, err := FetchLedger(context.Background(), http.DefaultClient, url); err == nil || strings.Contains(err.Error(), "s3cret") {
		t.Errorf("error %v", err)
	}
}

func TestLeaveOutLater(t *testing.T) {
	now := time.UnixMilli(1_800_000_000_000 + 5*60_000) // 5 minutes into a bucket
	bucket := int64(1_800_000_000_000)
	in := []Entry{
		{Start: bucket - 900_000, Session: "a", Usage: Usage{Input: 1}},
		{Start: bucket, Session: "a", Usage: Usage{Input: 2}},           // holds now: kept
		{Start: bucket + 900_000, Session: "a", Usage: Usage{Input: 4}}, // after now
		{Start: Undated, Session: "b", Usage: Usage{Input: 8}},
	}
	kept, later := LeaveOutLater(in, now)
	if len(kept) != 3 || later.Input != 4 || kept[2].Start != Undated {
		t.Errorf("kept %+v, later %+v", kept, later)
	}
	if len(in) != 4 || in[2].Input != 4 {
		t.Errorf("the input was changed: %+v", in)
	}
}
