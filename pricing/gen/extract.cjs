// Extracts the provider and model price table from @pydantic/genai-prices
// (MIT, https://github.com/pydantic/genai-prices) into the trimmed JSON the
// exporter embeds: per provider its model-match rule, per model its match
// rule and its prices in USD per million tokens. Run through generate.sh.
"use strict";
const fs = require("fs");
const path = require("path");
const vm = require("vm");

const pkgDir = path.join(__dirname, "node_modules", "@pydantic", "genai-prices");
const pkg = JSON.parse(fs.readFileSync(path.join(pkgDir, "package.json"), "utf8"));
const src = fs.readFileSync(path.join(pkgDir, "dist", "index.cjs"), "utf8");

// The package exports functions, not its data: find the data array (the
// module's first array of provider objects) and expose it.
const m = src.match(/(?:const|var|let)\s+(\w+)\s*=\s*\[\s*\{\s*id:/);
if (!m) throw new Error("provider table not found in index.cjs: the package layout changed");
const sandbox = { exports: {}, module: { exports: {} }, require, console, URL, fetch: undefined };
vm.runInNewContext(src + `\n;module.exports.__providers = ${m[1]};`, sandbox, { filename: "index.cjs" });
const providers = sandbox.module.exports.__providers;
if (!Array.isArray(providers) || !providers.every((p) => p.id && Array.isArray(p.models))) {
  throw new Error("unexpected provider table shape");
}

const keep = ["input_mtok", "output_mtok", "cache_read_mtok", "cache_write_mtok"];
// Tiered prices ({base, tiers: [{start, price}]}) bill the whole request at
// the tier's price once its prompt reaches start tokens. The exporter
// knows one threshold, 200k tokens (Anthropic's long context, and
// LiteLLM's *_above_200k_tokens fields); other tiers keep their base.
function trimPrice(p) {
  const out = {};
  for (const k of keep) {
    const v = p[k];
    if (typeof v === "number") out[k] = v;
    else if (v && typeof v === "object" && typeof v.base === "number") {
      out[k] = v.base;
      const tier = (v.tiers || []).find((t) => t.start === 200000);
      if (tier && typeof tier.price === "number") out[k.replace("_mtok", "_above_200k_mtok")] = tier.price;
    }
  }
  return out;
}
function trimPrices(prices) {
  if (Array.isArray(prices)) {
    return prices.map((c) => ({ start_date: c.constraint && c.constraint.start_date, prices: trimPrice(c.prices) }));
  }
  return [{ prices: trimPrice(prices) }];
}

const out = {
  source: "@pydantic/genai-prices",
  version: pkg.version,
  license: pkg.license,
  providers: providers.map((p) => ({
    id: p.id,
    model_match: p.model_match,
    models: p.models
      .map((mo) => ({ id: mo.id, match: mo.match, prices: trimPrices(mo.prices) }))
      .filter((mo) => mo.prices.some((c) => c.prices.input_mtok !== undefined || c.prices.output_mtok !== undefined)),
  })),
};
process.stdout.write(JSON.stringify(out, null, 1) + "\n");
