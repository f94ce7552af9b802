package collector

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/amp-exporter/amp-exporter/store"
)

// The benchmark's two ties to the store's and the registry's API, apart
// so that the benchmark's file runs unchanged on a tree without the
// repository label (with these two written for it) and the scrape times
// compare.

// benchStore is a store as the exporter makes it: the default label cap,
// the repository label on.
func benchStore() *store.ThreadStore {
	return store.NewThreadStore(store.StoreOptions{MaxLabelValues: 100, Repositories: store.NewRepositories(nil)})
}

// benchGatherer is the registry as /metrics reads it.
func benchGatherer(reg *prometheus.Registry) prometheus.Gatherer { return WithoutEmptyRepository(reg) }
