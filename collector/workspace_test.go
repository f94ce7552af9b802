package collector

import (
	"bytes"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/expfmt"

	"github.com/amp-exporter/amp-exporter/store"
)

// TestWorkspaceCollector: the workspace's thread families render under
// source="workspace" with a user label beside the Amp collector's
// families of the same names (whose series have none); user_label: off
// and a thread without a repository render without those labels.
func TestWorkspaceCollector(t *testing.T) {
	for _, tc := range []struct {
		mode string
		want []string
	}{
		{store.UserLabelID, []string{
			`amp_tokens_total{model="m",repository="r",source="threads",token_type="input"} 3`,
			`amp_billed_cost_usd_total{kind="total",repository="github.com/acme/app",source="workspace",user="user-1"} 1.5`,
			`amp_billed_cost_usd_total{kind="total",source="workspace",user="user-2"} 0.25`,
			`amp_cost_usd_total{model="m",repository="github.com/acme/app",source="workspace",user="user-1"} 1.5`,
			`amp_tokens_total{model="m",repository="github.com/acme/app",source="workspace",token_type="input",user="user-1"} 10`,
			`amp_workspace_daily_usage_usd_total{model="m",user="user-1"} 2`,
			`amp_workspace_lines_total{kind="added",user="user-1"} 7`,
			`amp_workspace_restatements_total{endpoint="thread_usage"} 0`,
		}},
		{store.UserLabelOff, []string{
			`amp_billed_cost_usd_total{kind="total",repository="github.com/acme/app",source="workspace"} 1.5`,
			`amp_billed_cost_usd_total{kind="total",source="workspace"} 0.25`,
			`amp_workspace_daily_usage_usd_total{model="m"} 2`,
		}},
	} {
		t.Run(tc.mode, func(t *testing.T) {
			labels := store.NewLabelCap(100, nil)
			ws := store.NewWorkspaceStore(labels, store.NewRepositories(nil))
			ws.SetUserLabel(tc.mode)
			ws.ApplyUsage(store.WorkspaceUsage{ID: "T-1", User: "user-1", Repository: "https://tok:SECRET@github.com/acme/app.git", USD: 1.5,
				Models: []store.WorkspaceModel{{Model: "m", Tokens: [4]uint64{10, 20, 0, 0}, USD: 1.5}}})
			ws.ApplyUsage(store.WorkspaceUsage{ID: "T-2", User: "user-2", USD: 0.25})
			ws.ApplyDay(store.WorkspaceDay{Day: "2026-08-12", User: "user-1", Added: 7, Models: map[string]float64{"m": 2}})
			reg := prometheus.NewRegistry()
			threads := store.NewThreadStore(store.StoreOptions{Labels: labels})
			reg.MustRegister(NewAmpCollector(threads, nil), NewWorkspaceCollector(ws, nil), threadsSeries{})
			mfs, err := WithoutEmptyRepository(reg).Gather()
			if err != nil {
				t.Fatal(err)
			}
			var b bytes.Buffer
			enc := expfmt.NewEncoder(&b, expfmt.NewFormat(expfmt.TypeTextPlain))
			for _, mf := range mfs {
				if err := enc.Encode(mf); err != nil {
					t.Fatal(err)
				}
			}
			out := b.String()
			for _, w := range tc.want {
				if !strings.Contains(out, w+"\n") {
					t.Errorf("no %s in\n%s", w, out)
				}
			}
			if strings.Contains(out, "SECRET") || (tc.mode == store.UserLabelOff && strings.Contains(out, "user=")) {
				t.Errorf("leak or user label in\n%s", out)
			}
		})
	}
}

// threadsSeries is a series of the threads source in a family the
// workspace shares, as the Amp collector renders one.
type threadsSeries struct{}

func (threadsSeries) Describe(chan<- *prometheus.Desc) {}

func (threadsSeries) Collect(ch chan<- prometheus.Metric) {
	ch <- prometheus.MustNewConstMetric(descs[NameOf(store.FamTokens)], prometheus.CounterValue, 3, "threads", "m", "input", "r")
}
