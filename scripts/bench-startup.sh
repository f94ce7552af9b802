#!/usr/bin/env bash
# Measures amp-exporter's start-up on a realistic corpus against ccusage and
# against reading the files raw, in the same run. Usage:
#   scripts/bench-startup.sh [corpus-dir]   (default: generates /tmp/amp-corpus-1g)
# Prints: corpus size, ccusage wall time, raw-read time, exporter time from
# exec to /-/ready (median of 5), its peak RSS, and /metrics scrape times.
set -euo pipefail
cd "$(dirname "$0")/.."
corpus=${1:-/tmp/amp-corpus-1g}
runs=${RUNS:-5}
port=${PORT:-19975}
work=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$work"' EXIT

if [ ! -d "$corpus" ]; then
  go run ./cmd/amp-threadgen -dir "$corpus" -threads 2000 -total-bytes 1GB -seed 1
fi
echo "corpus: $(ls "$corpus" | wc -l) files, $(du -sb "$corpus" | cut -f1) bytes"
cat "$corpus"/*.json > /dev/null # warm the page cache for everyone

go build -o "$work/amp-exporter" ./cmd/amp-exporter
go test -c -o "$work/threads.test" ./source/threads

median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }

# ccusage 20 (Rust binary from npm), reading the same directory.
if [ ! -x "$work/../amp-ccusage/node_modules/@ccusage/ccusage-linux-x64/bin/ccusage" ]; then
  mkdir -p /tmp/amp-ccusage
  (cd /tmp/amp-ccusage && npm install --silent --no-audit --no-fund ccusage@20.0.24 >/dev/null)
fi
ccusage=/tmp/amp-ccusage/node_modules/@ccusage/ccusage-linux-x64/bin/ccusage
mkdir -p "$work/ccdata" && ln -s "$corpus" "$work/ccdata/threads"
cc=$(for i in $(seq "$runs"); do
  s=$(date +%s.%N); env -i HOME="$work" PATH=/usr/bin:/bin AMP_DATA_DIR="$work/ccdata" "$ccusage" amp session --json --offline >/dev/null
  e=$(date +%s.%N); echo "$e - $s" | bc; done | median)
echo "ccusage amp session --json --offline: ${cc} s (median of $runs)"

# Raw reading into a reused buffer, 2 goroutines (the benchmark's baseline).
AMP_BENCH_CORPUS="$corpus" "$work/threads.test" -test.run '^$' -test.bench 'InitialScan/scanner' -test.benchtime 3x | grep Benchmark

# The exporter: exec to /-/ready.
times=()
for i in $(seq "$runs"); do
  s=$(date +%s%N)
  AMP_THREADS_DIR="$corpus" "$work/amp-exporter" --web.listen-address=127.0.0.1:$port --log.level=warn &
  pid=$!
  until curl -sf -o /dev/null "http://127.0.0.1:$port/-/ready"; do sleep 0.002; done
  e=$(date +%s%N)
  times+=($(( (e - s) / 1000000 )))
  rss=$(awk '/VmHWM/ {print $2}' /proc/$pid/status)
  scrape=$(for j in 1 2 3 4 5; do curl -s -o /dev/null -w '%{time_total}\n' "http://127.0.0.1:$port/metrics"; done | median)
  kill $pid; wait $pid 2>/dev/null || true
done
ready=$(printf '%s\n' "${times[@]}" | median)
echo "amp-exporter exec -> /-/ready: ${ready} ms (median of $runs: ${times[*]}), peak RSS ${rss} KiB, /metrics scrape ${scrape} s"
echo "ratio to ccusage: $(echo "scale=3; $ready / 1000 / $cc" | bc)"
