// Package amy follows Amy turn event streams (Server-Sent Events) and taps
// the ones clients read through a reverse proxy, handing every event to the
// Amy store, which counts each once per turn.
package amy

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/amp-exporter/amp-exporter/internal/clock"
	"github.com/amp-exporter/amp-exporter/parser/amyturn"
	"github.com/amp-exporter/amp-exporter/parser/sse"
	"github.com/amp-exporter/amp-exporter/store"
)

// Upstream is one configured Amy API.
type Upstream struct {
	Name        string
	BaseURL     *url.URL
	APIKey      string // or:
	APIKeyFile  string // read at every connection
	IdleTimeout time.Duration
	TurnTimeout time.Duration
}

// LogValue keeps the key out of structured logs.
func (u Upstream) LogValue() slog.Value {
	return slog.GroupValue(slog.String("name", u.Name), slog.String("base_url", u.BaseURL.Redacted()))
}

// key returns the bearer token; the file wins when set, and is read now so
// a rotated key is used from the next connection.
func (u Upstream) key() (string, error) {
	if u.APIKeyFile == "" {
		return u.APIKey, nil
	}
	b, err := os.ReadFile(u.APIKeyFile)
	if err != nil {
		return "", fmt.Errorf("read api_key_file: %w", err)
	}
	return strings.TrimSpace(string(b)), nil
}

// keySource names where the upstream's key comes from, for log lines.
func (u Upstream) keySource() string {
	switch {
	case u.APIKeyFile != "":
		return "api_key_file"
	case u.APIKey != "":
		return "api_key"
	}
	return "none"
}

// eventsURL is GET {base}/v1/turns/{id}/events.
func (u Upstream) eventsURL(turn string) string {
	base := *u.BaseURL
	base.Path = strings.TrimSuffix(base.Path, "/") + "/v1/turns/" + url.PathEscape(turn) + "/events"
	base.RawPath = ""
	return base.String()
}

// Backoff bounds.
const (
	backoffMin          = 500 * time.Millisecond
	backoffMax          = 30 * time.Second
	unauthorizedBackoff = 5 * time.Minute // a wrong key is not retried in a loop
	maxFollowers        = 1000            // per upstream
)

// Client follows turns. One goroutine per followed turn.
type Client struct {
	store *store.AmyStore
	log   *slog.Logger
	http  *http.Client
	clock clock.Clock

	mu        sync.Mutex
	following map[string]bool // upstream + "\x00" + turn
	perUp     map[string]int
	wg        sync.WaitGroup
}

// NewClient returns a client; httpClient nil means one with sane transport
// timeouts and no overall timeout (streams are long).
func NewClient(store *store.AmyStore, log *slog.Logger, httpClient *http.Client, clk clock.Clock) *Client {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if httpClient == nil {
		tr := http.DefaultTransport.(*http.Transport).Clone()
		tr.ResponseHeaderTimeout = 30 * time.Second
		httpClient = &http.Client{Transport: tr}
	}
	if httpClient.CheckRedirect == nil {
		hc := *httpClient
		hc.CheckRedirect = sameOriginRedirects
		httpClient = &hc
	}
	if clk == nil {
		clk = clock.Real{}
	}
	return &Client{store: store, log: log, http: httpClient, clock: clk,
		following: map[string]bool{}, perUp: map[string]int{}}
}

// errRedirectElsewhere: the upstream redirected a request to another
// scheme, host or port.
var errRedirectElsewhere = errors.New("redirect to another scheme, host or port refused (credentials go only to the configured base_url)")

// maxRedirects is net/http's default.
const maxRedirects = 10

// sameOriginRedirects is the follower's redirect rule. Go's default keeps
// Authorization when only the port or the scheme changes (the host name
// matches); the follower's credentials (the configured key, a proxy
// client's token) must reach no one but the configured scheme, host and
// port. A redirect within that origin is followed; any other is refused,
// and the follower counts an error and retries the configured URL.
func sameOriginRedirects(req *http.Request, via []*http.Request) error {
	if len(via) >= maxRedirects {
		return fmt.Errorf("stopped after %d redirects", maxRedirects)
	}
	if !sameOrigin(req.URL, via[0].URL) {
		return errRedirectElsewhere
	}
	return nil
}

// sameOrigin compares scheme, host and port (an absent port is the
// scheme's default).
func sameOrigin(a, b *url.URL) bool {
	return strings.EqualFold(a.Scheme, b.Scheme) && strings.EqualFold(a.Hostname(), b.Hostname()) &&
		effectivePort(a) == effectivePort(b)
}

func effectivePort(u *url.URL) string {
	if p := u.Port(); p != "" {
		return p
	}
	switch strings.ToLower(u.Scheme) {
	case "http":
		return "80"
	case "https":
		return "443"
	}
	return ""
}

// Wait blocks until every follower has stopped (after ctx ended).
func (c *Client) Wait() { c.wg.Wait() }

// Follow starts following a turn unless it is already followed or over.
// auth, when set, is the Authorization header to use (the creating
// client's, for turns discovered through the proxy); otherwise the
// upstream's key is used.
func (c *Client) Follow(ctx context.Context, up Upstream, turn, auth string) {
	k := up.Name + "\x00" + turn
	c.mu.Lock()
	if c.following[k] || c.store.Finished(up.Name, turn) {
		c.mu.Unlock()
		return
	}
	if c.perUp[up.Name] >= maxFollowers {
		c.mu.Unlock()
		c.log.Warn("too many Amy turns followed at once; not following another", "upstream", up.Name, "limit", maxFollowers)
		return
	}
	c.following[k] = true
	c.perUp[up.Name]++
	c.mu.Unlock()
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		defer func() {
			c.mu.Lock()
			delete(c.following, k)
			c.perUp[up.Name]--
			c.mu.Unlock()
		}()
		defer c.store.StreamEnded(up.Name, turn)
		c.follow(ctx, up, turn, auth)
	}()
}

// outcome of one connection.
type outcome struct {
	terminal   bool   // the turn ended
	status     int    // HTTP status when not 200
	reason     string // reconnect reason
	retryAfter time.Duration
	err        error
}

func (c *Client) follow(ctx context.Context, up Upstream, turn, auth string) {
	deadline := c.clock.Now().Add(up.TurnTimeout)
	// turn_timeout also ends a connection that stays open without the turn
	// ending (kept alive by comments) and a sleep between attempts: tctx
	// is cancelled when it expires.
	tctx, expire := context.WithCancel(ctx)
	defer expire()
	expiry := c.clock.NewTimer(up.TurnTimeout)
	defer expiry.Stop()
	go func() {
		select {
		case <-tctx.Done():
		case <-expiry.C():
			expire()
		}
	}()
	dec := amyturn.NewDecoder()
	lastID := "" // for ids that are not numbers; numeric ones come from the store
	attempt := 0
	reportedAuth := false
	reportedRedirect := false
	for ctx.Err() == nil {
		if c.store.Finished(up.Name, turn) {
			return
		}
		if tctx.Err() != nil || c.clock.Now().After(deadline) {
			c.store.GaveUp(up.Name, turn, store.GivenUpTimeout)
			c.log.Warn("Amy turn did not end within turn_timeout; no longer followed", "upstream", up.Name, "turn", turn, "turn_timeout", up.TurnTimeout)
			return
		}
		resume := resumeFrom(c.store.ResumeID(up.Name, turn), lastID)
		o, seenID, retry := c.connect(tctx, up, turn, auth, resume, dec)
		if seenID != "" {
			lastID = seenID
		}
		if o.terminal || ctx.Err() != nil {
			c.store.SetUp(up.Name, turn, true)
			return
		}
		if tctx.Err() != nil {
			continue // turn_timeout: given up above
		}
		switch {
		case o.status == http.StatusNotFound:
			c.store.GaveUp(up.Name, turn, store.GivenUpNotFound)
			c.log.Info("Amy turn not found (past the replay window); no longer followed", "upstream", up.Name, "turn", turn)
			return
		case (o.status == http.StatusUnauthorized || o.status == http.StatusForbidden) && auth != "":
			// The creating client's token (short-lived: client JWTs live
			// about a minute) no longer works: go on with the upstream's
			// own key, at once.
			c.store.Reconnected(up.Name, store.ReconnectUnauthorized)
			auth = ""
			c.log.Info("Amy refused the client's token this turn was learned with (expired?); following it with the upstream's configured key",
				"upstream", up.Name, "turn", turn, "status", o.status, "key_source", up.keySource())
			continue
		case o.status == http.StatusUnauthorized || o.status == http.StatusForbidden:
			c.store.SetUp(up.Name, turn, false)
			c.store.Reconnected(up.Name, store.ReconnectUnauthorized)
			if !reportedAuth {
				reportedAuth = true
				c.log.Error("Amy refused the upstream's configured API key; retrying only every few minutes", "upstream", up.Name,
					"status", o.status, "key_source", up.keySource(), "retry_in", unauthorizedBackoff)
			}
			c.sleep(tctx, unauthorizedBackoff)
			continue
		}
		if o.reason == "" {
			o.reason = store.ReconnectError
		}
		if errors.Is(o.err, errRedirectElsewhere) && !reportedRedirect {
			reportedRedirect = true
			c.log.Warn("Amy redirected a turn's event stream to another scheme, host or port; not followed, retrying base_url (fix base_url?)",
				"upstream", up.Name, "turn", turn)
		}
		if o.reason != store.ReconnectEOF {
			c.store.SetUp(up.Name, turn, false)
			c.log.Debug("Amy stream broke; reconnecting", "upstream", up.Name, "turn", turn, "reason", o.reason, "err", o.err)
		}
		c.store.Reconnected(up.Name, o.reason)
		if o.reason == store.ReconnectEOF && seenID != "" {
			attempt = 0 // the stream was healthy until it ended
		}
		attempt++
		wait := backoff(attempt)
		if retry > wait {
			wait = min(retry, 10*backoffMax) // as Retry-After
		}
		if o.retryAfter > wait {
			wait = o.retryAfter
		}
		c.sleep(tctx, wait)
	}
}

// backoff is capped exponential with jitter (half to full).
func backoff(attempt int) time.Duration {
	d := backoffMin << min(attempt, 10)
	if d > backoffMax {
		d = backoffMax
	}
	return time.Duration(float64(d) * (0.5 + 0.5*rand.Float64()))
}

func (c *Client) sleep(ctx context.Context, d time.Duration) {
	t := c.clock.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C():
	}
}

// connect makes one connection and reads events until the turn ends or the
// stream breaks. It returns the last event id seen and the server's retry
// field, if any.
func (c *Client) connect(ctx context.Context, up Upstream, turn, auth, resume string, dec *amyturn.Decoder) (outcome, string, time.Duration) {
	if auth == "" {
		key, err := up.key()
		if err != nil {
			c.log.Error("cannot read the Amy API key", "upstream", up.Name, "err", err)
			return outcome{reason: store.ReconnectError, err: err}, "", 0
		}
		if key != "" {
			auth = "Bearer " + key
		}
	}
	cctx, cancel := context.WithCancel(ctx)
	defer cancel()
	req, err := http.NewRequestWithContext(cctx, http.MethodGet, up.eventsURL(turn), nil)
	if err != nil {
		return outcome{reason: store.ReconnectError, err: err}, "", 0
	}
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("Cache-Control", "no-cache")
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	if resume != "" {
		req.Header.Set("Last-Event-ID", resume)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return outcome{reason: store.ReconnectError, err: redact(err)}, "", 0
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
		o := outcome{status: resp.StatusCode, reason: store.ReconnectError}
		switch {
		case resp.StatusCode == http.StatusTooManyRequests:
			o.reason = store.ReconnectHTTP429
		case resp.StatusCode >= 500:
			o.reason = store.ReconnectHTTP5xx
		}
		o.retryAfter = retryAfter(resp.Header.Get("Retry-After"), c.clock.Now())
		return o, "", 0
	}
	c.store.SetUp(up.Name, turn, true)

	// The idle watchdog: any byte (events or keepalive comments) resets
	// it; silence for IdleTimeout cancels the request.
	var idle sync.Mutex
	idled := false
	timer := c.clock.NewTimer(up.IdleTimeout)
	defer timer.Stop()
	activity := make(chan struct{}, 1)
	go func() {
		for {
			select {
			case <-cctx.Done():
				return
			case <-activity:
				timer.Reset(up.IdleTimeout)
			case <-timer.C():
				idle.Lock()
				idled = true
				idle.Unlock()
				cancel()
				return
			}
		}
	}()
	body := &activityReader{r: resp.Body, activity: activity}
	parser := sse.NewParser(body, sse.Options{SkipOversized: true})
	seen := ""
	for {
		ev, err := parser.Next()
		if err != nil {
			retry, _ := parser.Retry()
			idle.Lock()
			wasIdle := idled
			idle.Unlock()
			switch {
			case wasIdle:
				return outcome{reason: store.ReconnectIdle}, seen, retry
			case errors.Is(err, io.EOF):
				return outcome{reason: store.ReconnectEOF}, seen, retry
			default:
				return outcome{reason: store.ReconnectError, err: redact(err)}, seen, retry
			}
		}
		if ev.ID != "" && len(ev.ID) <= amyturn.MaxIDBytes {
			seen = ev.ID
		}
		if ev.Oversized {
			// Skipped, counted, and remembered: the resume goes on
			// after it instead of failing on it at every reconnect.
			c.store.TooLarge(up.Name, turn, ev.ID, c.clock.Now())
			c.log.Warn("Amy event over the size limit; skipped", "upstream", up.Name, "event", ev.Event)
			continue
		}
		rec, derr := dec.Decode(ev.Event, ev.Data)
		if derr != nil {
			c.store.BadEvent(up.Name, turn, ev.ID, c.clock.Now())
			c.log.Debug("Amy event data does not decode; skipped", "upstream", up.Name, "event", ev.Event, "err", derr)
			continue
		}
		c.store.Observe(up.Name, turn, ev.ID, rec, c.clock.Now())
		if rec.Name == amyturn.EventTurnCompleted || rec.Name == amyturn.EventTurnFailed {
			return outcome{terminal: true}, seen, 0
		}
	}
}

// resumeFrom picks the Last-Event-Id of a follower's next connection: the
// store's (the end of the ids seen from the turn's start, by any reader) or
// the last id this follower read itself, whichever is further. Everything up
// to either was seen; an id that is not a number is only the follower's.
func resumeFrom(store, own string) string {
	if own == "" {
		return store
	}
	if store == "" {
		return own
	}
	a, errA := strconv.ParseInt(store, 10, 64)
	b, errB := strconv.ParseInt(own, 10, 64)
	if errA != nil || errB != nil {
		return own
	}
	if a > b {
		return store
	}
	return own
}

// activityReader signals every read that returned bytes.
type activityReader struct {
	r        io.Reader
	activity chan<- struct{}
}

func (a *activityReader) Read(p []byte) (int, error) {
	n, err := a.r.Read(p)
	if n > 0 {
		select {
		case a.activity <- struct{}{}:
		default:
		}
	}
	return n, err
}

// retryAfter parses a Retry-After header (seconds or an HTTP date),
// capped at backoffMax × 10.
func retryAfter(h string, now time.Time) time.Duration {
	if h == "" {
		return 0
	}
	var d time.Duration
	if secs, err := strconv.Atoi(strings.TrimSpace(h)); err == nil && secs >= 0 {
		d = time.Duration(secs) * time.Second
	} else if t, err := http.ParseTime(h); err == nil {
		d = t.Sub(now)
	}
	return min(max(d, 0), 10*backoffMax)
}

// redact strips any URL userinfo from an error (keys never travel there,
// but a misconfigured base_url must not leak through a log line).
func redact(err error) error {
	var uerr *url.Error
	if errors.As(err, &uerr) {
		if u, perr := url.Parse(uerr.URL); perr == nil && u.User != nil {
			u.User = nil
			return &url.Error{Op: uerr.Op, URL: u.String(), Err: uerr.Err}
		}
	}
	return err
}
