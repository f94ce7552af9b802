#!/usr/bin/env bash
# Checks the laptop service definitions:
#   deploy/systemd/amp-exporter.service  systemd-analyze verify --user, with
#       a home holding the binary at the path ExecStart names; any warning
#       fails the check (verify exits 0 on most of them).
#   deploy/launchd/io.github.amp-exporter.plist  no plutil off macOS, so:
#       strict XML plist parse (python3 plistlib), the keys and types
#       launchd.plist(5) defines, absolute paths once __HOME__ is filled
#       in, and a binary round trip through libplist's plistutil.
# Each check is also run on a broken copy, which must fail.
#   deploy/services-check.sh <amp-exporter binary>
set -euo pipefail
cd "$(dirname "$0")/.."
bin=$(realpath "$1")
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

unit=deploy/systemd/amp-exporter.service
plist=deploy/launchd/io.github.amp-exporter.plist

verify_unit() { # file → fails on a non-zero exit or any output
  local home=$tmp/home out
  mkdir -p "$home/.local/bin" "$tmp/run"
  chmod 700 "$tmp/run"
  install -m755 "$bin" "$home/.local/bin/amp-exporter"
  out=$(HOME=$home XDG_RUNTIME_DIR=$tmp/run systemd-analyze verify --user "$1" 2>&1) || { echo "$out"; return 1; }
  [ -z "$out" ] || { echo "$out"; return 1; }
}

check_plist() { # file
  python3 - "$1" <<'PY' || return 1
import plistlib, sys
path = sys.argv[1]
raw = open(path, "rb").read()
if b'<!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN"' not in raw:
    sys.exit(f"{path}: no Apple plist DOCTYPE")
p = plistlib.loads(raw, fmt=plistlib.FMT_XML)
types = {"Label": str, "ProgramArguments": list, "RunAtLoad": bool, "KeepAlive": (bool, dict),
         "ThrottleInterval": int, "ProcessType": str, "StandardOutPath": str, "StandardErrorPath": str,
         "EnvironmentVariables": dict, "WorkingDirectory": str}
errs = []
for k, v in p.items():
    if k not in types: errs.append(f"unknown key {k}")
    elif not isinstance(v, types[k]) or (types[k] is int and isinstance(v, bool)): errs.append(f"{k}: wrong type {type(v).__name__}")
for k in ("Label", "ProgramArguments", "KeepAlive", "StandardErrorPath"):
    if k not in p: errs.append(f"missing {k}")
if p.get("Label") != "io.github.amp-exporter": errs.append("Label is not io.github.amp-exporter (the file name)")
if not all(isinstance(a, str) for a in p.get("ProgramArguments", [])): errs.append("ProgramArguments: not all strings")
if p.get("KeepAlive") != {"SuccessfulExit": False}: errs.append("KeepAlive: want {SuccessfulExit: false} (restart on failure)")
if p.get("ProcessType", "Background") not in ("Background", "Standard", "Adaptive", "Interactive"): errs.append("ProcessType")
home = "/Users/someone"
filled = plistlib.loads(raw.replace(b"__HOME__", home.encode()))
args = filled["ProgramArguments"]
paths = [args[0], filled["StandardOutPath"], filled["StandardErrorPath"]] + [a.split("=", 1)[1] for a in args if a.startswith("--storage.path=")]
if len(paths) != 4: errs.append("no --storage.path")
for x in paths:
    if not x.startswith(home + "/"): errs.append(f"{x}: not an absolute path under the home")
if "--storage.path=" + home + "/Library/Application Support/amp-exporter" not in args: errs.append("storage not in ~/Library/Application Support")
if errs: sys.exit(path + ": " + "; ".join(errs))
PY
  plistutil -i "$1" -o "$tmp/p.bin" && plistutil -i "$tmp/p.bin" -o "$tmp/p.xml" || return 1
  python3 -c 'import plistlib,sys; a,b=(plistlib.load(open(f,"rb")) for f in sys.argv[1:]); sys.exit(0 if a==b else "plistutil round trip differs")' "$1" "$tmp/p.xml"
}

verify_unit "$unit"
echo "services-check: $unit passes systemd-analyze verify --user ($(systemd-analyze --version | head -1))"
check_plist "$plist"
echo "services-check: $plist passes the plist checks and a plistutil round trip"

# The checks can fail: broken copies must be refused.
sed 's/^Restart=on-failure/Restart=sometimes/' "$unit" > "$tmp/broken.service"
if verify_unit "$tmp/broken.service" >/dev/null 2>&1; then echo "services-check: a bad Restart= went unnoticed"; exit 1; fi
sed 's|<false/>|<string>no</string>|' "$plist" > "$tmp/broken.plist"
if check_plist "$tmp/broken.plist" >/dev/null 2>&1; then echo "services-check: a bad KeepAlive went unnoticed"; exit 1; fi
sed 's|</dict>\n</plist>||; s|<key>RunAtLoad</key>|<key>RunAtLoad</key><key>x</key>|' "$plist" > "$tmp/broken2.plist"
if check_plist "$tmp/broken2.plist" >/dev/null 2>&1; then echo "services-check: a malformed plist went unnoticed"; exit 1; fi
echo "services-check: broken copies are refused"
