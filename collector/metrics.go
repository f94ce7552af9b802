package collector

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/amp-exporter/amp-exporter/store"
)

// The names of the metrics set by code. Dashboards, alert rules and
// users' queries depend on them: never rename one. The store families'
// metrics are named in the store's table (store/families.go); code finds
// those names with NameOf.
const (
	// Amp: thread files, the Amp server and stream-json.
	NameThreads      = "amp_threads"
	NameLastActivity = "amp_thread_last_activity_timestamp_seconds"

	// The Amp server source.
	NameServerUp              = "amp_server_up"
	NameServerLastSync        = "amp_server_last_sync_timestamp_seconds"
	NameServerRequests        = "amp_server_requests_total"
	NameServerResponseBytes   = "amp_server_response_bytes_total"
	NameServerThreadsSkipped  = "amp_server_threads_skipped_total"
	NameServerLoginRefreshes  = "amp_server_login_refreshes_total"
	NameEntitlementLimit      = "amp_entitlement_limit_usd"
	NameEntitlementRemaining  = "amp_entitlement_remaining_usd"
	NameEntitlementUsed       = "amp_entitlement_used_ratio"
	NameEntitlementWindowEnds = "amp_entitlement_window_reset_timestamp_seconds"

	// Amy turn streams.
	NameAmyTurnsInFlight = "amy_turns_in_flight"
	NameAmyStreamUp      = "amy_stream_up"

	// The exporter itself.
	NameBuildInfo            = "amp_exporter_build_info"
	NameParseErrors          = "amp_exporter_parse_errors_total"
	NameFilesParsed          = "amp_exporter_files_parsed_total"
	NameParseDuration        = "amp_exporter_parse_duration_seconds"
	NameReloadSuccessful     = "amp_exporter_config_last_reload_successful"
	NameReloadSuccessTime    = "amp_exporter_config_last_reload_success_timestamp_seconds"
	NameLabelValuesFolded    = "amp_exporter_label_values_folded_total"
	NameRepositoryUnreadable = "amp_exporter_repository_unreadable_total"
	NameWatcherFallbacks     = "amp_exporter_watcher_fallbacks_total"
	NameWatcherPolling       = "amp_exporter_watcher_polling"
	NameThreadDirsMissing    = "amp_exporter_thread_dirs_missing"
	NameStateErrors          = "amp_exporter_state_errors_total"
	NameStateBytesWritten    = "amp_exporter_state_bytes_written_total"
	NameStateCompactions     = "amp_exporter_state_compactions_total"
	NameStateSaveDuration    = "amp_exporter_state_save_duration_seconds"
	NameStateLoadErrors      = "amp_exporter_state_load_errors_total"
	NamePricingInfo          = "amp_exporter_pricing_info"
	NameSourceLastChange     = "amp_exporter_source_last_change_timestamp_seconds"
	NameRemoteWriteSamples   = "amp_exporter_remote_write_samples_total"
	NameRemoteWriteLastOK    = "amp_exporter_remote_write_last_success_timestamp_seconds"
	NameOTLPDatapoints       = "amp_exporter_otlp_datapoints_total"
	NameOTLPLastOK           = "amp_exporter_otlp_last_success_timestamp_seconds"
)

// Type is a metric type as the exposition format names it.
type Type string

// The metric types.
const (
	Counter   Type = "counter"
	Gauge     Type = "gauge"
	Histogram Type = "histogram"
)

// Metric is one row of the table of metrics: everything the exporter
// exposes, one row per family. Rows with a store family are rendered from
// the stores' snapshots by the table alone; the others are set by code
// (gauges of a snapshot, the exporter's own instruments).
type Metric struct {
	Name string
	Type Type
	// Scope is the label the collector fills in for the store it renders
	// (source, upstream), "" for none.
	Scope string
	// Labels are the other labels; for a store family, the values of its
	// series' first and second label (histograms: the first only, the
	// second being the bucket).
	Labels []string
	Help   string
	// Family is the store family the values come from ("" for none); for
	// a histogram its bucket family, with Sum its sum and Buckets the
	// upper bounds.
	Family  store.Family
	Sum     store.Family
	Buckets []float64
	// Source says where the values come from, for the documentation.
	Source string
}

// AllLabels are the metric's label names, the scope first.
func (m *Metric) AllLabels() []string {
	if m.Scope == "" {
		return m.Labels
	}
	return append([]string{m.Scope}, m.Labels...)
}

// The sources the documentation names.
const (
	fromThreads = store.FromThreads
	fromServer  = store.FromServer
	fromAmy     = store.FromAmy
	fromSelf    = "the exporter"
)

// Metrics is the table: every metric the exporter exposes, one row per
// family. The store families' rows come from the store's table
// (store.Exposed), where each family is declared once with its metric;
// the rows of codeRows are the metrics set by code (gauges of a snapshot,
// the exporter's own instruments, built from their rows: instruments.go).
// Adding a counter to a source: CONTRIBUTING.md, "Adding a metric".
var Metrics = append(familyRows(), codeRows...)

// familyRows are the rows of the store families.
func familyRows() []Metric {
	var out []Metric
	for _, e := range store.Exposed() {
		m := e.Metric
		t := Counter
		if m.Sum != "" {
			t = Histogram
		}
		out = append(out, Metric{Name: m.Name, Type: t, Scope: m.Scope, Labels: m.Labels, Help: m.Help,
			Family: e.Family, Sum: m.Sum, Buckets: m.Buckets, Source: m.From})
	}
	return out
}

// codeRows are the rows of the metrics set by code.
var codeRows = []Metric{
	{Name: NameThreads, Type: Gauge, Labels: []string{"agent_mode", store.RepositoryLabel}, Source: fromThreads,
		Help: "Amp threads currently present and readable (local thread files, and threads listed on the Amp server when that source is on), by agent mode and repository."},
	{Name: NameLastActivity, Type: Gauge, Source: fromThreads,
		Help: "Newest activity seen in any Amp thread (prompt sent, inference finished, thread created)."},

	{Name: NameServerUp, Type: Gauge, Source: fromServer,
		Help: "1 when the last sync with the Amp server succeeded."},
	{Name: NameServerLastSync, Type: Gauge, Source: fromServer,
		Help: "End of the last complete sync with the Amp server."},
	{Name: NameServerRequests, Type: Counter, Labels: []string{"method", "code"}, Source: fromServer,
		Help: "Requests to the Amp server by API method and HTTP status code (error: no answer)."},
	{Name: NameServerResponseBytes, Type: Counter, Labels: []string{"encoding"}, Source: fromServer,
		Help: "Bytes received from the Amp server: on the wire by content encoding (gzip, zstd, identity), and decompressed (decoded)."},
	{Name: NameServerThreadsSkipped, Type: Counter, Labels: []string{"reason"}, Source: fromServer,
		Help: "Threads the Amp server lists that are not counted, by reason (other_user: another user's thread shared with the account), once per thread."},
	{Name: NameServerLoginRefreshes, Type: Counter, Labels: []string{"outcome"}, Source: fromServer,
		Help: "Refreshes of the Amp CLI's OAuth login by the exporter, by outcome: stored; kept_in_memory (secrets.json could not be written: used from memory, written when it can be); other_account (the answer was a login of another account: refused, neither stored nor used); invalid_grant (the refresh token was refused); failed."},
	{Name: NameEntitlementLimit, Type: Gauge, Labels: []string{"window"}, Source: fromServer,
		Help: "The Amp user's entitlement in the current window, in US dollars."},
	{Name: NameEntitlementRemaining, Type: Gauge, Labels: []string{"window"}, Source: fromServer,
		Help: "What is left of the Amp user's entitlement in the current window, in US dollars."},
	{Name: NameEntitlementUsed, Type: Gauge, Labels: []string{"window"}, Source: fromServer,
		Help: "Share of the Amp user's entitlement used in the current window (0–1)."},
	{Name: NameEntitlementWindowEnds, Type: Gauge, Labels: []string{"window"}, Source: fromServer,
		Help: "When the Amp user's current entitlement window resets."},

	{Name: NameAmyTurnsInFlight, Type: Gauge, Scope: "upstream", Source: fromAmy,
		Help: "Amy turns started and not yet finished or given up."},
	{Name: NameAmyStreamUp, Type: Gauge, Scope: "upstream", Source: fromAmy,
		Help: "1 while the upstream's streams are connected or idle without error."},

	{Name: NameBuildInfo, Type: Gauge, Labels: []string{"version", "revision", "branch", "goversion", "goos", "goarch", "tags"}, Source: fromSelf,
		Help: "A metric with a constant '1' value labeled by version, revision, branch, goversion from which amp_exporter was built, and the goos and goarch for the build."},
	{Name: NameParseErrors, Type: Counter, Labels: []string{"source", "reason"}, Source: fromSelf,
		Help: "Inputs the exporter could not parse, by source and reason; the last good data of each is kept."},
	{Name: NameFilesParsed, Type: Counter, Source: fromSelf,
		Help: "Thread files parsed successfully (unchanged files are not re-read)."},
	{Name: NameParseDuration, Type: Histogram, Labels: []string{"source"}, Source: fromSelf,
		Buckets: []float64{.0001, .00025, .0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1},
		Help:    "Time to read and parse one input."},
	{Name: NameReloadSuccessful, Type: Gauge, Source: fromSelf,
		Help: "Whether the last configuration load succeeded (1) or kept the previous configuration (0)."},
	{Name: NameReloadSuccessTime, Type: Gauge, Source: fromSelf,
		Help: "When the configuration was last loaded successfully."},
	{Name: NameLabelValuesFolded, Type: Counter, Labels: []string{"label"}, Source: fromSelf,
		Help: "Distinct data values folded into \"other\" because their label reached limits.max_label_values."},
	{Name: NameRepositoryUnreadable, Type: Counter, Labels: []string{"reason"}, Source: fromSelf,
		Help: "Threads whose git remote gave no repository label value, once per thread when first counted, by reason: local (a path on a file system), invalid (not a remote that can be read without guessing), too_long."},
	{Name: NameWatcherFallbacks, Type: Counter, Labels: []string{"reason"}, Source: fromSelf,
		Help: "Times the thread watcher fell back to polling a directory (inotify overflow, watcher error, failed watch)."},
	{Name: NameWatcherPolling, Type: Gauge, Labels: []string{"source"}, Source: fromSelf,
		Help: "1 while thread directories are polled instead of watched with inotify."},
	{Name: NameThreadDirsMissing, Type: Gauge, Source: fromSelf,
		Help: "Configured thread directories that do not exist right now."},
	{Name: NameStateErrors, Type: Counter, Labels: []string{"operation"}, Source: fromSelf,
		Help: "Failures to load or save the state under --storage.path."},
	{Name: NameStateLoadErrors, Type: Counter, Labels: []string{"kind"}, Source: fromSelf,
		Help: "What loading the state found, by kind: torn_tail (a save cut off by a crash, expected after one), batch and record (damage: what it hit is lost, the rest kept), undecodable, not_a_log, legacy_file."},
	{Name: NameStateBytesWritten, Type: Counter, Source: fromSelf,
		Help: "Bytes written to the state log by saves and compactions."},
	{Name: NameStateCompactions, Type: Counter, Source: fromSelf,
		Help: "Rewrites of the state log without its superseded records."},
	{Name: NameStateSaveDuration, Type: Histogram, Source: fromSelf,
		Buckets: []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5},
		Help:    "Time to save what changed to the state log, sync included."},
	{Name: NamePricingInfo, Type: Gauge, Labels: []string{"source", "version"}, Source: fromSelf,
		Help: "The price table in use (source and version); 1 for the current one."},
	{Name: NameSourceLastChange, Type: Gauge, Labels: []string{"source"}, Source: fromSelf,
		Help: "When the exporter last saw a source's data change."},
	{Name: NameRemoteWriteSamples, Type: Counter, Labels: []string{"url_hash", "result"}, Source: fromSelf,
		Help: "Samples pushed to a remote-write receiver, by result: sent (accepted), failed (refused with a 4xx, not retried), dropped (still failing when the push interval ran out; the next push carries the current values)."},
	{Name: NameRemoteWriteLastOK, Type: Gauge, Labels: []string{"url_hash"}, Source: fromSelf,
		Help: "When a push to the remote-write receiver last succeeded."},
	{Name: NameOTLPDatapoints, Type: Counter, Labels: []string{"url_hash", "result"}, Source: fromSelf,
		Help: "Data points pushed to an OTLP receiver, by result: sent (accepted), rejected (refused in a partial-success answer, not sent again), failed (refused with a 4xx other than 429 or a 5xx other than 502/503/504, not retried), dropped (still failing when the push interval ran out; the next push carries the current values)."},
	{Name: NameOTLPLastOK, Type: Gauge, Labels: []string{"url_hash"}, Source: fromSelf,
		Help: "When a push to the OTLP receiver last succeeded."},
}

// NameOf is the name of the metric a store family is exposed as.
func NameOf(f store.Family) string {
	m := byFamily[f]
	if m == nil {
		panic(fmt.Sprintf("collector: store family %s is not exposed", f))
	}
	return m.Name
}

// Derived from Metrics at initialization, never written after.
var (
	byName   = map[string]*Metric{}
	byFamily = map[store.Family]*Metric{} // by Family, and histograms by Sum too
	descs    = map[string]*prometheus.Desc{}
)

func init() {
	for i := range Metrics {
		m := &Metrics[i]
		if byName[m.Name] != nil {
			panic(fmt.Sprintf("collector: metric %s twice in the table", m.Name))
		}
		byName[m.Name] = m
		for _, f := range []store.Family{m.Family, m.Sum} {
			if f == "" {
				continue
			}
			if byFamily[f] != nil {
				panic(fmt.Sprintf("collector: store family %s rendered twice", f))
			}
			byFamily[f] = m
		}
		descs[m.Name] = prometheus.NewDesc(m.Name, m.Help, m.AllLabels(), nil)
	}
}
