package remotewrite

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/klauspost/compress/snappy"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/amp-exporter/amp-exporter/internal/clock"
	"github.com/amp-exporter/amp-exporter/internal/pushhttp"
)

// Headers of a remote-write 1.0 request.
const (
	ContentType  = "application/x-protobuf"
	Encoding     = "snappy"
	VersionValue = "0.1.0"
	VersionKey   = "X-Prometheus-Remote-Write-Version"
)

// Options configure one Sender.
type Options struct {
	// URL is the receiver's write endpoint.
	URL string
	// Interval between pushes; a failing push is retried within it.
	Interval time.Duration
	// Timeout bounds one request.
	Timeout time.Duration
	// ExternalLabels are added to every series (see Convert).
	ExternalLabels map[string]string
	// Client sends the requests (auth, TLS and proxy configured on it).
	Client *http.Client
	// Gatherer is what /metrics serves.
	Gatherer prometheus.Gatherer
	// Ready reports whether the first scan of the sources is done; no push
	// happens before, so a restart never pushes counters that are still
	// climbing back to their totals. Nil means always ready.
	Ready     func() bool
	UserAgent string
	Clock     clock.Clock
	Logger    *slog.Logger
	Metrics   *Metrics
	// MinBackoff and MaxBackoff bound the wait between retries (defaults
	// 500ms and 5s).
	MinBackoff, MaxBackoff time.Duration
	// FinalTimeout bounds the last push at shutdown (default: Timeout,
	// at most 5s).
	FinalTimeout time.Duration
	// Message is the protobuf message sent: MessageV1 (the default) or
	// MessageV2. A receiver that refuses 2.0 (415), or answers a 2.0
	// request without the X-Prometheus-Remote-Write-Samples-Written header
	// (a 1.0 receiver that ignored the Content-Type and wrote nothing), is
	// sent 1.0 from then on; the push is repeated at once in 1.0.
	Message string
}

// Sender pushes the registry to one receiver.
type Sender struct {
	o    Options
	hash string

	mu       sync.Mutex
	logged   map[string]bool // distinct permanent errors already logged
	failing  bool            // the last push did not succeed
	lastPush time.Time       // timestamp of the last push attempted
	v2       bool            // send 2.0 (configured, not refused yet)
	// notBefore is when the receiver's last Retry-After ends: no
	// request is made before, by this push or the next.
	notBefore time.Time
}

// New returns a sender; Run starts it.
func New(o Options) *Sender {
	if o.MinBackoff <= 0 {
		o.MinBackoff = 500 * time.Millisecond
	}
	if o.MaxBackoff <= 0 {
		o.MaxBackoff = 5 * time.Second
	}
	if o.FinalTimeout <= 0 {
		o.FinalTimeout = min(o.Timeout, 5*time.Second)
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Clock == nil {
		o.Clock = clock.Real{}
	}
	s := &Sender{o: o, hash: URLHash(o.URL), logged: map[string]bool{}, v2: o.Message == MessageV2}
	s.o.Logger = o.Logger.With("url_hash", s.hash)
	if o.Metrics != nil {
		o.Metrics.init(s.hash)
	}
	return s
}

// Hash is the receiver's url_hash label.
func (s *Sender) Hash() string { return s.hash }

// Run pushes every interval until ctx ends, then pushes once more (bounded
// by FinalTimeout) so the receiver has the last values.
func (s *Sender) Run(ctx context.Context) error {
	t := s.o.Clock.NewTicker(s.o.Interval)
	defer t.Stop()
	if s.ready() {
		s.Push(ctx, s.o.Clock.Now().Add(s.o.Interval))
	}
	for {
		select {
		case <-ctx.Done():
			if s.ready() {
				final, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.o.FinalTimeout)
				s.Push(final, s.o.Clock.Now().Add(s.o.FinalTimeout))
				cancel()
			}
			return nil
		case <-t.C():
			if s.ready() {
				s.Push(ctx, s.o.Clock.Now().Add(s.o.Interval))
			}
		}
	}
}

func (s *Sender) ready() bool { return s.o.Ready == nil || s.o.Ready() }

// Push gathers the registry now and sends it, retrying until deadline;
// while the receiver's last Retry-After runs (it may outlast the push that
// got it), Push first waits for its end and gathers then, or drops the
// push without a request when that end is not before deadline. What is
// still unsent at deadline is dropped and counted, never kept for later
// (the next push carries the cumulative values anyway). It returns the
// result the samples were counted under.
// Pushes must not overlap: Run calls it from one goroutine.
func (s *Sender) Push(ctx context.Context, deadline time.Time) string {
	if err := s.waitRetryAfter(ctx, deadline); err != nil {
		// Gathered only to count what this push would have carried.
		n := len(Convert(s.gather(), s.o.ExternalLabels))
		s.count(ResultDropped, float64(n))
		s.setFailing(true, fmt.Errorf("%w (dropped %d samples, the next push carries the current values)", err, n))
		return ResultDropped
	}
	mfs := s.gather()
	now := s.o.Clock.Now()
	series := Convert(mfs, s.o.ExternalLabels)
	ts := now.UnixMilli()
	if s.lastPush.UnixMilli() >= ts {
		ts = s.lastPush.UnixMilli() + 1 // never two samples at one timestamp
	}
	s.lastPush = time.UnixMilli(ts)
	encode := func() []byte {
		if s.v2 {
			return snappy.Encode(nil, MarshalV2(series, ts))
		}
		return snappy.Encode(nil, Marshal(series, ts))
	}
	body := encode()
	n := float64(len(series))

	backoff := s.o.MinBackoff
	for attempt := 1; ; attempt++ {
		v2 := s.v2
		status, retryAfter, written, err := s.send(ctx, body, deadline, v2)
		if retryAfter > 0 {
			// Kept beyond this push: when the wait outlasts its
			// interval, the next push waits for the rest of it.
			s.notBefore = s.o.Clock.Now().Add(retryAfter)
		}
		if v2 && (status == http.StatusUnsupportedMediaType || (err == nil && written < 0)) {
			s.o.Logger.Warn("remote write: the receiver does not accept remote-write 2.0; sending 1.0 from now on", "status", status)
			s.v2 = false
			body = encode()
			attempt--
			continue
		}
		if err == nil {
			if v2 && float64(written) < n {
				// A 2.0 receiver says how many it wrote; the rest it refused.
				s.count(ResultFailed, n-float64(written))
				n = float64(written)
			}
			s.count(ResultSent, n)
			if s.o.Metrics != nil {
				s.o.Metrics.lastSuccess.WithLabelValues(s.hash).Set(float64(s.o.Clock.Now().UnixNano()) / 1e9)
			}
			s.setFailing(false, nil)
			return ResultSent
		}
		if !retryable(status) {
			s.count(ResultFailed, n)
			s.logPermanent(err)
			s.setFailing(true, nil)
			return ResultFailed
		}
		wait := backoff
		if retryAfter > 0 {
			wait = retryAfter
		}
		backoff = min(2*backoff, s.o.MaxBackoff)
		if ctx.Err() != nil || !s.o.Clock.Now().Add(wait).Before(deadline) {
			s.count(ResultDropped, n)
			s.setFailing(true, fmt.Errorf("%w (after %d attempts; dropped %d samples, the next push carries the current values)", err, attempt, len(series)))
			return ResultDropped
		}
		s.o.Logger.Debug("remote write: retrying", "err", err, "attempt", attempt, "wait", wait)
		timer := s.o.Clock.NewTimer(wait)
		select {
		case <-ctx.Done():
			timer.Stop()
			s.count(ResultDropped, n)
			s.setFailing(true, fmt.Errorf("%w (shutting down; dropped %d samples)", err, len(series)))
			return ResultDropped
		case <-timer.C():
		}
	}
}

// gather gathers the registry.
func (s *Sender) gather() []*dto.MetricFamily {
	mfs, err := s.o.Gatherer.Gather()
	if err != nil {
		// A partial gather still carries every metric that worked; the
		// same error every interval is logged once.
		s.mu.Lock()
		seen := s.logged["gather: "+err.Error()]
		if !seen && len(s.logged) < 100 {
			s.logged["gather: "+err.Error()] = true
		}
		s.mu.Unlock()
		if !seen {
			s.o.Logger.Warn("remote write: gathering metrics (pushing what was gathered)", "err", err)
		}
	}
	return mfs
}

// waitRetryAfter waits until the end of the receiver's last Retry-After,
// if it is still running: the receiver asked for no request before. It
// fails when that end is not before deadline or ctx ends first.
func (s *Sender) waitRetryAfter(ctx context.Context, deadline time.Time) error {
	wait := s.notBefore.Sub(s.o.Clock.Now())
	if wait <= 0 {
		return nil
	}
	if !s.notBefore.Before(deadline) {
		return fmt.Errorf("the receiver asked for no request for another %s, past this push's interval", wait.Round(time.Millisecond))
	}
	s.o.Logger.Debug("remote write: waiting for the receiver's Retry-After", "wait", wait)
	timer := s.o.Clock.NewTimer(wait)
	select {
	case <-ctx.Done():
		timer.Stop()
		return fmt.Errorf("shutting down while waiting for the receiver's Retry-After: %w", ctx.Err())
	case <-timer.C():
		return nil
	}
}

func (s *Sender) count(result string, n float64) {
	if s.o.Metrics != nil {
		s.o.Metrics.samples.WithLabelValues(s.hash, result).Add(n)
	}
}

// setFailing logs transitions only: the first dropped push after a
// success, and the recovery, not every failure of an outage.
func (s *Sender) setFailing(failing bool, err error) {
	s.mu.Lock()
	was := s.failing
	s.failing = failing
	s.mu.Unlock()
	switch {
	case failing && !was && err != nil:
		s.o.Logger.Warn("remote write: receiver unavailable, retrying every interval", "err", err)
	case !failing && was:
		s.o.Logger.Info("remote write: receiver accepts pushes again")
	}
}

// logPermanent logs each distinct refusal once (a misconfiguration repeats
// it every interval).
func (s *Sender) logPermanent(err error) {
	msg := err.Error()
	s.mu.Lock()
	seen := s.logged[msg]
	if !seen && len(s.logged) < 100 {
		s.logged[msg] = true
	}
	s.mu.Unlock()
	if !seen {
		s.o.Logger.Error("remote write: receiver refused the push; not retried (logged once per distinct error)", "err", err)
	}
}

// statusNetwork marks a transport error (retryable).
const statusNetwork = 0

func retryable(status int) bool {
	return status == statusNetwork || status == http.StatusTooManyRequests || status >= 500
}

// send makes one request; it returns the status (0 for transport errors),
// the Retry-After wait the receiver asked for, the samples a 2.0 receiver
// says it wrote (-1 when it does not say), and an error unless 2xx.
func (s *Sender) send(ctx context.Context, body []byte, deadline time.Time, v2 bool) (int, time.Duration, int, error) {
	timeout := min(s.o.Timeout, deadline.Sub(s.o.Clock.Now()))
	if timeout <= 0 {
		return statusNetwork, 0, -1, errors.New("no time left in this interval")
	}
	rctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(rctx, http.MethodPost, s.o.URL, bytes.NewReader(body))
	if err != nil {
		return http.StatusBadRequest, 0, -1, fmt.Errorf("building request: %w", err)
	}
	req.Header.Set("Content-Encoding", Encoding)
	if v2 {
		req.Header.Set("Content-Type", ContentTypeV2)
		req.Header.Set(VersionKey, VersionValueV2)
	} else {
		req.Header.Set("Content-Type", ContentType)
		req.Header.Set(VersionKey, VersionValue)
	}
	req.Header.Set("User-Agent", s.o.UserAgent)
	resp, err := s.o.Client.Do(req)
	if err != nil {
		return statusNetwork, 0, -1, fmt.Errorf("sending: %w", pushhttp.ScrubURL(err))
	}
	defer resp.Body.Close()
	msg, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20))
	written := -1
	if v := resp.Header.Get(SamplesWrittenKeyV2); v != "" {
		if n, err := strconv.Atoi(v); err == nil && n >= 0 {
			written = n
		}
	}
	if resp.StatusCode/100 == 2 {
		return resp.StatusCode, 0, written, nil
	}
	status := resp.StatusCode
	if status/100 == 3 {
		status = http.StatusBadRequest // a redirect of a write is a misconfiguration, not an outage
	}
	var wait time.Duration
	if retryable(status) {
		wait = pushhttp.RetryAfter(resp.Header.Get("Retry-After"), s.o.Clock.Now())
	}
	text := strings.TrimSpace(strings.ToValidUTF8(string(msg), "?"))
	if i := strings.IndexByte(text, '\n'); i >= 0 {
		text = text[:i]
	}
	return status, wait, written, fmt.Errorf("receiver answered %s: %s", resp.Status, text)
}
