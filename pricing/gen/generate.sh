#!/usr/bin/env bash
# Regenerates pricing/genai-prices.json from the pinned @pydantic/genai-prices
# (see package.json). Needs node and npm (the npm registry is reachable).
set -euo pipefail
cd "$(dirname "$0")"
npm install --silent --no-audit --no-fund --no-package-lock >/dev/null
node extract.cjs > ../genai-prices.json.tmp
mv ../genai-prices.json.tmp ../genai-prices.json
echo "pricing/genai-prices.json: $(node -e 'const d=require("../genai-prices.json"); console.log(d.source+"@"+d.version+", "+d.providers.length+" providers, "+d.providers.reduce((n,p)=>n+p.models.length,0)+" models")')"
