#!/usr/bin/env bash
# Installs the system tools a platform check needs (issue 14's make
# targets), from Debian's apt when running as root; otherwise stops with
# the command to run. Each argument is COMMAND:PACKAGE.
#   bash scripts/platform-deps.sh qemu-aarch64-static:qemu-user-static podman:podman
set -euo pipefail
missing=()
for need in "$@"; do
  cmd=${need%%:*} pkg=${need#*:}
  command -v "$cmd" >/dev/null 2>&1 || missing+=("$pkg")
done
[ ${#missing[@]} -eq 0 ] && exit 0
pkgs=$(printf '%s\n' "${missing[@]}" | sort -u | tr '\n' ' ')
if [ "$(id -u)" -ne 0 ] || ! command -v apt-get >/dev/null 2>&1; then
  echo "this check needs: ${pkgs}— run: sudo apt-get install -y --no-install-recommends ${pkgs% }" >&2
  exit 1
fi
echo "--- platform-deps: apt-get install ${pkgs% }" >&2
t0=$SECONDS
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq >&2
# shellcheck disable=SC2086 # word splitting wanted
apt-get install -y -qq --no-install-recommends -o DPkg::Lock::Timeout=300 $pkgs >/dev/null
echo "--- platform-deps: apt-get took $((SECONDS - t0)) s" >&2
