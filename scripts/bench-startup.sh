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
ccusage=.cache/ccusage/node_modules/@ccusage/ccusage-linux-x64/bin/ccusage
if [ ! -f "$ccusage" ]; then
  mkdir -p .cache/ccusage
  npm install --silent --no-audit --no-fund --prefix .cache/ccusage ccusage@20.0.24 >/dev/null
fi
chmod +x "$ccusage"
ccusage=$PWD/$ccusage
mkdir -p "$work/ccdata" && ln -s "$corpus" "$work/ccdata/threads"
cc=$(for i in $(seq "$runs"); do
  s=$(date +%s.%N); env -i HOME="$work" PATH=/usr/bin:/bin AMP_DATA_DIR="$work/ccdata" "$ccusage" amp session --json --offline >/dev/null
  e=$(date +%s.%N); echo "$e - $s" | bc; done | median)
echo "ccusage amp session --json --offline: ${cc} s (median of $runs)"

# The initial scan against raw reading into a reused buffer, 2 goroutines,
# same run: the parser, the whole watcher path, and the skip-only floor.
AMP_BENCH_CORPUS="$corpus" "$work/threads.test" -test.run '^$' -test.bench 'InitialScan/(scanner|watcher|skip-only)' -test.benchtime 5x | grep Benchmark

# The exporter: exec to /-/ready, polled every 2 ms from one process (so
# the measurement does not steal the CPU it measures), then the peak RSS
# and /metrics scrape times (during the scan: every 50 ms; after it: 5).
python3 - "$work/amp-exporter" "$corpus" "$port" "$runs" "$cc" <<'PY'
import http.client, os, statistics, subprocess, sys, time
exe, corpus, port, runs, cc = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), float(sys.argv[5])
def get(path):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
    t = time.perf_counter()
    try:
        c.request("GET", path); r = c.getresponse(); r.read(); return r.status, time.perf_counter() - t
    except OSError:
        return None, 0
    finally:
        c.close()
# The fixed cost: exec to /-/ready on an empty directory.
import tempfile
empty = tempfile.mkdtemp()
fixed = []
for _ in range(runs):
    t0 = time.perf_counter()
    p = subprocess.Popen([exe, f"--web.listen-address=127.0.0.1:{port}", "--log.level=warn"], env=dict(os.environ, AMP_THREADS_DIR=empty))
    while get("/-/ready")[0] != 200:
        time.sleep(0.001)
    fixed.append(time.perf_counter() - t0)
    p.terminate(); p.wait()
print(f"amp-exporter exec -> /-/ready, empty directory: {statistics.median(fixed)*1000:.0f} ms (median of {runs})")

readys, during, after, rss = [], [], [], []
for _ in range(runs):
    env = dict(os.environ, AMP_THREADS_DIR=corpus)
    t0 = time.perf_counter()
    p = subprocess.Popen([exe, f"--web.listen-address=127.0.0.1:{port}", "--log.level=warn"], env=env)
    last_scrape = 0
    while True:
        st, _ = get("/-/ready")
        if st == 200:
            break
        now = time.perf_counter()
        if st is not None and now - last_scrape > 0.05:
            last_scrape = now
            s2, d = get("/metrics")
            if s2 == 200: during.append(d)
        time.sleep(0.002)
    readys.append(time.perf_counter() - t0)
    for _ in range(5):
        after.append(get("/metrics")[1])
    with open(f"/proc/{p.pid}/status") as f:
        rss += [int(l.split()[1]) for l in f if l.startswith("VmHWM")]
    p.terminate(); p.wait()
r = statistics.median(readys)
print(f"amp-exporter exec -> /-/ready: {r*1000:.0f} ms (median of {runs}: {', '.join(f'{x*1000:.0f}' for x in readys)})")
print(f"  ratio to ccusage: {r/cc:.3f}")
print(f"  peak RSS: {max(rss)/1024:.1f} MiB")
if during: print(f"  /metrics during the first scan: {len(during)} scrapes, median {statistics.median(during)*1000:.1f} ms, max {max(during)*1000:.1f} ms")
print(f"  /metrics after: median {statistics.median(after)*1000:.1f} ms, max {max(after)*1000:.1f} ms")

# A restart with --storage.path: unchanged files are recognised from stat
# and not read again.
store = tempfile.mkdtemp()
restarts = []
for i in range(runs + 1):
    t0 = time.perf_counter()
    p = subprocess.Popen([exe, f"--web.listen-address=127.0.0.1:{port}", "--log.level=warn", f"--storage.path={store}"], env=dict(os.environ, AMP_THREADS_DIR=corpus))
    while get("/-/ready")[0] != 200:
        time.sleep(0.002)
    if i > 0:  # the first run writes the state
        restarts.append(time.perf_counter() - t0)
    p.terminate(); p.wait()
r = statistics.median(restarts)
print(f"restart with --storage.path -> /-/ready: {r*1000:.0f} ms (median of {runs}), ratio to ccusage: {r/cc:.3f}")
PY
