// Package collector describes and renders the stores' snapshots as
// Prometheus metrics (AmpCollector, AmyCollector) and holds the exporter's
// own metrics (ExporterMetrics, ServerMetrics). The counting itself is
// package store's.
package collector
