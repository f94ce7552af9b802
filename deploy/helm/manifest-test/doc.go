// Package manifesttest checks the manifests the amp-exporter Helm chart
// renders. It is its own Go module so that the exporter's go.mod stays free
// of Kubernetes dependencies; .ci/helm-check renders the chart and runs it
// with RENDERED_DIR pointing at the rendered files.
package manifesttest
