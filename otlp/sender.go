package otlp

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/collector/pdata/pmetric"

	"github.com/amp-exporter/amp-exporter/internal/clock"
	"github.com/amp-exporter/amp-exporter/internal/pushhttp"
	"github.com/amp-exporter/amp-exporter/store"
)

// Options configure one Sender.
type Options struct {
	// Endpoint is the receiver's full OTLP/HTTP metrics URL
	// (…/v1/metrics).
	Endpoint string
	// Interval between pushes; a failing push is retried within it.
	Interval time.Duration
	// Timeout bounds one request.
	Timeout time.Duration
	// Resource are the resource attributes of every push.
	Resource map[string]string
	// GenAI also sends gen_ai.client.token.usage (genai.go).
	GenAI bool
	// Headers are added to every request (those taken from the
	// environment; the HTTP client adds the configured ones).
	Headers map[string]string
	// Client sends the requests (auth, TLS and proxy configured on it).
	Client *http.Client
	// Gatherer is what /metrics serves.
	Gatherer prometheus.Gatherer
	// Starts hold the series' start times, shared by every sender and
	// kept in the state; nil starts every series at each push (tests).
	Starts *store.SeriesStarts
	// Ready reports whether the first scan of the sources is done; no push
	// happens before, so a restart never pushes counters that are still
	// climbing back to their totals. Nil means always ready.
	Ready     func() bool
	UserAgent string
	Clock     clock.Clock
	Logger    *slog.Logger
	Metrics   *Metrics
	// MinBackoff and MaxBackoff bound the wait between retries (defaults
	// 500ms and 5s); a Retry-After from the receiver replaces it, and
	// holds the next push back too when it outlasts the interval.
	MinBackoff, MaxBackoff time.Duration
	// FinalTimeout bounds the last push at shutdown (default: Timeout,
	// at most 5s).
	FinalTimeout time.Duration
}

// Sender pushes the registry to one OTLP receiver.
type Sender struct {
	o    Options
	hash string

	mu       sync.Mutex
	logged   map[string]bool // distinct refusals already logged
	failing  bool            // the last push did not succeed
	lastPush time.Time       // time of the points of the last push
	prev     *Previous       // values of the last push, for Convert
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
	s := &Sender{o: o, hash: URLHash(o.Endpoint), logged: map[string]bool{}, prev: NewPrevious()}
	s.o.Logger = o.Logger.With("url_hash", s.hash)
	if o.Metrics != nil {
		o.Metrics.init(s.hash)
	}
	return s
}

// Hash is the receiver's url_hash label.
func (s *Sender) Hash() string { return s.hash }

// Run pushes every interval until ctx ends, then pushes once more (bounded
// by FinalTimeout) so the receiver has the last values. Started before the
// first scan is done, it checks every ReadyPoll and makes its first push as
// soon as the scan is done, rather than an interval later.
func (s *Sender) Run(ctx context.Context) error {
	t := s.o.Clock.NewTicker(s.o.Interval)
	defer t.Stop()
	var poll <-chan time.Time
	if s.ready() {
		s.Push(ctx, s.o.Clock.Now().Add(s.o.Interval))
	} else {
		p := s.o.Clock.NewTicker(min(ReadyPoll, s.o.Interval))
		defer p.Stop()
		poll = p.C()
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
		case <-poll:
			if s.ready() {
				poll = nil // from now on, every interval
				s.Push(ctx, s.o.Clock.Now().Add(s.o.Interval))
			}
		case <-t.C():
			if s.ready() {
				poll = nil
				s.Push(ctx, s.o.Clock.Now().Add(s.o.Interval))
			}
		}
	}
}

// ReadyPoll is how often a sender started before the first scan is done
// checks whether it is.
const ReadyPoll = time.Second

func (s *Sender) ready() bool { return s.o.Ready == nil || s.o.Ready() }

// Push gathers the registry now and sends it, retrying until deadline;
// while the receiver's last Retry-After runs (it may outlast the push that
// got it), Push first waits for its end and gathers then, or drops the
// push without a request when that end is not before deadline. What is
// still unsent at deadline is dropped and counted, never kept for later:
// every value is cumulative or current, so the next push carries all of
// it, and a receiver never gets old points after newer ones. It returns
// the result the data points were counted under (sent also when the
// receiver rejected some of them).
// Pushes must not overlap: Run calls it from one goroutine.
func (s *Sender) Push(ctx context.Context, deadline time.Time) string {
	if err := s.waitRetryAfter(ctx, deadline); err != nil {
		// Gathered only to count what this push would have carried.
		_, points := s.convert()
		s.count(ResultDropped, points)
		s.setFailing(true, fmt.Errorf("%w (dropped %d data points, the next push carries the current values)", err, points))
		return ResultDropped
	}
	md, points := s.convert()
	body, err := Marshal(md)
	if err != nil {
		s.count(ResultFailed, points)
		s.logPermanent("otlp: cannot encode the push", err)
		return ResultFailed
	}

	backoff := s.o.MinBackoff
	for attempt := 1; ; attempt++ {
		a := s.send(ctx, body, deadline)
		if a.retryAfter > 0 {
			// Kept beyond this push: when the wait outlasts its
			// interval, the next push waits for the rest of it.
			s.notBefore = s.o.Clock.Now().Add(a.retryAfter)
		}
		if a.err == nil {
			rejected := int(min(a.rejected, int64(points)))
			s.count(ResultRejected, rejected)
			s.count(ResultSent, points-rejected)
			if a.rejected > 0 && s.once("partial: "+a.message) {
				s.o.Logger.Warn("otlp: the receiver rejected some data points; they are not sent again (logged once per distinct message)",
					"rejected", a.rejected, "points", points, "message", a.message)
			}
			if s.o.Metrics != nil {
				s.o.Metrics.lastSuccess.WithLabelValues(s.hash).Set(float64(s.o.Clock.Now().UnixNano()) / 1e9)
			}
			s.setFailing(false, nil)
			return ResultSent
		}
		if !retryable(a.status) {
			s.count(ResultFailed, points)
			s.logPermanent("otlp: receiver refused the push; not retried (logged once per distinct error)", a.err)
			s.setFailing(true, nil)
			return ResultFailed
		}
		wait := backoff
		if a.retryAfter > 0 {
			wait = a.retryAfter
		}
		backoff = min(2*backoff, s.o.MaxBackoff)
		if ctx.Err() != nil || !s.o.Clock.Now().Add(wait).Before(deadline) {
			s.count(ResultDropped, points)
			s.setFailing(true, fmt.Errorf("%w (after %d attempts; dropped %d data points, the next push carries the current values)", a.err, attempt, points))
			return ResultDropped
		}
		s.o.Logger.Debug("otlp: retrying", "err", a.err, "attempt", attempt, "wait", wait)
		timer := s.o.Clock.NewTimer(wait)
		select {
		case <-ctx.Done():
			timer.Stop()
			s.count(ResultDropped, points)
			s.setFailing(true, fmt.Errorf("%w (shutting down; dropped %d data points)", a.err, points))
			return ResultDropped
		case <-timer.C():
		}
	}
}

// convert gathers the registry now and converts it for the receiver.
func (s *Sender) convert() (pmetric.Metrics, int) {
	mfs, err := s.o.Gatherer.Gather()
	if err != nil {
		// A partial gather still carries every metric that worked; the
		// same error every interval is logged once.
		if s.once("gather: " + err.Error()) {
			s.o.Logger.Warn("otlp: gathering metrics (pushing what was gathered)", "err", err)
		}
	}
	now := s.o.Clock.Now().Truncate(time.Millisecond)
	if !now.After(s.lastPush) {
		now = s.lastPush.Add(time.Millisecond) // never two pushes at one time
	}
	s.lastPush = now
	return Convert(mfs, ConvertOptions{Resource: s.o.Resource, Starts: s.o.Starts, Now: now, GenAI: s.o.GenAI, Previous: s.prev})
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
	s.o.Logger.Debug("otlp: waiting for the receiver's Retry-After", "wait", wait)
	timer := s.o.Clock.NewTimer(wait)
	select {
	case <-ctx.Done():
		timer.Stop()
		return fmt.Errorf("shutting down while waiting for the receiver's Retry-After: %w", ctx.Err())
	case <-timer.C():
		return nil
	}
}

func (s *Sender) count(result string, n int) {
	if s.o.Metrics != nil && n > 0 {
		s.o.Metrics.points.WithLabelValues(s.hash, result).Add(float64(n))
	}
}

// once reports whether key is seen for the first time (up to 100 keys;
// beyond, nothing more is logged).
func (s *Sender) once(key string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.logged[key] || len(s.logged) >= 100 {
		return false
	}
	s.logged[key] = true
	return true
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
		s.o.Logger.Warn("otlp: receiver unavailable, retrying every interval", "err", err)
	case !failing && was:
		s.o.Logger.Info("otlp: receiver accepts pushes again")
	}
}

// logPermanent logs each distinct refusal once (a misconfiguration repeats
// it every interval).
func (s *Sender) logPermanent(msg string, err error) {
	if s.once(err.Error()) {
		s.o.Logger.Error(msg, "err", err)
	}
}

// statusNetwork marks a transport error (retryable).
const statusNetwork = 0

// retryable follows the OTLP/HTTP specification: a transport error, 429,
// 502, 503 and 504 are retried; every other answer is final.
func retryable(status int) bool {
	switch status {
	case statusNetwork, http.StatusTooManyRequests, http.StatusBadGateway,
		http.StatusServiceUnavailable, http.StatusGatewayTimeout:
		return true
	}
	return false
}

// answer is what one request came back with.
type answer struct {
	status     int           // 0 for a transport error
	retryAfter time.Duration // the wait the receiver asked for
	rejected   int64         // data points a partial success rejected
	message    string        // the receiver's message about them
	err        error         // nil for a 2xx
}

// Bounds of what is read of an answer: a receiver's message is short, and
// a body beyond these is not waited for.
const (
	maxAnswer = 64 << 10
	maxDrain  = 1 << 20
)

// send makes one request.
func (s *Sender) send(ctx context.Context, body []byte, deadline time.Time) answer {
	timeout := min(s.o.Timeout, deadline.Sub(s.o.Clock.Now()))
	if timeout <= 0 {
		return answer{err: errors.New("no time left in this interval")}
	}
	rctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(rctx, http.MethodPost, s.o.Endpoint, bytes.NewReader(body))
	if err != nil {
		return answer{status: http.StatusBadRequest, err: fmt.Errorf("building request: %w", err)}
	}
	for k, v := range s.o.Headers {
		req.Header.Set(k, v)
	}
	req.Header.Set("Content-Type", ContentType)
	req.Header.Set("Content-Encoding", Encoding)
	req.Header.Set("User-Agent", s.o.UserAgent)
	resp, err := s.o.Client.Do(req)
	if err != nil {
		return answer{err: fmt.Errorf("sending: %w", pushhttp.ScrubURL(err))}
	}
	defer resp.Body.Close()
	msg, _ := io.ReadAll(io.LimitReader(resp.Body, maxAnswer+1))
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, maxDrain))
	whole := len(msg) <= maxAnswer
	ct := resp.Header.Get("Content-Type")
	if resp.StatusCode/100 == 2 {
		a := answer{status: resp.StatusCode}
		if whole {
			// An answer that does not decode is still a success: the
			// receiver took the request.
			a.rejected, a.message, _ = PartialSuccess(ct, msg)
		}
		return a
	}
	status := resp.StatusCode
	if status/100 == 3 {
		status = http.StatusBadRequest // a redirect of a push is a misconfiguration, not an outage
	}
	a := answer{status: status}
	if retryable(status) {
		a.retryAfter = pushhttp.RetryAfter(resp.Header.Get("Retry-After"), s.o.Clock.Now())
	}
	if !whole {
		msg = msg[:maxAnswer]
	}
	a.err = fmt.Errorf("receiver answered %s: %s", resp.Status, StatusMessage(ct, msg))
	return a
}
