#!/usr/bin/env bash
# Checks what `make release` left in dist/: an archive per platform, every
# one listed in sha256sums.txt with the right sum, and the version stamped
# into each binary (go version -m gives the target platform; -trimpath
# keeps -ldflags out of it, so the version string is looked for in the
# binary; the linux ones are run: --version, and amp_exporter_build_info
# from a short-lived exporter on loopback; arm64 under qemu when present).
#   scripts/release-check.sh [dist]
set -euo pipefail
cd "$(dirname "$0")/.."
dist=${1:-dist}
platforms="linux-amd64 linux-arm64 darwin-amd64 darwin-arm64 windows-amd64"
tmp=$(mktemp -d)
pid=
trap '[ -z "$pid" ] || kill "$pid" 2>/dev/null; rm -rf "$tmp"' EXIT

(cd "$dist" && sha256sum --quiet -c sha256sums.txt)
version=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["version"])' "$dist/metadata.json")
echo "release-check: version $version, checksums ok"
for p in $platforms; do
  base=amp-exporter-$version.$p
  exe=amp-exporter
  if [[ $p == windows-* ]]; then
    arch=$dist/$base.zip exe=amp-exporter.exe
    python3 -c 'import zipfile,sys; zipfile.ZipFile(sys.argv[1]).extractall(sys.argv[2])' "$arch" "$tmp"
  else
    arch=$dist/$base.tar.gz
    tar -xzf "$arch" -C "$tmp"
  fi
  grep -q " $(basename "$arch")\$" "$dist/sha256sums.txt" || { echo "release-check: $arch not in sha256sums.txt"; exit 1; }
  bin=$tmp/$base/$exe
  for f in LICENSE README.md CHANGELOG.md docs/counting.md docs/formats/amp-threads.md config.example.yaml; do
    [ -f "$tmp/$base/$f" ] || { echo "release-check: $arch lacks $f"; exit 1; }
  done
  info=$(go version -m "$bin")
  goos=${p%-*} goarch=${p#*-}
  for want in "GOOS=$goos" "GOARCH=$goarch" "CGO_ENABLED=0"; do
    grep -qF -- "$want" <<<"$info" || { echo "release-check: $bin: no $want in its build info"; exit 1; }
  done
  grep -qaF -- "$version" "$bin" || { echo "release-check: $bin does not contain version $version"; exit 1; }
  run=()
  case $p in
    linux-amd64) ;;
    linux-arm64) q=$(command -v qemu-aarch64-static || command -v qemu-aarch64 || true); [ -n "$q" ] && run=("$q") || run=(skip) ;;
    *) run=(skip) ;;
  esac
  if [ "${run[*]}" != skip ]; then
    out=$("${run[@]}" "$bin" --version 2>&1)
    grep -q "version $version " <<<"$out" || { echo "release-check: $bin --version says: $out"; exit 1; }
    echo "release-check: $p runs: $(head -1 <<<"$out")"
  else
    echo "release-check: $p ok (build info: $goos/$goarch, version $version)"
  fi
done

# The version in amp_exporter_build_info, from the linux/amd64 binary.
mkdir -p "$tmp/threads"
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
AMP_THREADS_DIR=$tmp/threads "$tmp/amp-exporter-$version.linux-amd64/amp-exporter" --web.listen-address=127.0.0.1:$port >"$tmp/log" 2>&1 &
pid=$!
for _ in $(seq 1 100); do curl -fsS "http://127.0.0.1:$port/-/ready" >/dev/null 2>&1 && break; sleep 0.1; done
metric=$(curl -fsS "http://127.0.0.1:$port/metrics" | grep '^amp_exporter_build_info')
grep -qF "version=\"$version\"" <<<"$metric" || { echo "release-check: build_info: $metric"; cat "$tmp/log"; exit 1; }
echo "release-check: $metric"
