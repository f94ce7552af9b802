package ampserver

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/amp-exporter/amp-exporter/internal/testsupport/ampservertest"
	"github.com/amp-exporter/amp-exporter/internal/testsupport/threadgen"
)

const testKey = "sgamp_user_0123456789abcdef"

type recorder struct {
	mu     sync.Mutex
	sleeps []time.Duration
	codes  map[string]int
}

func (r *recorder) sleep(_ context.Context, d time.Duration) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.sleeps = append(r.sleeps, d)
	return nil
}

func (r *recorder) request(method, code string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.codes == nil {
		r.codes = map[string]int{}
	}
	r.codes[method+" "+code]++
}

func newTestClient(t *testing.T, url string, rec *recorder, mod func(*Options)) *Client {
	t.Helper()
	opts := Options{
		URL: url, Key: func() (string, error) { return testKey, nil }, Version: "1.2.3",
		Sleep: rec.sleep, OnRequest: rec.request,
	}
	if mod != nil {
		mod(&opts)
	}
	c, err := NewClient(opts)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestClientErrors(t *testing.T) {
	srv := ampservertest.New(testKey, "alice@example.com")
	defer srv.Close()
	g := threadgen.New(threadgen.Options{Threads: 3, TotalBytes: 60_000, Seed: 3})
	if err := srv.PutGenerated(g, 0, 3); err != nil {
		t.Fatal(err)
	}
	ids := srv.IDs()
	ctx := context.Background()

	cases := []struct {
		name       string
		setup      func()
		call       func(c *Client) error
		want       error
		sleeps     []time.Duration
		retryAfter bool
	}{
		{name: "user info ok", call: func(c *Client) error {
			u, err := c.GetUserInfo(ctx)
			if err == nil && u.Email != "alice@example.com" {
				t.Errorf("email %q", u.Email)
			}
			return err
		}},
		{name: "wrong key is auth, not retried", setup: func() { srv.SetKey("other") },
			call: func(c *Client) error { _, err := c.GetUserInfo(ctx); return err }, want: ErrAuth},
		{name: "403 is auth", setup: func() { srv.Fail(MethodListThreads, ampservertest.Fault{Status: 403}) },
			call: func(c *Client) error { _, err := c.ListThreads(ctx, ListParams{Limit: 10}); return err }, want: ErrAuth},
		{name: "auth-required code with 200 is auth", setup: func() {
			srv.Fail(MethodListThreads, ampservertest.Fault{Status: 200, Code: "auth-required"})
		}, call: func(c *Client) error { _, err := c.ListThreads(ctx, ListParams{Limit: 10}); return err }, want: ErrAuth},
		{name: "thread gone between list and fetch", setup: func() { srv.Vanish(ids[0]) },
			call: func(c *Client) error { _, err := c.ExportThread(ctx, ids[0], 1<<30); return err }, want: ErrThreadNotFound},
		{name: "429 honours Retry-After", setup: func() {
			srv.Fail(MethodListThreads, ampservertest.Fault{Status: 429, RetryAfter: "7"})
		}, call: func(c *Client) error { _, err := c.ListThreads(ctx, ListParams{Limit: 10}); return err },
			sleeps: []time.Duration{7 * time.Second}},
		{name: "503 Retry-After is capped", setup: func() {
			srv.Fail(MethodListThreads, ampservertest.Fault{Status: 503, RetryAfter: "86400"})
		}, call: func(c *Client) error { _, err := c.ListThreads(ctx, ListParams{Limit: 10}); return err },
			sleeps: []time.Duration{time.Minute}},
		{name: "500s back off then give up", setup: func() {
			srv.Fail(MethodListThreads, ampservertest.Fault{Status: 500}, ampservertest.Fault{Status: 500},
				ampservertest.Fault{Status: 500}, ampservertest.Fault{Status: 500})
		}, call: func(c *Client) error { _, err := c.ListThreads(ctx, ListParams{Limit: 10}); return err },
			want: ErrTransient, retryAfter: true},
		{name: "oversized response", setup: func() { srv.Oversize(ids[1]) },
			call: func(c *Client) error { _, err := c.ExportThread(ctx, ids[1], 1<<30); return err }, want: ErrTooLarge},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			srv.SetKey(testKey)
			rec := &recorder{}
			c := newTestClient(t, srv.URL, rec, func(o *Options) { o.MaxResponseBytes = 8 << 20 })
			if tc.setup != nil {
				tc.setup()
			}
			err := tc.call(c)
			if tc.want == nil && err != nil {
				t.Fatalf("err %v", err)
			}
			if tc.want != nil && !errors.Is(err, tc.want) {
				t.Fatalf("err %v, want %v", err, tc.want)
			}
			if err != nil && strings.Contains(err.Error(), testKey) {
				t.Fatalf("error carries the key: %v", err)
			}
			if tc.sleeps != nil && !equalDurations(rec.sleeps, tc.sleeps) {
				t.Fatalf("slept %v, want %v", rec.sleeps, tc.sleeps)
			}
			if tc.retryAfter {
				// Three retries, each delay within [d/2, d] of a doubling d.
				if len(rec.sleeps) != 3 {
					t.Fatalf("slept %v, want 3 backoffs", rec.sleeps)
				}
				for i, d := range rec.sleeps {
					hi := time.Second << i
					if d < hi/2 || d > hi {
						t.Errorf("backoff %d = %v, want in [%v, %v]", i, d, hi/2, hi)
					}
				}
			}
		})
	}
}

func equalDurations(a, b []time.Duration) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestClientRequestShape(t *testing.T) {
	var got *http.Request
	var body []byte
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = r
		var buf bytes.Buffer
		_, _ = buf.ReadFrom(r.Body)
		body = buf.Bytes()
		_, _ = w.Write([]byte(`{"ok":true,"result":{"email":"a@b"}}`))
	}))
	defer srv.Close()
	c := newTestClient(t, srv.URL+"/", &recorder{}, nil)
	if _, err := c.GetUserInfo(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got.Method != http.MethodPost || got.URL.Path != "/api/internal" || got.URL.RawQuery != "getUserInfo" {
		t.Errorf("request %s %s?%s", got.Method, got.URL.Path, got.URL.RawQuery)
	}
	if ua := got.Header.Get("User-Agent"); ua != "amp-exporter/1.2.3" {
		t.Errorf("User-Agent %q", ua)
	}
	if a := got.Header.Get("Authorization"); a != "Bearer "+testKey {
		t.Errorf("Authorization %q", a)
	}
	if string(body) != `{"method":"getUserInfo","params":{}}` {
		t.Errorf("body %s", body)
	}
}

func TestClientBadEnvelopes(t *testing.T) {
	for name, reply := range map[string]string{
		"not json":     `<html>`,
		"no ok":        `{"result":{}}`,
		"ok false":     `{"ok":false}`,
		"wrong result": `{"ok":true,"result":{"threads":7}}`,
	} {
		t.Run(name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				_, _ = w.Write([]byte(reply))
			}))
			defer srv.Close()
			c := newTestClient(t, srv.URL, &recorder{}, nil)
			want := ErrBadResponse
			if name == "wrong result" {
				want = ErrBadDocument
			}
			if _, err := c.ListThreads(context.Background(), ListParams{Limit: 1}); !errors.Is(err, want) {
				t.Fatalf("err %v, want %v", err, want)
			}
		})
	}
}

func TestClientSlowServerTimesOut(t *testing.T) {
	srv := ampservertest.New(testKey, "a@b")
	defer srv.Close()
	srv.SetDelay(5 * time.Second)
	rec := &recorder{}
	c := newTestClient(t, srv.URL, rec, func(o *Options) { o.Timeout = 50 * time.Millisecond; o.Retries = -1 })
	_, err := c.GetUserInfo(context.Background())
	if !errors.Is(err, ErrTransient) {
		t.Fatalf("err %v, want a transient timeout", err)
	}
	if rec.codes["getUserInfo error"] != 1 {
		t.Errorf("requests %v", rec.codes)
	}
	srv.SetDelay(0)
}

func TestClientRefusesRedirects(t *testing.T) {
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "" {
			t.Error("the key followed a redirect")
		}
	}))
	defer other.Close()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, other.URL, http.StatusTemporaryRedirect)
	}))
	defer srv.Close()
	c := newTestClient(t, srv.URL, &recorder{}, nil)
	if _, err := c.GetUserInfo(context.Background()); !errors.Is(err, ErrBadResponse) {
		t.Fatalf("err %v", err)
	}
}

func TestRetryAfter(t *testing.T) {
	now := time.Date(2026, 4, 1, 12, 0, 0, 0, time.UTC)
	for h, want := range map[string]time.Duration{
		"":                              0,
		"3":                             3 * time.Second,
		"-1":                            0,
		"999999999999":                  time.Minute,
		"Wed, 01 Apr 2026 12:00:30 GMT": 30 * time.Second,
		"Wed, 01 Apr 2026 11:00:00 GMT": 0,
		"soon":                          0,
	} {
		if got := retryAfter(h, now, time.Minute); got != want {
			t.Errorf("retryAfter(%q) = %v, want %v", h, got, want)
		}
	}
}

// A hostile or confused server that echoes the key in its error message
// must not get even a part of it into the error: the message is cut to
// its bound only after the key is taken out, so a key that straddles the
// cut is not left half in.
func TestClientErrorNeverCarriesPartOfTheKey(t *testing.T) {
	for _, pad := range []int{0, 50, 150, 190, 199} {
		for _, field := range []string{"code", "message"} {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				text := strings.Repeat("x", pad) + strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
				w.WriteHeader(http.StatusBadRequest)
				_, _ = fmt.Fprintf(w, `{"ok":false,"error":{%q:%q}}`, field, text)
			}))
			c := newTestClient(t, srv.URL, &recorder{}, nil)
			_, err := c.GetUserInfo(context.Background())
			srv.Close()
			if err == nil {
				t.Fatalf("pad %d %s: no error", pad, field)
			}
			if strings.Contains(err.Error(), testKey[:8]) {
				t.Errorf("pad %d %s: error carries part of the key: %v", pad, field, err)
			}
		}
	}
}

// The account name is logged and shown on the landing page: what a server
// sends for it is bounded first.
func TestUserInfoEmailIsBounded(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = fmt.Fprintf(w, `{"ok":true,"result":{"email":%q}}`, strings.Repeat("a", 100_000)+"@example.com")
	}))
	defer srv.Close()
	c := newTestClient(t, srv.URL, &recorder{}, nil)
	u, err := c.GetUserInfo(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(u.Email) > maxEmail+len("…") {
		t.Fatalf("email of %d bytes kept", len(u.Email))
	}
}
