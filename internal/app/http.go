package app

import (
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/prometheus/common/version"
	"github.com/prometheus/exporter-toolkit/web"

	"github.com/amp-exporter/amp-exporter/collector"
	"github.com/amp-exporter/amp-exporter/internal/app/landing"
	"github.com/amp-exporter/amp-exporter/internal/spend"
	"github.com/amp-exporter/amp-exporter/source/streams"
)

type routeDeps struct {
	telemetryPath string
	registry      *prometheus.Registry
	ready         *atomic.Bool
	reloads       chan<- reloadRequest
	config        func() string
	ingest        http.Handler
	ingestEnabled func() bool
	logger        *slog.Logger
	// maxRequests is --web.max-requests (0: no limit).
	maxRequests int
	// remoteWrites reports whether routes that change state (ingest,
	// reload) may be used from other hosts: only when --web.config.file
	// makes every request authenticate. Nil means loopback only.
	remoteWrites func() bool
	sources      []landing.Provider // the landing page's rows
	// spend serves /api/ledger, /api/spend and the landing page's spend
	// section; nil: none of them.
	spend *spendInputs
	// ledger bounds /api/ledger's responses (zero: the defaults).
	ledger ledgerLimits
}

// IngestPath is where stream-json lines are POSTed.
const IngestPath = "/api/v1/ingest/stream-json"

func routes(mux *http.ServeMux, d routeDeps) error {
	// Every reader of the registry sees the series as a scrape does.
	gatherer := collector.WithoutEmptyRepository(d.registry)
	mux.Handle(d.telemetryPath, promhttp.HandlerFor(gatherer, promhttp.HandlerOpts{
		ErrorLog:            slog.NewLogLogger(d.logger.Handler(), slog.LevelError),
		ErrorHandling:       promhttp.ContinueOnError,
		MaxRequestsInFlight: d.maxRequests,
		Registry:            d.registry,
	}))
	mux.HandleFunc("/-/healthy", func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprintln(w, "Healthy.")
	})
	mux.HandleFunc("/-/ready", func(w http.ResponseWriter, _ *http.Request) {
		if !d.ready.Load() {
			http.Error(w, "Not ready: the first pass over the thread directories or the stream-json captures is still running.", http.StatusServiceUnavailable)
			return
		}
		fmt.Fprintln(w, "Ready.")
	})
	mux.HandleFunc("/-/reload", func(w http.ResponseWriter, r *http.Request) {
		if !localOrAuthenticated(w, r, d.remoteWrites) {
			return
		}
		if r.Method != http.MethodPost && r.Method != http.MethodPut {
			w.Header().Set("Allow", "POST, PUT")
			http.Error(w, "Use POST to reload the configuration.", http.StatusMethodNotAllowed)
			return
		}
		reply := make(chan error, 1)
		select {
		case d.reloads <- reloadRequest{reply: reply}:
		case <-r.Context().Done():
			return
		}
		select {
		case err := <-reply:
			if err != nil {
				http.Error(w, "Reload failed, the previous configuration is kept: "+err.Error(), http.StatusInternalServerError)
				return
			}
			fmt.Fprintln(w, "Configuration reloaded.")
		case <-r.Context().Done():
		}
	})
	if d.ingest != nil {
		mux.HandleFunc(IngestPath, func(w http.ResponseWriter, r *http.Request) {
			if !d.ingestEnabled() {
				http.Error(w, "Ingest is disabled (streams.ingest.enabled: false).", http.StatusNotFound)
				return
			}
			if !localOrAuthenticated(w, r, d.remoteWrites) {
				return
			}
			d.ingest.ServeHTTP(w, r)
		})
	}
	if d.spend != nil {
		// Reading only, under the same TLS and authentication as /metrics
		// (the toolkit serves this mux); each ledger response copies the
		// whole ledger, so few are written at once.
		limits := d.ledger.withDefaults()
		mux.Handle(LedgerPath, waitInFlight(maxLedgerRequests, limits.slotWait, ledgerHandler(*d.spend, limits.stall)))
		mux.Handle(SpendPath, limitInFlight(d.maxRequests, spendHandler(*d.spend)))
	}
	mux.HandleFunc("/config", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		fmt.Fprint(w, d.config())
	})
	if d.telemetryPath != "/" {
		page, err := landing.New(web.LandingConfig{
			Name:        "amp-exporter",
			Description: "Prometheus exporter for the cost and behaviour of AI agents",
			Version:     version.Info(),
			Profiling:   "false",
			Links: []web.LandingLinks{
				{Address: d.telemetryPath, Text: "Metrics"},
				{Address: "/config", Text: "Configuration"},
				{Address: "/-/healthy", Text: "Health"},
				{Address: "/-/ready", Text: "Readiness"},
			},
		}, gatherer, nil, d.sources...)
		if err != nil {
			return fmt.Errorf("landing page: %w", err)
		}
		if d.spend != nil {
			page.SetSpend(func() spend.Summary { return d.spend.summary(false) })
		}
		// The page gathers the whole registry, as a scrape does: the same
		// bound applies, with slots of its own so it never locks scrapes out.
		mux.Handle("/", limitInFlight(d.maxRequests, page))
	}
	return nil
}

// limitInFlight serves at most n requests of h at once (n <= 0: no limit);
// one more gets 503, as promhttp answers a scrape past --web.max-requests.
func limitInFlight(n int, h http.Handler) http.Handler {
	if n <= 0 {
		return h
	}
	slots := make(chan struct{}, n)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case slots <- struct{}{}:
			defer func() { <-slots }()
			h.ServeHTTP(w, r)
		default:
			http.Error(w, fmt.Sprintf("Limit of concurrent requests reached (%d, --web.max-requests), try again later.", n), http.StatusServiceUnavailable)
		}
	})
}

// waitInFlight serves at most n requests of h at once; one more waits for
// a place, at most wait (or until its client goes), then gets 503 with a
// Retry-After. The holders' own bounds (ledgerLimits.stall for the
// ledger) keep the wait short.
func waitInFlight(n int, wait time.Duration, h http.Handler) http.Handler {
	slots := make(chan struct{}, n)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case slots <- struct{}{}:
		default:
			t := time.NewTimer(wait)
			defer t.Stop()
			select {
			case slots <- struct{}{}:
			case <-t.C:
				w.Header().Set("Retry-After", strconv.Itoa(int(wait.Seconds()+1)))
				http.Error(w, fmt.Sprintf("%s: %d responses are being written and none ended within %v; try again later.", r.URL.Path, n, wait), http.StatusServiceUnavailable)
				return
			case <-r.Context().Done():
				return
			}
		}
		defer func() { <-slots }()
		h.ServeHTTP(w, r)
	})
}

// localOrAuthenticated lets a request that changes state through when it
// comes from this machine, or when the web config authenticates every
// request; otherwise it answers 403 and says how to open it up. A request
// from a web page (cross-origin or not) is refused in every case: the
// user's browser is on this machine and may hold the credentials.
func localOrAuthenticated(w http.ResponseWriter, r *http.Request, remoteWrites func() bool) bool {
	if streams.RefuseWebPage(w, r) {
		return false
	}
	if isLoopback(r) || (remoteWrites != nil && remoteWrites()) {
		return true
	}
	http.Error(w, "Forbidden: "+r.URL.Path+" accepts requests from other hosts only when --web.config.file sets basic_auth_users or client certificates (see SECURITY.md).", http.StatusForbidden)
	return false
}
