// Package collector describes and renders the stores' snapshots as
// Prometheus metrics (AmpCollector, AmyCollector) and holds the exporter's
// own metrics (ExporterMetrics, ServerMetrics). The counting itself is
// package store's.
//
// Every metric has one row in the table Metrics (metrics.go): its name,
// type, labels, HELP and the store family its values come from. A store
// family's row is the metric its row of the store's families table holds
// (store.Exposed), so that it is declared once; the metrics set by code
// have their rows here, and their instruments are built from them
// (instruments.go). The collectors render the store families from the
// table; docs/metrics.md is generated from it and testdata/output.prom
// pins the whole output:
//
//	go test ./collector -update
package collector

//go:generate go test -run . -update .
