package main

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"
)

// ingestOptions are the flags of `amp-exporter ingest`.
type ingestOptions struct {
	url          string
	user         string
	passwordFile string
}

// runIngest copies stdin to stdout unchanged and streams the same bytes to
// an exporter's ingest endpoint, so it can sit in a pipeline:
//
//	amp -x --stream-json "fix the tests" | amp-exporter ingest | jq .
//
// If the exporter cannot be reached the pipeline still works: stdin keeps
// flowing to stdout, and the exit status says the upload failed.
func runIngest(o ingestOptions, stdin io.Reader, stdout, stderr io.Writer) int {
	pr, pw := io.Pipe()
	upload := &dropOnError{w: pw}
	copied := make(chan error, 1)
	stopKeepalive := make(chan struct{})
	go func() {
		_, err := io.Copy(io.MultiWriter(stdout, upload), stdin)
		close(stopKeepalive)
		pw.CloseWithError(err)
		copied <- err
	}()
	go upload.keepalive(stopKeepalive, ingestKeepalive)

	req, err := http.NewRequest(http.MethodPost, o.url, pr)
	if err != nil {
		fmt.Fprintf(stderr, "amp-exporter ingest: %v\n", err)
		upload.fail()
		<-copied
		return 2
	}
	req.Header.Set("Content-Type", "application/x-ndjson")
	if o.user != "" {
		pass, err := os.ReadFile(o.passwordFile)
		if err != nil {
			fmt.Fprintf(stderr, "amp-exporter ingest: read password file: %v\n", err)
			upload.fail()
			<-copied
			return 2
		}
		req.SetBasicAuth(o.user, strings.TrimRight(string(pass), "\r\n"))
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		upload.fail()
		fmt.Fprintf(stderr, "amp-exporter ingest: upload to %s failed: %v\n", o.url, err)
		<-copied
		return 1
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	upload.fail() // the server has answered: nothing more is read
	if err := <-copied; err != nil && !errors.Is(err, io.ErrClosedPipe) {
		fmt.Fprintf(stderr, "amp-exporter ingest: reading stdin: %v\n", err)
	}
	if resp.StatusCode != http.StatusOK {
		fmt.Fprintf(stderr, "amp-exporter ingest: %s: %s\n", resp.Status, strings.TrimSpace(string(body)))
		return 1
	}
	return 0
}

// dropOnError writes to w until it fails (or fail is called), then
// swallows writes, so the tee to stdout never stops.
type dropOnError struct {
	mu      sync.Mutex
	w       io.Writer
	failed  bool
	midLine bool // the last byte written was not a newline
	wrote   bool // something was written since the last keepalive tick
}

// ingestKeepalive is how often an empty line is sent while stdin is silent
// (a tool can run for many minutes without a stream-json line), well within
// the exporter's streams.ingest.read_timeout. Empty lines are ignored.
const ingestKeepalive = 30 * time.Second

// keepalive sends an empty line every period in which nothing was written,
// when the stream is between lines.
func (d *dropOnError) keepalive(stop <-chan struct{}, period time.Duration) {
	t := time.NewTicker(period)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
			d.mu.Lock()
			if !d.wrote && !d.midLine && !d.failed {
				if _, err := d.w.Write([]byte("\n")); err != nil {
					d.failed = true
				}
			}
			d.wrote = false
			d.mu.Unlock()
		}
	}
}

func (d *dropOnError) Write(p []byte) (int, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if !d.failed {
		if _, err := d.w.Write(p); err != nil {
			d.failed = true
		}
	}
	if len(p) > 0 {
		d.wrote = true
		d.midLine = p[len(p)-1] != '\n'
	}
	return len(p), nil
}

func (d *dropOnError) fail() {
	d.mu.Lock()
	d.failed = true
	d.mu.Unlock()
}
