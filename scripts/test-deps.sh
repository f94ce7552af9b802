#!/usr/bin/env bash
# Installs or fetches what `make test` needs, pinned, and caches it under
# .cache/ (git-ignored), so `make test` works on a fresh
# machine. A second run finds everything and takes about a second.
#
#   bash scripts/test-deps.sh              everything: prometheus/promtool,
#                                          chromium, ccusage, the Amp CLI, helm,
#                                          Prometheus 3
#   bash scripts/test-deps.sh amp-cli-path fetches the Amp CLI if needed and
#                                          prints its path
#   bash scripts/test-deps.sh helm-path    builds helm if needed and prints
#                                          its path (.ci/helm-check uses this)
#   bash scripts/test-deps.sh prometheus3-path
#                                          builds Prometheus 3 if needed and
#                                          prints its path (make e2e, e2e-rw2)
#
# System packages (Debian's prometheus, chromium) come from apt-get when
# this runs as root; otherwise the script stops with the exact command to
# run. Everything else stays inside the repository's .cache/.
set -euo pipefail
cd "$(dirname "$0")/.."

# The pins. Change a version here and the next run fetches or builds it.
HELM_VERSION=v3.22.0
# Prometheus 3 (the OTLP receiver and remote-write 2.0 tests); Go module
# versions of Prometheus are v0.<major*100+minor>, so v0.316.0 = 3.16.0.
# make passes its PROMETHEUS3_VERSION here, so the two never disagree.
PROMETHEUS3_VERSION=${PROMETHEUS3_VERSION:-v0.316.0}
CCUSAGE_VERSION=20.0.24
# The Amp CLI the stand-in of the Amp server is checked against
# (internal/testsupport/ampservertest's conformance test names the same version).
AMP_CLI_VERSION=0.0.1790142911-g7618fb

root=$PWD
cache=$root/.cache

say() { echo "--- test-deps: $*" >&2; }

# helm, built from the module proxy once per version into
# .cache/helm/<version>/helm (the directory name is the cache key).
helm_path() {
  local dir=$cache/helm/$HELM_VERSION bin=$cache/helm/$HELM_VERSION/helm
  if [ -x "$bin" ]; then
    echo "$bin"
    return
  fi
  # The official build stamps the version and the Kubernetes version helm
  # assumes offline (capabilities, deprecation lint); a plain build leaves
  # 1.20, which fails the chart's kubeVersion >=1.25 in helm template.
  # k8s 1.37 = the client-go v0.37 that helm v3.22.0 is built with.
  local ldflags="-s -w -X helm.sh/helm/v3/internal/version.version=$HELM_VERSION -X helm.sh/helm/v3/internal/version.gitTreeState=clean"
  local pkg
  for pkg in helm.sh/helm/v3/pkg/lint/rules helm.sh/helm/v3/pkg/chartutil; do
    ldflags+=" -X $pkg.k8sVersionMajor=1 -X $pkg.k8sVersionMinor=37"
  done
  say "building helm $HELM_VERSION into ${dir#"$root"/} (once per version; the longest step of a first run)"
  local t0=$SECONDS tmp
  mkdir -p "$dir"
  tmp=$(mktemp -d "$dir/.build-XXXXXX")
  # -trimpath and -s -w: nothing in the binary depends on this machine,
  # and the link step writes no debug information.
  GOBIN=$tmp GOFLAGS=-trimpath go install -ldflags "$ldflags" "helm.sh/helm/v3/cmd/helm@$HELM_VERSION" >&2
  mv "$tmp/helm" "$bin"
  rmdir "$tmp"
  say "helm $HELM_VERSION built in $((SECONDS - t0)) s"
  echo "$bin"
}

# Prometheus 3, built from the module proxy once per version into
# .cache/prom3/<version>/prometheus (the directory name is the cache key).
# Debian's prometheus (apt) is 2.x, which has no OTLP receiver worth
# testing against and no remote-write 2.0.
prometheus3_path() {
  local dir=$cache/prom3/$PROMETHEUS3_VERSION bin=$cache/prom3/$PROMETHEUS3_VERSION/prometheus
  if [ -x "$bin" ]; then
    echo "$bin"
    return
  fi
  say "building Prometheus $PROMETHEUS3_VERSION into ${dir#"$root"/} (once per version; several minutes on a loaded machine)"
  local t0=$SECONDS tmp
  mkdir -p "$dir"
  tmp=$(mktemp -d "$dir/.build-XXXXXX")
  # Built into a temporary directory and moved in whole, so an interrupted
  # build never leaves a half-written binary that the -x test above takes
  # for a finished one.
  GOBIN=$tmp GOFLAGS=-trimpath go install -ldflags "-s -w" "github.com/prometheus/prometheus/cmd/prometheus@$PROMETHEUS3_VERSION" >&2
  mv "$tmp/prometheus" "$bin"
  rmdir "$tmp"
  say "Prometheus $PROMETHEUS3_VERSION built in $((SECONDS - t0)) s"
  echo "$bin"
}

# apt_need CMD PACKAGE: installs PACKAGE with apt-get when CMD is missing
# (as root), or stops with the command to run.
apt_missing=()
apt_need() {
  command -v "$1" >/dev/null 2>&1 || apt_missing+=("$2")
}

install_apt() {
  [ ${#apt_missing[@]} -eq 0 ] && return
  local pkgs
  pkgs=$(printf '%s\n' "${apt_missing[@]}" | sort -u | tr '\n' ' ')
  if [ "$(id -u)" -ne 0 ] || ! command -v apt-get >/dev/null 2>&1; then
    echo "make test needs: ${pkgs}— run: sudo apt-get install -y --no-install-recommends ${pkgs% }" >&2
    exit 1
  fi
  say "apt-get install ${pkgs% }"
  local t0=$SECONDS
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq >&2
  # shellcheck disable=SC2086 # word splitting wanted
  apt-get install -y -qq --no-install-recommends $pkgs >/dev/null
  say "apt-get took $((SECONDS - t0)) s"
}

install_ccusage() {
  # ccusage 20 (a Rust binary on npm): the reference the end-to-end tests
  # compare token totals with.
  local dir=$cache/ccusage
  local bin=$dir/node_modules/@ccusage/ccusage-linux-x64/bin/ccusage
  local stamp=$dir/.version
  if [ -f "$bin" ] && [ "$(cat "$stamp" 2>/dev/null)" = "$CCUSAGE_VERSION" ]; then
    chmod +x "$bin"
    return
  fi
  if ! command -v npm >/dev/null 2>&1; then
    echo "make test needs npm to fetch ccusage $CCUSAGE_VERSION — run: sudo apt-get install -y npm" >&2
    exit 1
  fi
  say "npm install ccusage@$CCUSAGE_VERSION into .cache/ccusage"
  local t0=$SECONDS
  mkdir -p "$dir"
  npm install --silent --no-audit --no-fund --prefix "$dir" "ccusage@$CCUSAGE_VERSION" >/dev/null
  chmod +x "$bin" # npm unpacks the platform binary without its execute bit
  echo "$CCUSAGE_VERSION" >"$stamp"
  say "npm took $((SECONDS - t0)) s"
}

# The real Amp CLI (a self-contained executable on npm, linux-x64 only
# here), into .cache/amp-cli/<version>/amp: the conformance test runs it,
# offline, against the stand-in of the Amp server. npm checks the tarball's
# integrity against the registry. Prints the path.
amp_cli_path() {
  local dir=$cache/amp-cli/$AMP_CLI_VERSION bin=$cache/amp-cli/$AMP_CLI_VERSION/amp
  if [ -x "$bin" ]; then
    echo "$bin"
    return
  fi
  if [ "$(uname -s)/$(uname -m)" != "Linux/x86_64" ]; then
    say "no Amp CLI build is fetched for $(uname -s)/$(uname -m); its conformance test skips"
    return
  fi
  if ! command -v npm >/dev/null 2>&1; then
    echo "make test needs npm to fetch the Amp CLI $AMP_CLI_VERSION — run: sudo apt-get install -y npm" >&2
    exit 1
  fi
  say "npm pack @ampcode/cli-linux-x64@$AMP_CLI_VERSION into ${dir#"$root"/} (about 42 MB)"
  local t0=$SECONDS tmp
  mkdir -p "$dir"
  tmp=$(mktemp -d "$dir/.fetch-XXXXXX")
  (cd "$tmp" && npm pack --silent "@ampcode/cli-linux-x64@$AMP_CLI_VERSION" >/dev/null)
  tar -xzf "$tmp"/ampcode-cli-linux-x64-*.tgz -C "$tmp" package/amp
  chmod +x "$tmp/package/amp"
  mv "$tmp/package/amp" "$bin"
  rm -rf "$tmp"
  say "Amp CLI fetched in $((SECONDS - t0)) s"
  echo "$bin"
}

case "${1:-all}" in
amp-cli-path)
  amp_cli_path
  ;;
helm-path)
  helm_path
  ;;
prometheus3-path)
  prometheus3_path
  ;;
all)
  apt_need prometheus prometheus
  apt_need promtool prometheus
  apt_need chromium chromium
  install_apt
  install_ccusage
  amp_cli_path >/dev/null
  helm_path >/dev/null
  prometheus3_path >/dev/null
  ;;
*)
  echo "usage: $0 [all|helm-path|amp-cli-path|prometheus3-path]" >&2
  exit 2
  ;;
esac
