package streams

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/amp-exporter/amp-exporter/parser/streamjson"
)

// junkModels is the cross-origin attack of issue 10: a page in the user's
// browser posts runs naming made-up models, with a "simple" content type
// that needs no CORS preflight, to fill the model label cap.
func junkModels(n int) string {
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, `{"type":"assistant","message":{"type":"message","role":"assistant","model":"junk-%d","content":[{"type":"text","text":"x"}],"stop_reason":"end_turn","usage":{"input_tokens":1,"output_tokens":1}},"session_id":"T-%d"}`+"\n", i, i)
	}
	return b.String()
}

func TestIngestRefusesWhatABrowserCanSend(t *testing.T) {
	e := newEnv(t, nil)
	srv := ingestServer(e, IngestConfig{MaxLineBytes: 1 << 20, MaxBodyBytes: 1 << 30, MaxConcurrent: 4, ReadTimeout: time.Minute})
	defer srv.Close()
	for _, tc := range []struct {
		name, contentType, origin string
		want                      int
	}{
		{"text/plain (no preflight)", "text/plain", "", http.StatusUnsupportedMediaType},
		{"form (no preflight)", "application/x-www-form-urlencoded", "", http.StatusUnsupportedMediaType},
		{"no content type", "", "", http.StatusUnsupportedMediaType},
		{"ndjson from a web page", "application/x-ndjson", "http://evil.example", http.StatusForbidden},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req, _ := http.NewRequest(http.MethodPost, srv.URL, strings.NewReader(junkModels(100)))
			if tc.contentType != "" {
				req.Header.Set("Content-Type", tc.contentType)
			}
			if tc.origin != "" {
				req.Header.Set("Origin", tc.origin)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != tc.want {
				t.Errorf("status %d, want %d", resp.StatusCode, tc.want)
			}
		})
	}
	if got := e.value("amp_tokens_total", "source", "stream"); got != 0 {
		t.Fatalf("refused requests counted %v tokens", got)
	}
	// The command-line client's own request still works.
	code, res := post(t, srv.URL, strings.NewReader(runText(runLines...)))
	if code != http.StatusOK || res.Counted != len(runLines) {
		t.Fatalf("ndjson: %d %+v", code, res)
	}
}

// TestIngestCapsConcurrentRequests holds the slots with requests that send a
// long line without its newline, then idle (the memory attack of issue 10:
// 64 of them took the process to 2.8 GiB); one more is refused at once.
func TestIngestCapsConcurrentRequests(t *testing.T) {
	e := newEnv(t, nil)
	const slots = 2
	srv := ingestServer(e, IngestConfig{MaxLineBytes: 64 << 10, MaxBodyBytes: 1 << 30, MaxConcurrent: slots, ReadTimeout: time.Minute})
	defer srv.Close()
	addr := strings.TrimPrefix(srv.URL, "http://")
	var held []net.Conn
	defer func() {
		for _, c := range held {
			c.Close()
		}
	}()
	hold := func() net.Conn {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(c, "POST / HTTP/1.1\r\nHost: x\r\nContent-Type: application/x-ndjson\r\nTransfer-Encoding: chunked\r\n\r\n")
		line := strings.Repeat("a", 200<<10) // longer than the line limit, no newline
		fmt.Fprintf(c, "%x\r\n%s\r\n", len(line), line)
		return c
	}
	for range slots {
		held = append(held, hold())
	}
	// The held requests are being served once they show up in the count.
	h := srv.Config.Handler.(*IngestHandler)
	for deadline := time.Now().Add(10 * time.Second); h.inFlight.Load() < slots; {
		if time.Now().After(deadline) {
			t.Fatalf("%d requests in flight, want %d", h.inFlight.Load(), slots)
		}
		time.Sleep(5 * time.Millisecond)
	}
	req, _ := http.NewRequest(http.MethodPost, srv.URL, strings.NewReader(runText(runLines...)))
	req.Header.Set("Content-Type", "application/x-ndjson")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusTooManyRequests {
		t.Fatalf("request past the cap: %d, want 429", resp.StatusCode)
	}
}

// TestIngestTimesOutASilentBody: a body that stops sending (mid-line) is
// ended after the read timeout, and its slot freed.
func TestIngestTimesOutASilentBody(t *testing.T) {
	t.Parallel() // waits out read timeouts: alongside the other waiter
	e := newEnv(t, nil)
	srv := ingestServer(e, IngestConfig{MaxLineBytes: 64 << 10, MaxBodyBytes: 1 << 30, MaxConcurrent: 1, ReadTimeout: 200 * time.Millisecond})
	defer srv.Close()
	c, err := net.Dial("tcp", strings.TrimPrefix(srv.URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	fmt.Fprintf(c, "POST / HTTP/1.1\r\nHost: x\r\nContent-Type: application/x-ndjson\r\nTransfer-Encoding: chunked\r\n\r\n")
	first := runLines[0] + "\n" + runLines[1][:20]
	fmt.Fprintf(c, "%x\r\n%s\r\n", len(first), first)
	// Then nothing. The server must answer (or close) on its own.
	_ = c.SetReadDeadline(time.Now().Add(20 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatalf("the silent request was not ended: %v", err)
	}
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(b), "timeout") {
		t.Errorf("answer %d %s", resp.StatusCode, b)
	}
}

func TestAppendBoundedNeverHoldsMoreThanTheLimit(t *testing.T) {
	const limit = 1<<20 + 2
	var buf []byte
	chunk := make([]byte, 64<<10)
	for len(buf)+len(chunk) <= limit {
		buf = appendBounded(buf, chunk, limit)
	}
	if cap(buf) > limit {
		t.Fatalf("cap %d past the limit %d", cap(buf), limit)
	}
}

// TestIngestCannotPushOwnModelsIntoOther: 100 junk model names posted to the
// unauthenticated ingest endpoint filled the model cap in issue 10, so the
// user's real models landed in "other". They now fill only their quota.
func TestIngestCannotPushOwnModelsIntoOther(t *testing.T) {
	e := newEnv(t, nil)
	srv := ingestServer(e, IngestConfig{MaxLineBytes: 1 << 20, MaxBodyBytes: 1 << 30, MaxConcurrent: 4, ReadTimeout: time.Minute})
	defer srv.Close()
	if code, res := post(t, srv.URL, strings.NewReader(junkModels(100))); code != http.StatusOK || res.Counted != 100 {
		t.Fatalf("junk ingest: %d %+v", code, res)
	}
	// The user's own capture, tailed from their directory.
	line := strings.Replace(junkModels(1), "junk-0", "claude-sonnet-4-5", 1)
	e.store.Apply(nil)
	p := parseRun(t, line)
	e.store.Apply(p)
	if got := e.value("amp_tokens_total", "source", "stream", "model", "claude-sonnet-4-5", "token_type", "output"); got != 1 {
		t.Fatalf("the user's model has %v output tokens under its own name, want 1 (not folded into other)", got)
	}
}

// parseRun turns stream-json text into the increments the tailer applies.
func parseRun(t *testing.T, text string) []streamjson.Increments {
	t.Helper()
	p := streamjson.NewParser()
	var run streamjson.Run
	var out []streamjson.Increments
	for _, l := range strings.Split(strings.TrimSpace(text), "\n") {
		m, ok, err := p.ParseLine([]byte(l))
		if err != nil {
			t.Fatal(err)
		}
		if ok {
			out = append(out, run.Apply(m))
		}
	}
	return out
}
