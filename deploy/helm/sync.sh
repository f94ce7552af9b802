#!/usr/bin/env bash
# Copies the alert rules and Grafana dashboards into the chart, which can
# only package files under its own directory. The sources stay the truth:
# deploy/rules/amp-exporter.rules.yml and dashboards/*.json.
# .ci/helm-check fails when the copies differ. Run from anywhere.
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
chart="$root/deploy/helm/amp-exporter"

cp "$root/deploy/rules/amp-exporter.rules.yml" "$chart/files/amp-exporter.rules.yml"

mkdir -p "$chart/files/dashboards"
find "$chart/files/dashboards" -maxdepth 1 -name '*.json' -delete
shopt -s nullglob
for f in "$root"/dashboards/*.json; do
  cp "$f" "$chart/files/dashboards/"
done
echo "chart copies synced: rules and $(ls "$chart/files/dashboards" | grep -c '\.json$' || true) dashboard(s)"
