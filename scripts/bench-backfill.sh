#!/usr/bin/env bash
# Measures `amp-exporter backfill` against the exporter's own first scan of
# the same corpus, in the same run, alternating (the machine is shared:
# compare the ratio, not the seconds). Usage:
#   scripts/bench-backfill.sh [corpus-dir]   (default: generates /tmp/amp-corpus-1g)
# Prints, as medians of RUNS (default 3): the exporter's exec -> /-/ready
# (wall and CPU time) and its peak RSS after the scan, the backfill's wall
# and CPU time and peak RSS (OpenMetrics written to a file), and the
# ratios. On a busy machine the CPU ratio is the one to trust.
set -euo pipefail
cd "$(dirname "$0")/.."
corpus=${1:-/tmp/amp-corpus-1g}
runs=${RUNS:-3}
port=${PORT:-19976}
# The corpus's history ends early in March 2026 (threadgen's default
# start plus its four weeks); --until just after it keeps the months of
# flat samples after it out of the comparison (UNTIL=now to include them).
until=${UNTIL:-2026-03-06T00:00:00Z}
work=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$work"' EXIT

if [ ! -d "$corpus" ]; then
  go run ./cmd/amp-threadgen -dir "$corpus" -threads 2000 -total-bytes 1GB -seed 1
fi
echo "corpus: $(ls "$corpus" | wc -l) files, $(du -sb "$corpus" | cut -f1) bytes"
cat "$corpus"/*.json > /dev/null # warm the page cache

go build -o "$work/amp-exporter" ./cmd/amp-exporter
untilflag=()
if [ "$until" != now ]; then untilflag=(--until "$until"); fi

python3 - "$work" "$corpus" "$port" "$runs" "${untilflag[@]}" <<'PY'
import http.client, os, statistics, subprocess, sys, time
work, corpus, port, runs = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
extra = sys.argv[5:]
exe = os.path.join(work, "amp-exporter")
env = dict(os.environ, AMP_THREADS_DIR=corpus, AMP_API_KEY="", XDG_DATA_HOME=os.path.join(work, "xdg"))

def ready():
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
    try:
        c.request("GET", "/-/ready"); r = c.getresponse(); r.read(); return r.status == 200
    except OSError:
        return False
    finally:
        c.close()

def cpu_s(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

def rss_kb(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    return 0

scan, scan_rss, bf, bf_rss, summary = [], [], [], [], ""
scan_cpu, bf_cpu = [], []
for _ in range(runs):
    t0 = time.perf_counter()
    p = subprocess.Popen([exe, f"--web.listen-address=127.0.0.1:{port}", "--log.level=warn"], env=env)
    while not ready():
        time.sleep(0.002)
    scan.append(time.perf_counter() - t0)
    scan_cpu.append(cpu_s(p.pid))
    time.sleep(1)  # let the scan's garbage be collected, as a running exporter would
    scan_rss.append(rss_kb(p.pid))
    p.terminate(); p.wait()

    out = os.path.join(work, "history.om")
    t0 = time.perf_counter()
    r = subprocess.run(["/usr/bin/time", "-f", "%U %S %M", exe, "backfill", "--output", out,
                        "--label", "job=amp", "--label", "instance=laptop:9974"] + extra,
                       env=env, capture_output=True, text=True, check=True)
    bf.append(time.perf_counter() - t0)
    lines = r.stderr.strip().splitlines()
    u, s_, m_ = lines[-1].split()
    bf_cpu.append(float(u) + float(s_))
    bf_rss.append(int(m_))
    summary = next(l for l in lines if l.startswith("backfilled"))
    size = os.path.getsize(out)

m = statistics.median
print(f"exporter first scan (exec -> /-/ready): wall {m(scan):.2f} s, CPU {m(scan_cpu):.2f} s, peak RSS {m(scan_rss)/1024:.0f} MiB (wall of each run: {', '.join(f'{x:.2f}' for x in scan)})")
print(f"backfill (exec -> exit, file written):  wall {m(bf):.2f} s, CPU {m(bf_cpu):.2f} s, peak RSS {m(bf_rss)/1024:.0f} MiB (wall of each run: {', '.join(f'{x:.2f}' for x in bf)})")
print(f"  {summary}")
print(f"  OpenMetrics file: {size/1e6:.0f} MB")
print(f"ratio backfill / first scan: wall {m(bf)/m(scan):.2f}x, CPU {m(bf_cpu)/m(scan_cpu):.2f}x (budget 2x), peak RSS {m(bf_rss)/m(scan_rss):.2f}x")
PY
