// Extracts, from the Amp CLI's executable, the two tables the exporter
// takes from Amp itself: how fast and plaid speeds are billed per model
// (`node amp-cli.cjs speeds <amp>`), and the agent modes with the aliases
// the CLI reads old mode names through (`node amp-cli.cjs modes <amp>`).
// Run through amp-cli.sh; the exporter's tests run it too, when the CLI
// is fetched, and compare its output with the checked-in tables.
//
// The CLI is a Bun executable: its JavaScript is in the ELF section
// `.bun`, as UTF-16LE. Every pattern below is checked: when the bundle's
// shape changes the script fails and says which part it could not find,
// rather than writing a table that is quietly wrong.
"use strict";
const fs = require("fs");

function fail(msg) {
  process.stderr.write(`amp-cli.cjs: ${msg}\n`);
  process.exit(1);
}

// bunSection returns the bytes of the ELF64 section named `.bun`.
function bunSection(file) {
  const b = fs.readFileSync(file);
  if (b.readUInt32BE(0) !== 0x7f454c46 || b[4] !== 2) fail(`${file}: not an ELF64 executable`);
  const shoff = Number(b.readBigUInt64LE(0x28));
  const shentsize = b.readUInt16LE(0x3a);
  const shnum = b.readUInt16LE(0x3c);
  const shstrndx = b.readUInt16LE(0x3e);
  const sh = (i) => shoff + i * shentsize;
  const strOff = Number(b.readBigUInt64LE(sh(shstrndx) + 0x18));
  for (let i = 0; i < shnum; i++) {
    const nameOff = b.readUInt32LE(sh(i));
    const end = b.indexOf(0, strOff + nameOff);
    if (b.toString("latin1", strOff + nameOff, end) !== ".bun") continue;
    const off = Number(b.readBigUInt64LE(sh(i) + 0x18));
    const size = Number(b.readBigUInt64LE(sh(i) + 0x20));
    return b.subarray(off, off + size);
  }
  fail(`${file}: no .bun section`);
}

// source is the bundle's JavaScript. The section mixes UTF-16LE text with
// other bytes; decoding it whole keeps the text readable and the rest
// harmless to the patterns.
function source(file) {
  const sec = bunSection(file);
  const at = sec.indexOf(Buffer.from("fastModeMultiplier", "utf16le"));
  if (at < 0) fail("fastModeMultiplier not found in the bundle");
  return sec.subarray(at % 2).toString("utf16le");
}

function one(src, re, what) {
  const m = src.match(re);
  if (!m) fail(`${what} not found in the bundle: its shape changed`);
  return m;
}

function version(src) {
  return one(src, /clientVersion:"(0\.0\.\d+-g[0-9a-f]+)"/, "the CLI's version")[1];
}

// The model table: `KEY:{provider:<enum>.PROVIDER,name:"…",…,pricing:{…},capabilities:…}`.
// The bundle holds it more than once (the CLI and its workers): every copy
// must agree.
function models(src) {
  const providers = {};
  for (const m of src.matchAll(/\b([A-Z][A-Z_0-9]*):"([a-z][a-z0-9-]*)"/g)) {
    if (!(m[1] in providers)) providers[m[1]] = m[2];
  }
  const entry = /\b([A-Z][A-Z0-9_]*):\{provider:[\w$]+\.([A-Z_0-9]+),name:"([^"]+)",displayName:"[^"]*"/g;
  const copies = new Map();
  for (const m of src.matchAll(entry)) {
    const end = src.indexOf("capabilities:", m.index);
    const body = src.slice(m.index, end < 0 ? m.index + 600 : end);
    const p = body.match(/pricing:\{([^}]*)\}/);
    const e = { key: m[1], provider: providers[m[2]] || m[2].toLowerCase(), name: m[3] };
    if (p) {
      for (const kv of p[1].split(",")) {
        const [k, v] = kv.split(":");
        if (k === "fastModeMultiplier") e.fast = Number(v);
        else if (k === "plaidModeMultiplier") e.plaid = Number(v);
      }
    }
    const id = `${e.provider}/${e.key}`;
    const prev = copies.get(id);
    if (prev && JSON.stringify(prev) !== JSON.stringify(e)) fail(`two copies of the model table disagree on ${id}`);
    copies.set(id, e);
  }
  if (copies.size < 20) fail(`only ${copies.size} models found in the model table`);
  return [...copies.values()];
}

// The speed rules, checked against the bundle: the speed → features
// mapping, the reading back of features into a speed, and which models
// run fast and plaid (JFt, Tb, v6 and LCH in the bundle's own minified
// names, found by shape).
function speedRules(src, table) {
  one(src, /case"standard":return\[\];case"fast":return\["fast"\];case"plaid":return\["fast","plaid"\]/, "the speed → features mapping");
  one(src, /if\(!\w+\(\w+\?\?\[\],"fast"\)\)return"standard";return \w+\(\w+\?\?\[\],"plaid"\)\?"plaid":"fast"/, "features → speed");
  one(src, /if\(t==="plaid"&&\w+\(H\)\)return"plaid";if\(t!==void 0&&t!=="standard"&&\w+\(H\)\)return"fast";return"standard"/, "the effective speed of a model");
  const plaidOnly = one(src, /return t===[\w$]+\.OPENAI&&e===[\w$]+\.([A-Z_0-9]+)\.name\}/, "the plaid model")[1];
  // Fast: an OpenAI model named gpt-…, an Anthropic model with a fast
  // multiplier, and the models the rule names one by one.
  const fastRule = one(src, /function \w+\(H\)\{let\{provider:t,model:e\}=\w+\(H\);if\(t===[\w$]+\.OPENAI\)return e\.startsWith\("gpt-"\);if\(t===[\w$]+\.ANTHROPIC\)return \w+\(e\);(.*?)return!1\}/, "the models that run fast")[1];
  const named = [...fastRule.matchAll(/[\w$]+\.([A-Z][A-Z0-9_]*)\.name/g)].map((m) => m[1]);
  // The -Fast routes of GLM 5.2 are billed at their base model's
  // multiplier (LCH: the base model's pricing).
  const routes = one(src, /if\(r===[\w$]+\.BASENTEN\)return e===[\w$]+\.([A-Z_0-9]+)\.name\.toLowerCase\(\);if\(r===[\w$]+\.FIREWORKS_AI\)return\[([^\]]+)\]/, "the fast GLM routes");
  const fastRoutes = [routes[1], ...[...routes[2].matchAll(/[\w$]+\.([A-Z_0-9]+)/g)].map((m) => m[1])];
  one(src, /\?t===[\w$]+\.BASENTEN\?[\w$]+\.BASETEN_GLM_5_2:[\w$]+\.FIREWORKS_GLM_5_2:/, "the GLM routes' base models");
  const byKey = (provider, key) => table.find((e) => e.key === key && (provider === undefined || e.provider === provider));
  const out = [];
  for (const e of table) {
    let fast;
    if (e.provider === "openai") fast = e.name.startsWith("gpt-") ? e.fast : undefined;
    else if (e.provider === "anthropic") fast = e.fast;
    else if (named.includes(e.key)) fast = e.fast;
    else if (fastRoutes.includes(e.key)) {
      const base = byKey(e.provider, e.provider === "baseten" ? "BASETEN_GLM_5_2" : "FIREWORKS_GLM_5_2");
      fast = base && base.fast;
    }
    let plaid;
    if (e.key === plaidOnly && e.provider === "openai") plaid = e.plaid;
    else if (e.plaid !== undefined) fail(`${e.name} has a plaid multiplier but is not the plaid model`);
    if (fast === undefined && plaid === undefined) continue;
    const row = { provider: e.provider, name: e.name };
    if (fast !== undefined) row.fast = fast;
    if (plaid !== undefined) row.plaid = plaid;
    out.push(row);
  }
  out.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  return out;
}

function modes(src) {
  const keys = [];
  const table = one(src, /\{DEEP:\{key:"deep".*?\}\}\};/s, "the agent mode table")[0];
  for (const m of table.matchAll(/\b([A-Z][A-Z_0-9]*):\{key:(?:"([^"]+)"|([\w$]+)),displayName:"([^"]*)"/g)) {
    keys.push({ key: m[1], mode: m[2], display: m[4] });
  }
  const aliasSrc = one(src, /\{\[(\w+)\.RUSH\.key\]:\1\.LOW\.key(?:,\[\1\.[A-Z_]+\.key\]:\1\.[A-Z_]+\.key)*\}/, "the agent mode aliases")[0];
  const modeOf = (k) => {
    const e = keys.find((x) => x.key === k);
    if (!e || !e.mode) fail(`alias names the mode ${k}, which is not in the table`);
    return e.mode;
  };
  const aliases = {};
  for (const m of aliasSrc.matchAll(/\[\w+\.([A-Z_]+)\.key\]:\w+\.([A-Z_]+)\.key/g)) aliases[modeOf(m[1])] = modeOf(m[2]);
  // Modes whose key is a variable (internal test modes) are left out.
  const names = keys.filter((k) => k.mode !== undefined).map((k) => k.mode);
  return { modes: names.filter((n) => !(n in aliases)).sort(), aliases };
}

const [what, file] = process.argv.slice(2);
if (!file || !["speeds", "modes"].includes(what)) fail("usage: node amp-cli.cjs speeds|modes <path to the amp executable>");
const src = source(file);
const head = { source: "@ampcode/cli", version: version(src) };
const out = what === "speeds" ? { ...head, models: speedRules(src, models(src)) } : { ...head, ...modes(src) };
process.stdout.write(JSON.stringify(out, null, 1) + "\n");
