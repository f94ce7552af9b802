package api

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/amp-exporter/amp-exporter/internal/clock"
)

// TestSecretAndTokenNeverInErrors: a server that echoes the client
// secret, the Basic header and the token into every error it answers
// (token endpoint and API alike) gets none of them into an error string.
func TestSecretAndTokenNeverInErrors(t *testing.T) {
	const secret = "sec-ret-0123456789"
	const token = "tok-EN-9876543210"
	for _, tc := range []struct {
		name   string
		status int    // of the token endpoint; 200 hands out token
		code   int    // of the API
		auth   string //
	}{
		{"token 401 basic", 401, 0, AuthBasic},
		{"token 401 post", 401, 0, AuthPost},
		{"token 400 plain", 400, 0, AuthPost},
		{"token 500", 500, 0, AuthBasic},
		{"api 401", 200, 401, AuthBasic},
		{"api 400", 200, 400, AuthBasic},
		{"api 403", 200, 403, AuthPost},
		{"api 503", 200, 503, AuthBasic},
		{"api 418", 200, 418, AuthBasic},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				b, _ := io.ReadAll(r.Body)
				echo := fmt.Sprintf("you sent %q %q %s", r.Header.Get("Authorization"), b, r.URL.RawQuery)
				form, _ := url.ParseQuery(string(b))
				echo += " secret=" + form.Get("client_secret")
				if _, s, ok := r.BasicAuth(); ok {
					echo += " secret=" + s
				}
				w.Header().Set("Content-Type", "application/json")
				if r.URL.Path == "/oauth2/token" {
					if tc.status == 200 {
						_, _ = io.WriteString(w, `{"access_token":"`+token+`","token_type":"Bearer","expires_in":3600}`)
						return
					}
					w.WriteHeader(tc.status)
					if tc.status == 400 {
						_ = json.NewEncoder(w).Encode(map[string]string{"error": echo})
						return
					}
					_ = json.NewEncoder(w).Encode(map[string]string{"error": "invalid_client", "error_description": echo})
					return
				}
				w.WriteHeader(tc.code)
				_ = json.NewEncoder(w).Encode(map[string]string{"error": echo})
			}))
			defer srv.Close()
			clk := clock.NewFake(start)
			c, err := New(Options{APIURL: srv.URL, TokenURL: srv.URL + "/oauth2/token", ClientID: "id-1", ClientSecret: secret,
				ClientAuth: tc.auth, Clock: clk, MaxAttempts: 2, Jitter: func() float64 { return 0 }})
			if err != nil {
				t.Fatal(err)
			}
			var errs []error
			f := &fixture{clk: clk, c: c}
			f.run(t, func() {
				_, e1 := c.ListThreads(context.Background(), ListQuery{})
				_, e2 := c.ThreadUsage(context.Background(), "T-1")
				_, e3 := c.DailyUsage(context.Background(), "", 7)
				errs = append(errs, e1, e2, e3, c.Token(context.Background()))
			})
			checked := 0
			for _, e := range errs {
				if e == nil {
					continue
				}
				checked++
				for _, s := range []string{e.Error(), fmt.Sprintf("%+v", e), fmt.Sprintf("%#v", e)} {
					if strings.Contains(s, secret) || strings.Contains(s, token) || strings.Contains(s, base64.StdEncoding.EncodeToString([]byte("id-1:"+secret))) {
						t.Errorf("an error shows a credential: %s", s)
					}
				}
			}
			if checked < 3 {
				t.Fatalf("only %d errors to check", checked)
			}
		})
	}
}
