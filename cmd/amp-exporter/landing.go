package main

import (
	"fmt"
	"net/url"
	"os"

	"github.com/amp-exporter/amp-exporter/collector"
	"github.com/amp-exporter/amp-exporter/config"
	"github.com/amp-exporter/amp-exporter/internal/landing"
	"github.com/amp-exporter/amp-exporter/store"
)

// sourceServer is the `source` label of the Amp server source (docs/metrics.md).
const sourceServer = "server"

// sourceProviders are the landing page's rows, one provider per source, in
// the order shown. cfg returns the configuration in effect; ready reports
// whether the first scan of the thread directories is done.
func sourceProviders(cfg func() *config.Config, ready func() bool, account func() string) []landing.Provider {
	return []landing.Provider{
		serverProvider(account, func() bool { return cfg().AmpServer.Enabled == config.AmpServerOff }),
		threadsProvider(cfg, ready),
		streamsProvider(cfg),
		amyProvider(cfg),
	}
}

func orZero(v *float64) *float64 {
	if v == nil {
		return new(float64)
	}
	return v
}

// ampCounts are the figures of one `source` label value of the amp_*
// families; configured sources show zeros rather than dashes.
func ampCounts(m landing.Metrics, source string) landing.Counts {
	src := map[string]string{"source": source}
	return landing.Counts{
		Tokens:       orZero(m.SumPtr(collector.NameTokens, src)),
		EstimatedUSD: orZero(m.SumPtr(collector.NameCost, src)),
		// Billed USD only where the source reports it.
		BilledUSD: m.SumPtr(collector.NameBilledCost, src),
	}
}

// serverProvider is the slot of the Amp server source (today's Amp threads,
// through the user's Amp login). Until that source registers its metrics
// (amp_server_up) the row says "not configured"; account, when not nil,
// names the account followed (never the key).
func serverProvider(account func() string, turnedOff func() bool) landing.Provider {
	return func(m landing.Metrics) []landing.SourceStatus {
		row := landing.SourceStatus{Source: "Amp server (" + sourceServer + ")"}
		up, ok := m.Sum(collector.NameServerUp, nil)
		if !ok {
			row.State = landing.NotConfigured
			row.Note = "Today's Amp keeps threads on ampcode.com; the server source follows them through your Amp login. "
			if turnedOff != nil && turnedOff() {
				row.Note += "It is turned off (amp_server.enabled: false)."
			} else {
				row.Note += "No Amp API key was found: log in with the Amp CLI, set AMP_API_KEY, or amp_server.api_key_file, then restart."
			}
			return []landing.SourceStatus{row}
		}
		if account != nil {
			if a := account(); a != "" {
				row.Configured = []landing.Setting{{Value: "account " + a}}
			}
		}
		row.Counted = ampCounts(m, sourceServer)
		row.Counted.BilledUSD = orZero(row.Counted.BilledUSD)
		row.Counted.Threads = m.SumPtr(collector.NameThreads, map[string]string{"source": sourceServer})
		row.LastSync = m.Time(collector.NameServerLastSync, nil)
		unauthorized := 0.0
		for _, code := range []string{"401", "403"} {
			v, _ := m.Sum(collector.NameServerRequests, map[string]string{"code": code})
			unauthorized += v
		}
		switch {
		case up == 1:
			row.State = "synced"
		case unauthorized > 0:
			row.State, row.Attention = "unauthorized", true
			row.Note = "The Amp server refused the key: run `amp login` again, or check AMP_API_KEY / amp_server.api_key_file."
		case row.LastSync.IsZero():
			row.State = "first sync running"
		default:
			row.State, row.Attention = "sync failing", true
			row.Note = "The last sync did not complete; the log says why."
		}
		return []landing.SourceStatus{row}
	}
}

func threadsProvider(cfg func() *config.Config, ready func() bool) landing.Provider {
	return func(m landing.Metrics) []landing.SourceStatus {
		c := cfg()
		row := landing.SourceStatus{Source: "Thread files (" + store.SourceThreads + ")"}
		missing := 0
		for _, d := range c.Threads.Dirs {
			s := landing.Setting{Value: d}
			switch fi, err := os.Stat(d); {
			case os.IsNotExist(err):
				s.Problem = "missing"
				missing++
			case err != nil:
				s.Problem = "cannot read"
				missing++
			case !fi.IsDir():
				s.Problem = "not a directory"
				missing++
			}
			row.Configured = append(row.Configured, s)
		}
		polling, _ := m.Sum(collector.NameWatcherPolling, nil)
		switch {
		case missing == len(c.Threads.Dirs):
			row.State, row.Attention = "missing", true
			row.Note = "No thread directory exists, so there is nothing to count here yet (it is picked up when it appears). " +
				"Amp versions since 2026-03 write no thread files: their threads are on the Amp server."
		case !ready():
			row.State = "first scan running"
		case polling == 1:
			row.State = "polling"
			row.Note = "File notifications failed (see amp_exporter_watcher_fallbacks_total); directories are rescanned instead."
		default:
			row.State = "watching"
		}
		if missing > 0 && missing < len(c.Threads.Dirs) {
			row.State += fmt.Sprintf(", %d of %d missing", missing, len(c.Threads.Dirs))
			row.Attention = true
		}
		row.Counted = ampCounts(m, store.SourceThreads)
		row.Counted.Threads = orZero(threadCount(m))
		row.LastSync = m.Time(collector.NameSourceLastChange, map[string]string{"source": store.SourceThreads})
		return []landing.SourceStatus{row}
	}
}

// threadCount reads amp_threads for local files, with or without a source
// label (the server source may add one).
func threadCount(m landing.Metrics) *float64 {
	if v := m.SumPtr(collector.NameThreads, map[string]string{"source": store.SourceThreads}); v != nil {
		return v
	}
	return m.SumPtr(collector.NameThreads, nil)
}

func streamsProvider(cfg func() *config.Config) landing.Provider {
	return func(m landing.Metrics) []landing.SourceStatus {
		c := cfg()
		row := landing.SourceStatus{Source: "Amp --stream-json (" + store.SourceStream + ")"}
		missing := 0
		for _, d := range c.Streams.Dirs {
			s := landing.Setting{Value: d}
			if fi, err := os.Stat(d); err != nil || !fi.IsDir() {
				s.Problem = "missing"
				missing++
			}
			row.Configured = append(row.Configured, s)
		}
		if c.Streams.Ingest.Enabled {
			row.Configured = append(row.Configured, landing.Setting{Value: "POST " + IngestPath + " (amp -x --stream-json … | amp-exporter ingest)"})
		}
		switch {
		case len(row.Configured) == 0:
			row.State = landing.NotConfigured
			return []landing.SourceStatus{row}
		case missing > 0:
			row.State, row.Attention = fmt.Sprintf("%d of %d directories missing", missing, len(c.Streams.Dirs)), true
		case len(c.Streams.Dirs) > 0:
			row.State = "tailing"
		default:
			row.State = "waiting for ingest"
		}
		row.Counted = ampCounts(m, store.SourceStream)
		row.LastSync = m.Time(collector.NameSourceLastChange, map[string]string{"source": store.SourceStream})
		return []landing.SourceStatus{row}
	}
}

func amyProvider(cfg func() *config.Config) landing.Provider {
	return func(m landing.Metrics) []landing.SourceStatus {
		c := cfg()
		if len(c.Amy) == 0 {
			return []landing.SourceStatus{{Source: "Amy turn streams", State: landing.NotConfigured}}
		}
		var rows []landing.SourceStatus
		for _, u := range c.Amy {
			up := map[string]string{"upstream": u.Name}
			row := landing.SourceStatus{Source: "Amy upstream " + u.Name}
			row.Configured = []landing.Setting{{Value: safeURL(u.BaseURL)}}
			if a := u.Proxy.ListenAddress; a != "" {
				row.Configured = append(row.Configured, landing.Setting{Value: "proxy on " + a})
			}
			if n := len(u.Turns); n > 0 {
				row.Configured = append(row.Configured, landing.Setting{Value: fmt.Sprintf("%d configured turns", n)})
			}
			isUp, _ := m.Sum(collector.NameAmyStreamUp, up)
			unauthorized, _ := m.Sum(collector.NameAmyReconnects, map[string]string{"upstream": u.Name, "reason": store.ReconnectUnauthorized})
			started, _ := m.Sum(collector.NameAmyTurnsStarted, up)
			inFlight, _ := m.Sum(collector.NameAmyTurnsInFlight, up)
			// amy_stream_up is 1 while connected or idle without error.
			switch {
			case isUp != 1 && unauthorized > 0:
				row.State, row.Attention = "unauthorized", true
				row.Note = "The upstream refused the API key (api_key / api_key_file)."
			case isUp != 1:
				row.State, row.Attention = "disconnected", true
				row.Note = "Reconnecting; amy_stream_reconnects_total says why."
			case started == 0:
				row.State = "no turn followed yet"
			case inFlight > 0:
				row.State = "connected"
			default:
				row.State = "idle"
			}
			row.Note = joinNote(row.Note, fmt.Sprintf("%.0f turns started, %.0f in flight.", started, inFlight))
			row.Counted.BilledUSD = orZero(m.SumPtr(collector.NameAmyCost, up))
			rows = append(rows, row)
		}
		return rows
	}
}

func joinNote(a, b string) string {
	if a == "" {
		return b
	}
	return a + " " + b
}

// safeURL shows an upstream without query or fragment (never a secret).
func safeURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "(invalid URL)"
	}
	return (&url.URL{Scheme: u.Scheme, Host: u.Host, Path: u.Path}).String()
}
