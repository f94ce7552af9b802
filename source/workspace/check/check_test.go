package check

import (
	"bytes"
	"context"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	ws "github.com/amp-exporter/amp-exporter/internal/testsupport/workspacetest"
	"github.com/amp-exporter/amp-exporter/source/workspace/api"
)

var update = flag.Bool("update", false, "rewrite the golden files of testdata")

var defaultScopes = []string{ws.ScopeThreadsMeta, ws.ScopeThreadsContents, ws.ScopeAnalytics}

// TestCheckGolden runs the check against the stand-in in several of its
// switch settings and compares the output with testdata/<case>.golden
// (go test -update rewrites them; read the diff before committing it).
func TestCheckGolden(t *testing.T) {
	for _, tc := range []struct {
		name      string
		shape     ws.Options
		grant     []string // nil: the stand-in's default
		auth      string
		scopes    []string
		countable bool
	}{
		{name: "basic", countable: true},
		{name: "post", shape: ws.Options{ClientAuth: ws.AuthPost}, auth: api.AuthPost, countable: true},
		{name: "basic_to_post_only", shape: ws.Options{ClientAuth: ws.AuthPost}, auth: api.AuthBasic},
		{name: "post_to_basic_only", shape: ws.Options{ClientAuth: ws.AuthBasic}, auth: api.AuthPost},
		{name: "no_contents_scope", grant: []string{ws.ScopeThreadsMeta, ws.ScopeAnalytics}, countable: true},
		{name: "no_analytics_scope", grant: []string{ws.ScopeThreadsMeta, ws.ScopeThreadsContents}},
		{name: "unknown_fields", shape: ws.Options{ExtraFields: true}, countable: true},
		{name: "null_items", shape: ws.Options{NullItems: true}, countable: true},
		{name: "optional_fields_left_out", shape: ws.Options{OmitOptional: true, TotalTokens: ws.TotalTokensAbsent}, countable: true},
		{name: "figures_that_do_not_add_up", shape: ws.Options{TotalTokens: ws.TotalTokensNoCache}, countable: true},
		{name: "email", scopes: append(append([]string{}, defaultScopes...), ws.ScopeMembers), countable: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := ws.New(ws.Config{Users: 8, Threads: 300}, tc.shape)
			defer s.Close()
			if tc.grant != nil {
				s.Grant(tc.grant...)
			}
			scopes := tc.scopes
			if scopes == nil {
				scopes = defaultScopes
			}
			o := Options{
				Client: api.Options{APIURL: s.URL, TokenURL: s.TokenURL(), ClientID: ws.ClientID, ClientSecret: ws.ClientSecret,
					ClientAuth: tc.auth, Scopes: scopes, Version: "test"},
				Scopes: scopes, PageSize: 100, Now: s.Config().Now,
			}
			r, err := Run(context.Background(), o)
			if err != nil {
				t.Fatal(err)
			}
			var buf bytes.Buffer
			if err := r.Write(&buf); err != nil {
				t.Fatal(err)
			}
			out := strings.ReplaceAll(buf.String(), s.URL, "http://stand-in")
			for _, secret := range []string{ws.ClientSecret, ws.RemoteSecret, "wsat_"} {
				if strings.Contains(out, secret) {
					t.Fatalf("the output shows %q:\n%s", secret, out)
				}
			}
			if r.Countable() != tc.countable {
				t.Errorf("countable %v, want %v", r.Countable(), tc.countable)
			}
			if s.NonGET() != 0 {
				t.Errorf("%d non-GET requests", s.NonGET())
			}
			gf := filepath.Join("testdata", tc.name+".golden")
			if *update {
				if err := os.WriteFile(gf, []byte(out), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(gf)
			if err != nil {
				t.Fatal(err)
			}
			if out != string(want) {
				t.Errorf("output differs from %s:\n%s", gf, out)
			}
		})
	}
}
