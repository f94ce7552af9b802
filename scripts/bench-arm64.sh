#!/usr/bin/env bash
# Parse throughput on linux/arm64 (under qemu-user) next to amd64, each as a
# ratio to a raw read or a copy measured in the same run: native amd64 with
# the AVX2 kernel, native amd64 with it off (the portable path arm64 uses),
# emulated amd64 with it off, and emulated arm64. The two emulated rows run
# the same Go code through the same emulator, so comparing them says whether
# arm64's code generation is out of line; the native no-AVX2 row says what
# the portable path costs on a real CPU.
#   scripts/bench-arm64.sh [corpus-dir]     (needs qemu-user-static)
set -euo pipefail
cd "$(dirname "$0")/.."
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
corpus=${1:-$out/corpus}
[ -d "$corpus" ] || go run ./cmd/amp-threadgen -dir "$corpus" -threads 200 -total-bytes 100MB -seed 1 >/dev/null
for arch in amd64 arm64; do
  for pkg in parser/thread source/threads internal/jsonscan; do
    CGO_ENABLED=0 GOARCH=$arch go test -c -o "$out/$(basename $pkg).$arch" ./$pkg
  done
done
run() { # mode pkg bench
  local mode=$1 pkg=$2 bench=$3 pre="" arch=amd64 env=()
  case $mode in
    native) ;;
    native-noavx2) env=(GODEBUG=cpu.avx2=off) ;;
    qemu-amd64-noavx2) pre=qemu-x86_64-static; env=(GODEBUG=cpu.avx2=off) ;;
    qemu-arm64) pre=qemu-aarch64-static; arch=arm64 ;;
  esac
  (cd "$pkg" && env "${env[@]}" AMP_BENCH_CORPUS="$corpus" $pre "$out/$(basename $pkg).$arch" \
    -test.run '^$' -test.bench "$bench" -test.benchtime 3x | grep '^Benchmark' | sed "s/^/$mode  /")
}
for mode in native native-noavx2 qemu-amd64-noavx2 qemu-arm64; do
  run $mode parser/thread 'Parse/(copy|scanner)$'
  run $mode source/threads 'InitialScan/(scanner|watcher|skip-only)/'
  run $mode internal/jsonscan 'SkipBlocks/(asm|bytewise|indexbyte)'
done
