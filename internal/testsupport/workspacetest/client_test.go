package workspacetest

import (
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
)

// client is a minimal client of the stand-in for its own tests.
type client struct {
	t   testing.TB
	s   *Server
	tok string
}

func newClient(t testing.TB, s *Server, scopes ...string) *client {
	t.Helper()
	if scopes == nil {
		scopes = ViewScopes
	}
	status, body := tokenRequest(t, s, true, false, url.Values{"grant_type": {"client_credentials"}, "scope": {strings.Join(scopes, " ")}})
	if status != http.StatusOK {
		t.Fatalf("token: %d %s", status, body)
	}
	var tr struct {
		AccessToken string `json:"access_token"`
	}
	if err := json.Unmarshal(body, &tr); err != nil || tr.AccessToken == "" {
		t.Fatalf("token answer %s: %v", body, err)
	}
	return &client{t: t, s: s, tok: tr.AccessToken}
}

// tokenRequest posts form to the token endpoint with the client's
// credentials in Basic, in the form, both or neither.
func tokenRequest(t testing.TB, s *Server, basic, post bool, form url.Values) (int, []byte) {
	t.Helper()
	if post {
		form.Set("client_id", ClientID)
		form.Set("client_secret", ClientSecret)
	}
	req, err := http.NewRequest(http.MethodPost, s.URL+"/oauth2/token", strings.NewReader(form.Encode()))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	if basic {
		req.SetBasicAuth(ClientID, ClientSecret)
	}
	return do(t, req)
}

func do(t testing.TB, req *http.Request) (int, []byte) {
	t.Helper()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, b
}

// get sends GET path?q with the client's token.
func (c *client) get(path string, q url.Values) (int, http.Header, []byte) {
	c.t.Helper()
	u := c.s.URL + path
	if len(q) > 0 {
		u += "?" + q.Encode()
	}
	req, err := http.NewRequest(http.MethodGet, u, nil)
	if err != nil {
		c.t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+c.tok)
	req.Header.Set("Accept", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		c.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		c.t.Fatal(err)
	}
	return resp.StatusCode, resp.Header, b
}

// object gets path?q, which must answer 200 with a JSON object.
func (c *client) object(path string, q url.Values) map[string]any {
	c.t.Helper()
	status, _, b := c.get(path, q)
	if status != http.StatusOK {
		c.t.Fatalf("GET %s?%s: %d %s", path, q.Encode(), status, b)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		c.t.Fatalf("GET %s: %v in %s", path, err, b)
	}
	return m
}

// listAll pages through the listing and returns its rows (nulls dropped)
// and how many pages it took.
func (c *client) listAll(q url.Values) (rows []map[string]any, pages int) {
	c.t.Helper()
	if q == nil {
		q = url.Values{}
	}
	q.Set("limit", "100")
	seen := map[string]bool{}
	for {
		m := c.object("/api/v2/threads", q)
		pages++
		for _, x := range m["threads"].([]any) {
			if x != nil {
				rows = append(rows, x.(map[string]any))
			}
		}
		next, _ := m["nextCursor"].(string)
		if next == "" {
			return rows, pages
		}
		if seen[next] {
			c.t.Fatalf("cursor %q repeats", next)
		}
		seen[next] = true
		q.Set("cursor", next)
	}
}

func num(v any) int64 { f, _ := v.(float64); return int64(f) }

// units turns dollars served into units; exact because every amount is a
// multiple of 2⁻²⁴.
func units(v any) int64 {
	f, _ := v.(float64)
	return int64(f * UnitsPerUSD)
}

// modelUsage decodes a usage answer's or a rollup's model entry.
func modelUsage(m map[string]any) Usage {
	return Usage{
		Requests: num(m["requests"]), InputTokens: num(m["inputTokens"]), OutputTokens: num(m["outputTokens"]),
		CacheReadInputTokens: num(m["cacheReadInputTokens"]), CacheCreationInputTokens: num(m["cacheCreationInputTokens"]),
		Units: units(m["usage"]),
	}
}

func add[K comparable](m map[K]Usage, k K, u Usage) {
	v := m[k]
	v.Add(u)
	m[k] = v
}
