package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptrace"
	"os"
	"strings"
	"time"

	"github.com/amp-exporter/amp-exporter/internal/pushhttp"
)

// ingestOptions are the flags of `amp-exporter ingest`.
type ingestOptions struct {
	url          string
	user         string
	passwordFile string
	// maxAttempts caps the requests made for one run (the first and the
	// retries the exporter asks for with 429); maxWait caps one wait.
	maxAttempts int
	maxWait     time.Duration
	// sleep waits d or until ctx ends (tests shorten it); nil: a timer.
	sleep func(ctx context.Context, d time.Duration) error
}

// Defaults of the retry flags: with the exporter's Retry-After of 5 s
// (and the jitter), 20 attempts wait about two minutes for a slot.
const (
	defaultIngestAttempts = 20
	defaultIngestMaxWait  = time.Minute
)

// ingestKeepalive is how often an empty line is sent while stdin is silent
// (a tool can run for many minutes without a stream-json line), well within
// the exporter's streams.ingest.read_timeout. Empty lines are ignored.
const ingestKeepalive = 30 * time.Second

// maxReplayBytes caps what is kept of stdin to resend while the exporter
// has not yet taken the request: a run that grows past it before a slot
// frees cannot be resent whole, and is not resent at all.
const maxReplayBytes = 64 << 20

// runIngest copies stdin to stdout unchanged and streams the same bytes to
// an exporter's ingest endpoint, so it can sit in a pipeline:
//
//	amp -x --stream-json "fix the tests" | amp-exporter ingest | jq .
//
// If the exporter cannot be reached the pipeline still works: stdin keeps
// flowing to stdout, and the exit status says the upload failed.
//
// The exporter serves a few requests at once and answers one more with 429
// and Retry-After before it reads any of its body, so nothing of it is
// counted: the request is then made again, from the first byte, after the
// wait the exporter asked for (capped, with jitter so that many waiting
// pipelines do not come back at once), a bounded number of times. The
// request asks "Expect: 100-continue", so no body is sent before the
// exporter takes it; until it does, stdin is kept to be sent again.
func runIngest(o ingestOptions, stdin io.Reader, stdout, stderr io.Writer) int {
	if o.maxAttempts < 1 {
		o.maxAttempts = 1
	}
	if o.sleep == nil {
		o.sleep = sleepCtx
	}
	var pass string
	if o.user != "" {
		b, err := os.ReadFile(o.passwordFile)
		if err != nil {
			fmt.Fprintf(stderr, "amp-exporter ingest: read password file: %v\n", err)
			drain(stdin, stdout)
			return 2
		}
		pass = strings.TrimRight(string(b), "\r\n")
	}
	if _, err := http.NewRequest(http.MethodPost, o.url, nil); err != nil {
		fmt.Fprintf(stderr, "amp-exporter ingest: %v\n", err)
		drain(stdin, stdout)
		return 2
	}

	sp := newSpool(maxReplayBytes)
	copied := make(chan error, 1)
	stopKeepalive := make(chan struct{})
	go func() {
		_, err := io.Copy(io.MultiWriter(stdout, sp), stdin)
		close(stopKeepalive)
		sp.close(err)
		copied <- err
	}()
	go sp.keepalive(stopKeepalive, ingestKeepalive)
	finish := func(code int) int {
		sp.drop() // nothing more is sent: stdin still goes to stdout
		if err := <-copied; err != nil {
			fmt.Fprintf(stderr, "amp-exporter ingest: reading stdin: %v\n", err)
		}
		return code
	}

	client := &http.Client{Transport: ingestTransport()}
	for attempt := 1; ; attempt++ {
		body := sp.reader()
		req, _ := http.NewRequest(http.MethodPost, o.url, body)
		req.Header.Set("Content-Type", "application/x-ndjson")
		req.Header.Set("Expect", "100-continue")
		if o.user != "" {
			req.SetBasicAuth(o.user, pass)
		}
		req = req.WithContext(httptrace.WithClientTrace(req.Context(), &httptrace.ClientTrace{
			// The exporter reads the body: it took the request and will
			// not answer 429; nothing needs keeping to send again.
			Got100Continue: sp.taken,
		}))
		resp, err := client.Do(req)
		if err != nil {
			fmt.Fprintf(stderr, "amp-exporter ingest: upload to %s failed: %v\n", o.url, err)
			return finish(1)
		}
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
		resp.Body.Close()
		body.Close()
		if resp.StatusCode == http.StatusOK {
			return finish(0)
		}
		if resp.StatusCode != http.StatusTooManyRequests {
			fmt.Fprintf(stderr, "amp-exporter ingest: %s: %s\n", resp.Status, strings.TrimSpace(string(msg)))
			return finish(1)
		}
		if attempt >= o.maxAttempts {
			fmt.Fprintf(stderr, "amp-exporter ingest: %s after %d attempts (--retry.max-attempts): %s\n",
				resp.Status, attempt, strings.TrimSpace(string(msg)))
			return finish(1)
		}
		if !sp.whole() {
			fmt.Fprintf(stderr, "amp-exporter ingest: %s, and the run is over %d MiB: it cannot be sent again whole\n",
				resp.Status, maxReplayBytes>>20)
			return finish(1)
		}
		wait := min(retryAfter(resp.Header.Get("Retry-After"), time.Now()), o.maxWait)
		wait += rand.N(wait/2 + 1) // spread the pipelines that waited together
		if err := o.sleep(context.Background(), wait); err != nil {
			return finish(1)
		}
	}
}

// ingestTransport is the default transport, waiting up to 10 s for the
// exporter's "100 Continue" (a proxy that never sends one gets the body
// after that).
func ingestTransport() *http.Transport {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.ExpectContinueTimeout = 10 * time.Second
	return t
}

// retryAfter is the receiver's Retry-After; 1 s when it is missing or
// says nothing usable.
func retryAfter(v string, now time.Time) time.Duration {
	if d := pushhttp.RetryAfter(v, now); d > 0 {
		return d
	}
	return time.Second
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// drain copies stdin to stdout: the pipeline keeps working when there is
// nothing to upload to.
func drain(stdin io.Reader, stdout io.Writer) {
	_, _ = io.Copy(stdout, stdin)
}

// errDropped ends a request body when nothing more is to be sent.
var errDropped = errors.New("upload ended")
