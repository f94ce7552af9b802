#!/usr/bin/env bash
# Checks the alerting and recording rules and runs their unit tests:
#   bash deploy/rules/check.sh
# Needs promtool (Debian: apt-get install prometheus). Runs from any
# directory; the paths are relative to the repository root.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."

if ! command -v promtool >/dev/null 2>&1; then
  echo "check.sh: promtool not found in PATH." >&2
  echo "  Debian/Ubuntu: apt-get install -y --no-install-recommends prometheus" >&2
  echo "  or download a Prometheus release from https://prometheus.io/download/ and put promtool on PATH." >&2
  exit 127
fi

rules=deploy/rules/amp-exporter.rules.yml
tests=deploy/rules/amp-exporter.rules_test.yml
chart_copy=deploy/helm/amp-exporter/files/amp-exporter.rules.yml

promtool check rules "$rules"
promtool test rules "$tests"
promtool test rules deploy/rules/amp-server.rules_test.yml
promtool test rules deploy/rules/amp-chargeback.rules_test.yml
promtool test rules deploy/rules/amp-workspace.rules_test.yml

# The Helm chart ships a copy of the rules; it must be the same file.
if [ -f "$chart_copy" ] && ! cmp -s "$rules" "$chart_copy"; then
  echo "check.sh: $chart_copy differs from $rules; copy it over:" >&2
  echo "  cp $rules $chart_copy" >&2
  exit 1
fi
