package app

import (
	"fmt"
	"net/url"
	"os"
	"path/filepath"

	"github.com/amp-exporter/amp-exporter/collector"
	"github.com/amp-exporter/amp-exporter/config"
	"github.com/amp-exporter/amp-exporter/internal/app/landing"
	"github.com/amp-exporter/amp-exporter/store"
)

// sourceServer is the `source` label of the Amp server source (docs/metrics.md).
const sourceServer = "server"

// The `kind` values of amp_lines_changed_total (docs/metrics.md).
const (
	linesAdded   = "added"
	linesRemoved = "removed"
)

// landingInputs is what the landing page's rows read besides the metrics.
type landingInputs struct {
	// cfg returns the configuration in effect.
	cfg func() *config.Config
	// ready reports whether the first scan of the thread directories is
	// done.
	ready func() bool
	// account names the Amp account followed (never the key); may be nil.
	account func() string
	// defaultDirs are the thread directories watched when none is
	// configured.
	defaultDirs []string
	// threads returns the threads present in a source's own store
	// (store.SourceThreads, sourceServer), nil when that source has none.
	// amp_threads adds both up, so the rows cannot read it.
	threads func(source string) *float64
	// shown reports whether a source's families are on /metrics yet (they
	// wait for its first complete pass); nil: always.
	shown func(source string) bool
}

// sourceProviders are the landing page's rows, one provider per source, in
// the order shown.
func sourceProviders(in landingInputs) []landing.Provider {
	cfg := in.cfg
	shown := func(source string) func() bool {
		return func() bool { return in.shown == nil || in.shown(source) }
	}
	return []landing.Provider{
		serverProvider(in.account, func() bool { return cfg().AmpServer.Enabled == config.AmpServerOff }, count(in.threads, sourceServer), shown(sourceServer)),
		threadsProvider(cfg, in.ready, in.defaultDirs, count(in.threads, store.SourceThreads), shown(store.SourceThreads)),
		streamsProvider(cfg, shown(store.SourceStream)),
		amyProvider(cfg),
	}
}

// storeThreads reads the threads present in the thread-file store and in
// the server's (nil when that source is off).
func storeThreads(files, server *store.ThreadStore) func(source string) *float64 {
	return func(source string) *float64 {
		st := files
		if source == sourceServer {
			st = server
		}
		if st == nil {
			return nil
		}
		n := float64(st.PresentThreads())
		return &n
	}
}

// count returns a source's thread count from threads (nil: not known).
func count(threads func(string) *float64, source string) func() *float64 {
	return func() *float64 {
		if threads == nil {
			return nil
		}
		return threads(source)
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
		Tokens:       orZero(m.SumPtr(collector.NameOf(store.FamTokens), src)),
		EstimatedUSD: orZero(m.SumPtr(collector.NameOf(store.FamCost), src)),
		// Billed USD only where the source reports it.
		BilledUSD: m.SumPtr(collector.NameOf(store.FamBilled), src),
	}
}

// withLines adds the lines the source's edit tools changed
// (amp_lines_changed_total by kind): sources that read edits (thread
// files, the Amp server) show zeros rather than dashes before the first
// edit.
func withLines(c landing.Counts, m landing.Metrics, source string) landing.Counts {
	name := collector.NameOf(store.FamLines)
	c.LinesAdded = orZero(m.SumPtr(name, map[string]string{"source": source, "kind": linesAdded}))
	c.LinesRemoved = orZero(m.SumPtr(name, map[string]string{"source": source, "kind": linesRemoved}))
	return c
}

// serverProvider is the slot of the Amp server source (today's Amp threads,
// through the user's Amp login). Until that source registers its metrics
// (amp_server_up) the row says "not configured"; account, when not nil,
// names the account followed (never the key). Until shown says its
// families are on /metrics (its first complete sync, or a restored state)
// the counts are dashes, not zeros.
func serverProvider(account func() string, turnedOff func() bool, threads func() *float64, shown func() bool) landing.Provider {
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
		if shown() {
			row.Counted = withLines(ampCounts(m, sourceServer), m, sourceServer)
			row.Counted.BilledUSD = orZero(row.Counted.BilledUSD)
			if threads != nil {
				row.Counted.Threads = threads()
			}
		}
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
		if !shown() {
			row.Pending = true
			row.Note = joinNote(row.Note, "Its counts are shown once a sync is complete.")
		}
		return []landing.SourceStatus{row}
	}
}

// threadsProvider is the row of the local thread files. A default
// directory that does not exist is how today's Amp is (it keeps threads on
// the server): while the server source is synced it is "no local history",
// not a problem. A directory the user configured that is missing is one.
//
// Until shown says its families are on /metrics (the first scan is done)
// the counts are dashes: a part of the totals is not the totals.
func threadsProvider(cfg func() *config.Config, ready func() bool, defaultDirs []string, threads func() *float64, shown func() bool) landing.Provider {
	isDefault := map[string]bool{}
	for _, d := range defaultDirs {
		isDefault[filepath.Clean(d)] = true
	}
	return func(m landing.Metrics) []landing.SourceStatus {
		c := cfg()
		row := landing.SourceStatus{Source: "Thread files (" + store.SourceThreads + ")"}
		serverUp, _ := m.Sum(collector.NameServerUp, nil)
		missing, missingOwn := 0, 0
		for _, d := range c.Threads.Dirs {
			s := landing.Setting{Value: d}
			switch fi, err := os.Stat(d); {
			case os.IsNotExist(err):
				s.Problem = "missing"
			case err != nil:
				s.Problem = "cannot read"
			case !fi.IsDir():
				s.Problem = "not a directory"
			}
			if s.Problem != "" {
				missing++
				if !isDefault[filepath.Clean(d)] || s.Problem != "missing" {
					missingOwn++
				}
			}
			row.Configured = append(row.Configured, s)
		}
		for i, s := range row.Configured {
			// A default directory that does not exist is no problem while
			// another directory is there or the server source is synced:
			// shown, not flagged.
			if s.Problem == "missing" && isDefault[filepath.Clean(s.Value)] && (serverUp == 1 || missing < len(c.Threads.Dirs)) {
				row.Configured[i] = landing.Setting{Value: s.Value + " (not present)"}
			}
		}
		polling, _ := m.Sum(collector.NameWatcherPolling, nil)
		switch {
		case missing == len(c.Threads.Dirs) && missingOwn == 0 && serverUp == 1:
			row.State = "no local history (Amp since 2026-03 keeps threads on the server)"
			row.Note = "The Amp server row counts today's threads. Thread files from before are counted here if the directory appears."
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
		if missingOwn > 0 && missing < len(c.Threads.Dirs) {
			row.State += fmt.Sprintf(", %d of %d missing", missingOwn, len(c.Threads.Dirs))
			row.Attention = true
		}
		if shown() {
			row.Counted = withLines(ampCounts(m, store.SourceThreads), m, store.SourceThreads)
			if threads != nil {
				row.Counted.Threads = threads()
			}
			row.Counted.Threads = orZero(row.Counted.Threads)
		} else {
			row.Pending = true
			row.Note = joinNote(row.Note, "Its counts are shown once the first scan is complete.")
		}
		row.LastSync = m.Time(collector.NameSourceLastChange, map[string]string{"source": store.SourceThreads})
		return []landing.SourceStatus{row}
	}
}

func streamsProvider(cfg func() *config.Config, shown func() bool) landing.Provider {
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
		if !shown() {
			row.Pending = true
			if !row.Attention {
				row.State = "first pass over the captures running"
			}
			return []landing.SourceStatus{row}
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
			unauthorized, _ := m.Sum(collector.NameOf(store.FamAmyReconnects), map[string]string{"upstream": u.Name, "reason": store.ReconnectUnauthorized})
			started, _ := m.Sum(collector.NameOf(store.FamAmyStarted), up)
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
			row.Counted.BilledUSD = orZero(m.SumPtr(collector.NameOf(store.FamAmyCost), up))
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
