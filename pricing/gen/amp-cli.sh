#!/usr/bin/env bash
# Regenerates the tables taken from the Amp CLI's own bundle:
# pricing/amp-speeds.json (fast and plaid multipliers per model) and
# parser/agentmode/modes.json (agent modes and their aliases). The CLI is
# the one scripts/test-deps.sh pins (AMP_CLI overrides it); needs node.
set -euo pipefail
cd "$(dirname "$0")"
cli=${AMP_CLI:-$(bash ../../scripts/test-deps.sh amp-cli-path)}
if [ -z "$cli" ]; then
  echo "no Amp CLI for this platform: set AMP_CLI to a linux/amd64 build" >&2
  exit 1
fi
node amp-cli.cjs speeds "$cli" > ../amp-speeds.json.tmp
mv ../amp-speeds.json.tmp ../amp-speeds.json
node amp-cli.cjs modes "$cli" > ../../parser/agentmode/modes.json.tmp
mv ../../parser/agentmode/modes.json.tmp ../../parser/agentmode/modes.json
echo "pricing/amp-speeds.json, parser/agentmode/modes.json: $(node -e 'const d=require("../amp-speeds.json"); console.log(d.source+"@"+d.version+", "+d.models.length+" models with a fast or plaid price")')"
