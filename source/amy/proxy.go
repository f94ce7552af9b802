package amy

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httputil"
	"regexp"
	"strings"
	"sync"

	"github.com/amp-exporter/amp-exporter/internal/clock"
	"github.com/amp-exporter/amp-exporter/parser/amyturn"
	"github.com/amp-exporter/amp-exporter/parser/sse"
	"github.com/amp-exporter/amp-exporter/store"
)

var (
	eventsPath = regexp.MustCompile(`/v1/turns/([^/]+)/events$`)
	createPath = regexp.MustCompile(`/v1/turns/?$`)
)

// errUpgradeRefused: the upstream switched protocols although the proxy
// never forwards an Upgrade request.
var errUpgradeRefused = errors.New("upstream answered 101 Switching Protocols: upgrades are not proxied")

// maxCreateBody bounds how much of a POST /v1/turns answer is kept to find
// the new turn's id; the client gets every byte regardless.
const maxCreateBody = 1 << 20

// NewProxy returns a transparent reverse proxy to the upstream that taps
// what passes through it:
//
//   - event streams clients read (GET …/v1/turns/{id}/events, 200) are
//     parsed on the side and counted, each event once per turn however many
//     clients read it (the store deduplicates by event id);
//   - turns created through it (POST …/v1/turns, 2xx) are followed by the
//     exporter itself with the creating client's Authorization header, so
//     a turn is measured even when no client reads its stream.
//
// Requests and responses pass through unchanged: status, headers (but
// hop-by-hop ones, which HTTP forbids forwarding), and bodies, streamed
// without buffering; a client that goes away cancels the upstream request.
// Protocol upgrades are the exception: Upgrade is not forwarded, and a 101
// from the upstream is answered 502, so every connection stays HTTP, tapped
// and bounded.
func NewProxy(ctx context.Context, up Upstream, store *store.AmyStore, client *Client, log *slog.Logger, clk clock.Clock) http.Handler {
	return newProxy(ctx, up, store, client, log, clk, newHopTransport(nil))
}

// newProxy is NewProxy with the transport to the upstream given (tests
// pass one that trusts their own certificate authority).
func newProxy(ctx context.Context, up Upstream, store *store.AmyStore, client *Client, log *slog.Logger, clk clock.Clock, transport http.RoundTripper) http.Handler {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if clk == nil {
		clk = clock.Real{}
	}
	// A body in an encoding the tap cannot read (br, zstd: the client
	// asked for it) reaches the client but is not counted; said once.
	var warnOnce sync.Once
	undecodable := func(enc string) {
		warnOnce.Do(func() {
			log.Warn("Amy responses in this Content-Encoding pass through the proxy uncounted", "upstream", up.Name, "content_encoding", enc)
		})
	}
	rp := &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			// No X-Forwarded-* headers: the proxy is meant to be
			// invisible to the API.
			pr.SetURL(up.BaseURL)
			// No protocol upgrades (websocket, h2c): a switched
			// connection would leave the tap, the connection limit
			// and the server's timeouts. The reverse proxy puts
			// Upgrade back after removing hop-by-hop headers; it goes
			// again here, so the upstream sees a plain request.
			pr.Out.Header.Del("Upgrade")
			pr.Out.Header.Del("Connection")
			pr.Out = traceConn(pr.Out)
		},
		Transport:     transport,
		FlushInterval: -1, // flush every write: event streams must not wait
		ErrorLog:      slog.NewLogLogger(log.Handler(), slog.LevelWarn),
		ModifyResponse: func(resp *http.Response) error {
			if resp.StatusCode == http.StatusSwitchingProtocols {
				return errUpgradeRefused // 502 to the client
			}
			dropHopHeaders(resp)
			req := resp.Request
			var events []string // the event stream's path, with its turn
			if req.Method == http.MethodGet && resp.StatusCode == http.StatusOK {
				events = eventsPath.FindStringSubmatch(req.URL.Path)
			}
			created := req.Method == http.MethodPost && resp.StatusCode >= 200 && resp.StatusCode < 300 && createPath.MatchString(req.URL.Path)
			if events == nil && !created {
				return nil
			}
			enc := resp.Header.Get("Content-Encoding")
			if !decodable(enc) {
				undecodable(enc)
				return nil
			}
			if events != nil {
				resp.Body = tapStream(resp.Body, enc, up.Name, events[1], store, log, clk)
				return nil
			}
			auth := req.Header.Get("Authorization")
			resp.Body = &captureBody{rc: resp.Body, onClose: func(body []byte) {
				if id := turnID(decoded(body, enc)); id != "" {
					client.Follow(ctx, up, id, auth)
				}
			}}
			return nil
		},
	}
	return rp
}

// decodable reports whether the tap reads a Content-Encoding: none, or
// gzip (which Go clients, among others, ask for by default).
func decodable(enc string) bool {
	switch strings.ToLower(strings.TrimSpace(enc)) {
	case "", "identity", "gzip", "x-gzip":
		return true
	}
	return false
}

func isGzip(enc string) bool {
	enc = strings.ToLower(strings.TrimSpace(enc))
	return enc == "gzip" || enc == "x-gzip"
}

// decoded returns a captured body without its Content-Encoding (nil when
// it does not decompress), bounded like the capture.
func decoded(body []byte, enc string) []byte {
	if !isGzip(enc) {
		return body
	}
	zr, err := gzip.NewReader(bytes.NewReader(body))
	if err != nil {
		return nil
	}
	b, _ := io.ReadAll(io.LimitReader(zr, maxCreateBody))
	return b
}

// turnID finds the new turn's id in a POST /v1/turns answer: {"id": …},
// {"turn_id": …} or {"turn": {"id": …}}.
func turnID(body []byte) string {
	var v struct {
		ID     string `json:"id"`
		TurnID string `json:"turn_id"`
		Turn   struct {
			ID string `json:"id"`
		} `json:"turn"`
	}
	if json.Unmarshal(body, &v) != nil {
		return ""
	}
	for _, id := range []string{v.ID, v.TurnID, v.Turn.ID} {
		if id != "" && len(id) <= store.MaxTurnIDBytes && !strings.ContainsAny(id, "/?#") {
			return id
		}
	}
	return ""
}

// tapStream returns a body that gives the client every byte and feeds the
// same bytes to an SSE parser on the side.
func tapStream(body io.ReadCloser, enc, upstream, turn string, store *store.AmyStore, log *slog.Logger, clk clock.Clock) io.ReadCloser {
	pr, pw := io.Pipe()
	go func() {
		dec := amyturn.NewDecoder()
		var src io.Reader = pr
		if isGzip(enc) {
			zr, err := gzip.NewReader(pr)
			if err != nil {
				log.Debug("tapped Amy stream does not decompress", "upstream", upstream, "err", err)
				io.Copy(io.Discard, pr) // never block the client
				return
			}
			src = zr
		}
		p := sse.NewParser(src, sse.Options{SkipOversized: true})
		for {
			ev, err := p.Next()
			if err != nil {
				if !errors.Is(err, io.EOF) && !errors.Is(err, io.ErrClosedPipe) {
					log.Debug("tapped Amy stream ended", "upstream", upstream, "err", err)
				}
				io.Copy(io.Discard, pr) // never block the client
				return
			}
			if ev.Oversized {
				store.TooLarge(upstream, turn, ev.ID, clk.Now())
				continue
			}
			rec, derr := dec.Decode(ev.Event, ev.Data)
			if derr != nil {
				store.BadEvent(upstream, turn, ev.ID, clk.Now())
				continue
			}
			store.Observe(upstream, turn, ev.ID, rec, clk.Now())
		}
	}()
	return &teeBody{rc: body, pw: pw}
}

type teeBody struct {
	rc io.ReadCloser
	pw *io.PipeWriter
}

func (t *teeBody) Read(p []byte) (int, error) {
	n, err := t.rc.Read(p)
	if n > 0 {
		if _, werr := t.pw.Write(p[:n]); werr != nil {
			t.pw.CloseWithError(werr)
		}
	}
	if err != nil {
		t.pw.CloseWithError(err)
	}
	return n, err
}

func (t *teeBody) Close() error {
	t.pw.CloseWithError(io.ErrClosedPipe)
	return t.rc.Close()
}

// captureBody passes a response through and hands its first bytes to
// onClose when the client is done with it.
type captureBody struct {
	rc      io.ReadCloser
	buf     bytes.Buffer
	onClose func([]byte)
	done    bool
}

func (c *captureBody) Read(p []byte) (int, error) {
	n, err := c.rc.Read(p)
	if n > 0 && c.buf.Len() < maxCreateBody {
		c.buf.Write(p[:min(n, maxCreateBody-c.buf.Len())])
	}
	if errors.Is(err, io.EOF) && !c.done {
		c.done = true
		c.onClose(c.buf.Bytes())
	}
	return n, err
}

func (c *captureBody) Close() error { return c.rc.Close() }

// endToEnd are the response headers forwarded when the upstream's
// Connection header is unknown (see dropUnknownHopHeaders): the standard
// end-to-end ones an API answer carries.
var endToEnd = map[string]bool{
	"Content-Type": true, "Content-Length": true, "Content-Encoding": true, "Content-Language": true,
	"Content-Disposition": true, "Content-Location": true, "Content-Range": true,
	"Cache-Control": true, "Date": true, "Etag": true, "Expires": true, "Last-Modified": true,
	"Location": true, "Retry-After": true, "Vary": true, "Www-Authenticate": true, "Allow": true,
	"Set-Cookie": true, "Pragma": true, "Server": true, "Strict-Transport-Security": true,
	"X-Request-Id": true, "X-Content-Type-Options": true, "Accept-Ranges": true, "Age": true,
	"Access-Control-Allow-Origin": true, "Access-Control-Allow-Credentials": true,
	"Access-Control-Expose-Headers": true, "Access-Control-Allow-Headers": true,
	"Access-Control-Allow-Methods": true, "Access-Control-Max-Age": true,
}

// dropUnknownHopHeaders: Go's client deletes the whole Connection header
// of a response when it says "close" (resp.Close), before the reverse proxy
// can remove the hop-by-hop headers it names (`Connection: close,
// X-Secret-Hop`). Those names are then unknown, so only standard
// end-to-end headers are forwarded: a hop-by-hop header never leaks.
func dropUnknownHopHeaders(resp *http.Response) {
	if !resp.Close || resp.ProtoMajor != 1 {
		return
	}
	for k := range resp.Header {
		if !endToEnd[http.CanonicalHeaderKey(k)] {
			resp.Header.Del(k)
		}
	}
}
