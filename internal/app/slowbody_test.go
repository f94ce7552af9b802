package app

import (
	"context"
	"encoding/base64"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"golang.org/x/crypto/bcrypt"
)

// TestSlowBodiesCannotLockScrapesOut: connections that send a complete
// request header with a body they never send are serving a request, which
// the connection limit never closes to make room. Go's server waited for
// the unread body (up to the 30 s read timeout) after the handler had
// answered, or after the web config refused the request (401), so with
// the limit filled by them a scrape waited that long. Now an unread body
// is not waited for, and the scrape gets through; a body the handler reads
// (ingest) is still read whole.
//
// Each case waits out a bound at its real value (a second or two) on a
// server of its own, so the test runs alongside others, and its cases all
// at once: each in a goroutine of its own, not as parallel subtests, which
// go test would run two at a time (-parallel is the number of cores), one
// case waiting for another's slot.
func TestSlowBodiesCannotLockScrapesOut(t *testing.T) {
	t.Parallel()
	if serverReadTimeout <= scrapeGuard || refusedBodyWait >= scrapeGuard {
		t.Fatalf("the guard (%v) must stay below the read timeout (%v) and above the wait for a refused body (%v), or this test cannot fail",
			scrapeGuard, serverReadTimeout, refusedBodyWait)
	}
	hash, err := bcrypt.GenerateFromPassword([]byte("s3cret"), bcrypt.MinCost)
	if err != nil {
		t.Fatal(err)
	}
	auth := filepath.Join(t.TempDir(), "web.yml")
	if err := os.WriteFile(auth, []byte(fmt.Sprintf("basic_auth_users:\n  prometheus: %s\n", hash)), 0o600); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for _, tc := range []struct{ name, webConfig, creds string }{
		{"answered without reading the body", "", ""},
		{"refused without credentials", auth, ""},
		{"refused with wrong credentials", auth, "prometheus:wrong"},
	} {
		wg.Go(func() {
			t.Run(tc.name, func(t *testing.T) { slowBodies(t, tc.webConfig, tc.creds) })
		})
	}
	wg.Wait()
}

func slowBodies(t *testing.T, webConfig, creds string) {
	mux := http.NewServeMux()
	mux.HandleFunc("/metrics", func(w http.ResponseWriter, _ *http.Request) { fmt.Fprintln(w, "up 1") })
	mux.HandleFunc("/echo", func(w http.ResponseWriter, r *http.Request) {
		b, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		w.Write(b)
	})
	const limit = 8
	// The slow connections are made to fill the limit once each has sent
	// its header (a connection still sending it would be closed to make
	// room for the next).
	active := make(chan struct{}, 64)
	harden := func(s *http.Server) {
		hardenServer(s)
		s.ConnState = func(_ net.Conn, st http.ConnState) {
			if st == http.StateActive {
				active <- struct{}{}
			}
		}
	}
	addr, stop := startServerWith(t, mux, limit, harden, webConfig)
	defer stop()
	var slow []net.Conn
	defer func() {
		for _, c := range slow {
			c.Close()
		}
	}()
	for i := range limit {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		// A body of 100 kB (below what the server would give up on at
		// once), of which a few bytes come.
		path := []string{"/metrics", "/-/nothing-here"}[i%2]
		authz := ""
		if creds != "" {
			authz = "Authorization: Basic " + base64.StdEncoding.EncodeToString([]byte(creds)) + "\r\n"
		}
		fmt.Fprintf(c, "POST %s HTTP/1.1\r\nHost: x\r\n%sContent-Type: text/plain\r\nContent-Length: 100000\r\n\r\nabc", path, authz)
		slow = append(slow, c)
		<-active
	}
	client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	ctx, cancel := context.WithTimeout(context.Background(), scrapeGuard)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/metrics", nil)
	req.SetBasicAuth("prometheus", "s3cret")
	resp, err := client.Do(req)
	if err != nil {
		t.Fatalf("scrape with the connection limit (%d) filled by %d connections sending a body slowly: %v", limit, len(slow), err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("status %d", resp.StatusCode)
	}
	// A body that is read is read whole, and the connection kept.
	req, _ = http.NewRequestWithContext(ctx, http.MethodPost, "http://"+addr+"/echo", strings.NewReader("hello"))
	req.SetBasicAuth("prometheus", "s3cret")
	resp, err = client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(b) != "hello" {
		t.Fatalf("echo %q", b)
	}
}
