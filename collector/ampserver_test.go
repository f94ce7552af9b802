package collector

import (
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/amp-exporter/amp-exporter/internal/testsupport/threadtest"
	"github.com/amp-exporter/amp-exporter/parser/thread"
	"github.com/amp-exporter/amp-exporter/store"
)

func TestServerStoreExposition(t *testing.T) {
	local := store.NewThreadStore(store.StoreOptions{})
	server := store.NewThreadStore(store.StoreOptions{})
	owners := store.NewOwners()
	local.SetClaim(owners, store.SourceThreads)
	server.SetClaim(owners, store.SourceAmpServer)
	sum := func(id string) *thread.Summary {
		return threadtest.Summary(threadtest.Thread{ID: id, AgentMode: "smart", Users: 1, Prompts: 1,
			Tokens: map[string]thread.Tokens{"claude-sonnet-4-5": {Input: 10, Output: 5}}})
	}
	local.Apply("/d/T-a.json", store.FileVersion{Size: 1}, sum("T-a"))
	server.Apply(store.AmpServerPath("T-a"), store.FileVersion{AmpServerV: 3}, sum("T-a")) // a local file owns it
	server.Apply(store.AmpServerPath("T-b"), store.FileVersion{AmpServerV: 3}, sum("T-b"))
	server.ApplyBilled("T-b", map[string]float64{"paid": 0.5, "free": 0.25})
	// Billed 1.15 now: paid never goes down, free takes the growth.
	server.ApplyBilled("T-b", map[string]float64{"paid": 0.4, "free": 0.75})
	if server.ApplyBilled("T-a", map[string]float64{"total": 9}) {
		t.Fatal("billed a thread the server does not count")
	}
	c := NewAmpCollector(local, nil)
	c.SetAmpServerStore(server)
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(c)
	want := `
# HELP amp_billed_cost_usd_total What Amp itself bills for the threads read from the Amp server (threadDisplayCostInfo), by kind: free, paid, subscription from its breakdown, total where it gives none. The real figure beside the amp_cost_usd_total estimate.
# TYPE amp_billed_cost_usd_total counter
amp_billed_cost_usd_total{kind="free",source="server"} 0.65
amp_billed_cost_usd_total{kind="paid",source="server"} 0.5
amp_billed_cost_usd_total{kind="subscription",source="server"} 0
amp_billed_cost_usd_total{kind="total",source="server"} 0
# HELP amp_threads Amp threads currently present and readable (local thread files, and threads listed on the Amp server when that source is on), by agent mode and repository.
# TYPE amp_threads gauge
amp_threads{agent_mode="medium"} 2
# HELP amp_messages_total Amp messages seen, by role (user, assistant).
# TYPE amp_messages_total counter
amp_messages_total{role="assistant",source="server"} 1
amp_messages_total{role="assistant",source="threads"} 1
amp_messages_total{role="user",source="server"} 1
amp_messages_total{role="user",source="threads"} 1
`
	if err := testutil.GatherAndCompare(WithoutEmptyRepository(reg), strings.NewReader(want), "amp_billed_cost_usd_total", "amp_threads", "amp_messages_total"); err != nil {
		t.Fatal(err)
	}
	if probs, err := testutil.GatherAndLint(reg); err != nil || len(probs) > 0 {
		t.Fatalf("lint: %v %v", probs, err)
	}
	// Billed values persist with the thread.
	r := store.NewThreadStore(store.StoreOptions{})
	if err := r.Import(server.Export()); err != nil {
		t.Fatal(err)
	}
	if got := r.Snapshot().Totals()[store.SeriesKey{Fam: store.FamBilled, L1: "paid"}]; store.Unfixed(store.FamBilled, got) != 0.5 {
		t.Fatalf("restored paid %d", got)
	}
}

func TestServerMetricsEntitlement(t *testing.T) {
	reg := prometheus.NewPedanticRegistry()
	m := NewAmpServerMetrics(reg, []string{"listThreads"})
	if e := m.Entitlement(); e != nil {
		t.Errorf("an entitlement before any was set: %+v", e)
	}
	limit, used := 10.0, 0.85
	m.SetEntitlement(Entitlement{Window: "daily", LimitUSD: &limit, UsedRatio: &used})
	m.SetEntitlement(Entitlement{Window: "weekly window!", LimitUSD: &limit})
	want := `
# HELP amp_entitlement_limit_usd The Amp user's entitlement in the current window, in US dollars.
# TYPE amp_entitlement_limit_usd gauge
amp_entitlement_limit_usd{window="other"} 10
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "amp_entitlement_limit_usd", "amp_entitlement_used_ratio"); err != nil {
		t.Fatal(err)
	}
	// The spend summary reads the window last set, as the series show it.
	if e := m.Entitlement(); e == nil || e.Window != "other" || *e.LimitUSD != 10 || e.UsedRatio != nil {
		t.Errorf("Entitlement() = %+v", e)
	}
}

// Response bytes by encoding and skipped threads start at zero; an
// encoding the exporter does not know is "other".
func TestServerMetricsBytesAndSkipped(t *testing.T) {
	reg := prometheus.NewPedanticRegistry()
	m := NewAmpServerMetrics(reg, []string{"listThreads"})
	m.Bytes("gzip", 100)
	m.Bytes("decoded", 700)
	m.Bytes("br", 5)
	m.ThreadSkipped("other_user")
	want := `
# HELP amp_server_response_bytes_total Bytes received from the Amp server: on the wire by content encoding (gzip, zstd, identity), and decompressed (decoded).
# TYPE amp_server_response_bytes_total counter
amp_server_response_bytes_total{encoding="decoded"} 700
amp_server_response_bytes_total{encoding="gzip"} 100
amp_server_response_bytes_total{encoding="identity"} 0
amp_server_response_bytes_total{encoding="other"} 5
amp_server_response_bytes_total{encoding="zstd"} 0
# HELP amp_server_threads_skipped_total Threads the Amp server lists that are not counted, by reason (other_user: another user's thread shared with the account), once per thread.
# TYPE amp_server_threads_skipped_total counter
amp_server_threads_skipped_total{reason="other_user"} 1
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "amp_server_response_bytes_total", "amp_server_threads_skipped_total"); err != nil {
		t.Fatal(err)
	}
	if problems, err := testutil.GatherAndLint(reg); err != nil || len(problems) != 0 {
		t.Fatalf("lint: %v %v", problems, err)
	}
}
