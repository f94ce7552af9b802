package collector

import (
	"slices"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/amp-exporter/amp-exporter/store"
)

// WithoutEmptyRepository gathers from g and leaves out the repository
// label where it is empty (a thread without a remote). Prometheus takes
// an empty label for an absent one, so the series are the same; left out,
// every series of a thread without a remote reads, byte for byte, as
// before the label existed, and a remote-write receiver (which refuses
// empty label values) never sees one. Every path that exposes the
// registry (/metrics, remote write, the landing page) goes through it.
func WithoutEmptyRepository(g prometheus.Gatherer) prometheus.Gatherer {
	return prometheus.GathererFunc(func() ([]*dto.MetricFamily, error) {
		mfs, err := g.Gather()
		for _, mf := range mfs {
			if !repositoryMetric[mf.GetName()] && !userMetric[mf.GetName()] {
				continue
			}
			for _, m := range mf.Metric {
				// The metrics are made afresh by every Gather: changing
				// them changes no collector's state.
				m.Label = slices.DeleteFunc(m.Label, emptyRepository)
			}
		}
		return mfs, err
	})
}

// emptyRepository: an empty repository label, or an empty user label
// (the workspace source's, user_label: off), which only source="workspace"
// series have.
func emptyRepository(lp *dto.LabelPair) bool {
	return (lp.GetName() == store.RepositoryLabel || lp.GetName() == store.UserLabel) && lp.GetValue() == ""
}

// repositoryMetric: the metrics that have a repository label; userMetric
// those with a user label.
var repositoryMetric, userMetric = map[string]bool{}, map[string]bool{}

func init() {
	for _, m := range Metrics {
		if slices.Contains(m.Labels, store.RepositoryLabel) {
			repositoryMetric[m.Name] = true
		}
		if slices.Contains(m.Labels, store.UserLabel) {
			userMetric[m.Name] = true
		}
	}
}
