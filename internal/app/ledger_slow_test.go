package app

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/amp-exporter/amp-exporter/internal/testsupport/testutil"
	"github.com/amp-exporter/amp-exporter/ledger"
)

var ledgerStall = flag.Duration("ledger.stall", time.Second, "TestLedgerSlowReadersCostOnlyTheirOwn's stall bound (0: the exporter's default)")

// smallBuffers gives its first n connections a small kernel send buffer,
// so that a response of a few hundred kilobytes cannot disappear into the
// buffers of a client that does not read; later ones keep the system's.
type smallBuffers struct {
	net.Listener
	n *atomic.Int64
}

func (l smallBuffers) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if tc, ok := c.(*net.TCPConn); ok && l.n.Add(-1) >= 0 {
		_ = tc.SetWriteBuffer(8 << 10)
	}
	return c, err
}

// bigLedger is a ledger whose JSON is about 800 KB.
func bigLedger() *fakeLedger {
	f := &fakeLedger{}
	for i := range 4_000 {
		f.entries = append(f.entries, ledger.Entry{Start: int64(i) * 900_000, Session: fmt.Sprintf("T-%036d", i), Model: "claude-sonnet-4-5",
			Repo: "github.com/acme/web", Usage: ledger.Usage{Input: int64(i), Output: 5, CacheRead: 100, Cost: 12_345_000_000}})
	}
	return f
}

// TestLedgerSlowReadersCostOnlyTheirOwn is issue 39's lock-out: two
// clients ask for /api/ledger and never read. A third client still gets
// the whole ledger (it answered 503 at once, for as long as the two held
// their places: up to the 2-minute write timeout).
func TestLedgerSlowReadersCostOnlyTheirOwn(t *testing.T) {
	f := bigLedger()
	in := spendInputs{ledger: f, zone: func() *time.Location { return time.UTC }, now: time.Now}
	var ready atomic.Bool
	mux := http.NewServeMux()
	if err := routes(mux, routeDeps{telemetryPath: "/metrics", registry: prometheus.NewRegistry(), ready: &ready,
		reloads: make(chan reloadRequest), config: func() string { return "" }, logger: slog.New(slog.DiscardHandler),
		maxRequests: 40, spend: &in, ledger: ledgerLimits{stall: *ledgerStall}}); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewUnstartedServer(mux)
	hardenServer(srv.Config)
	var small atomic.Int64
	small.Store(maxLedgerRequests)
	srv.Listener = smallBuffers{srv.Listener, &small}
	srv.Start()
	t.Cleanup(srv.Close)
	addr := strings.TrimPrefix(srv.URL, "http://")

	var stalled []net.Conn
	for i := range maxLedgerRequests {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		stalled = append(stalled, c)
		_ = c.(*net.TCPConn).SetReadBuffer(8 << 10)
		fmt.Fprintf(c, "GET %s HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n", LedgerPath)
		testutil.WaitUntil(t, fmt.Sprintf("stalled response %d under way", i+1), func() bool { return f.reads.Load() == int64(i+1) })
	}
	start := time.Now()
	resp, err := http.Get(srv.URL + LedgerPath)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	waited := time.Since(start)
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("a third client while two never read: %d %s", resp.StatusCode, b)
	}
	var got struct{ Entries []ledger.Entry }
	if err := json.NewDecoder(bufio.NewReader(resp.Body)).Decode(&got); err != nil || len(got.Entries) != len(f.entries) {
		t.Fatalf("a third client while two never read: %d of %d rows, %v", len(got.Entries), len(f.entries), err)
	}
	t.Logf("a third client while two never read: 200 and %d rows after %v", len(got.Entries), waited.Round(time.Millisecond))
	// The two that never read lost their responses: cut short, not
	// written whole into buffers.
	var read sync.WaitGroup
	for i, c := range stalled {
		read.Go(func() {
			_ = c.SetReadDeadline(time.Now().Add(time.Minute)) // a guard against hangs
			b, _ := io.ReadAll(c)
			if len(b) == 0 || strings.Contains(string(b), `"bills":[]}`) {
				t.Errorf("stalled client %d: %d bytes, whole: %v", i+1, len(b), strings.Contains(string(b), `"bills":[]}`))
			}
		})
	}
	read.Wait()
}
