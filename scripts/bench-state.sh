#!/usr/bin/env bash
# Measures the counting state at scale against the built binary, for this
# tree and for a baseline git ref, side by side in one run (issue 9):
#   1. fresh scan of N small threads with --storage.path: time to /-/ready
#      and CPU time used by then (median of RUNS, default 3), peak RSS;
#   2. restart on that state: the same;
#   3. 25/30 of the files deleted, then one thread rewritten (grown by one
#      assistant message) every 0.25 s for 20 s, /metrics scraped every
#      0.1 s: bytes written by the process (/proc/PID/io write_bytes) over
#      the 20 s and the saves that follow them, worst scrape, peak RSS.
# Usage: scripts/bench-state.sh [threads] [baseline-ref]
#   (defaults: 30000 main; THREADS_BYTES sets the corpus size, default
#   8 kB a thread; BASELINE=none skips the baseline; THREADGEN_ARGS adds
#   amp-threadgen flags, e.g. "-days 365 -repositories 12" for a year)
set -euo pipefail
cd "$(dirname "$0")/.."
n=${1:-30000}
base=${2:-${BASELINE:-main}}
bytes=${THREADS_BYTES:-$((n * 8000))}
work=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$work"' EXIT

go build -o "$work/new" ./cmd/amp-exporter
bins=("new=$work/new")
if [ "$base" != none ]; then
  mkdir "$work/base-src"
  git archive "$base" | tar -x -C "$work/base-src"
  (cd "$work/base-src" && go build -o "$work/base" ./cmd/amp-exporter)
  bins=("base($base)=$work/base" "${bins[@]}")
fi
go run ./cmd/amp-threadgen -dir "$work/corpus" -threads "$n" -total-bytes "$bytes" -seed 9 ${THREADGEN_ARGS:-} >/dev/null
echo "corpus: $n threads, $(du -sb "$work/corpus" | cut -f1) bytes; $(nproc) cores"

python3 - "$work" "$n" "${RUNS:-3}" "${bins[@]}" <<'PY'
import http.client, json, os, shutil, signal, socket, statistics, subprocess, sys, time
work, n, runs, bins = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), [b.split("=", 1) for b in sys.argv[4:]]

def free_port():
    s = socket.socket(); s.bind(("127.0.0.1", 0)); p = s.getsockname()[1]; s.close(); return p

def get(port, path, timeout=5):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    t = time.perf_counter()
    try:
        c.request("GET", path); r = c.getresponse(); r.read(); return r.status, time.perf_counter() - t
    except OSError:
        return None, 0
    finally:
        c.close()

def status_kb(pid, field):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    return 0

def write_bytes(pid):
    with open(f"/proc/{pid}/io") as f:
        for line in f:
            if line.startswith("write_bytes:"):
                return int(line.split()[1])
    return 0

class Exporter:
    def __init__(self, exe, threads, storage):
        self.port = free_port()
        env = dict(os.environ, AMP_THREADS_DIR=threads)
        t0 = time.perf_counter()
        self.p = subprocess.Popen([exe, f"--web.listen-address=127.0.0.1:{self.port}", f"--storage.path={storage}",
                                   "--log.level=warn"], env=env, stdout=subprocess.DEVNULL, stderr=open(os.path.join(work, "log"), "a"))
        while True:
            if self.p.poll() is not None:
                sys.exit(f"{exe} exited: see {work}/log")
            code, _ = get(self.port, "/-/ready", 1)
            if code == 200:
                break
            time.sleep(0.005)
        self.ready = time.perf_counter() - t0
        f = open(f"/proc/{self.p.pid}/stat").read().rsplit(")", 1)[1].split()
        self.cpu = (int(f[11]) + int(f[12])) / os.sysconf("SC_CLK_TCK")
    def hwm_mb(self): return status_kb(self.p.pid, "VmHWM") / 1024
    def written(self): return write_bytes(self.p.pid)
    def stop(self):
        self.p.send_signal(signal.SIGTERM); self.p.wait(30)

def grow(path, k):
    d = json.load(open(path))
    a = next(m for m in d["messages"] if m.get("role") == "assistant" and m.get("usage"))
    m = json.loads(json.dumps(a)); m["messageId"] = len(d["messages"]) + k
    d["messages"].append(m); d["nextMessageId"] = m["messageId"] + 1
    tmp = path + ".tmp"
    with open(tmp, "w") as f: json.dump(d, f, indent=2)
    os.replace(tmp, path)

rows = []
for name, exe in bins:
    threads, storage = os.path.join(work, "t-" + exe.split("/")[-1]), os.path.join(work, "s-" + exe.split("/")[-1])
    shutil.copytree(os.path.join(work, "corpus"), threads, copy_function=os.link)
    r = {"name": name}
    ready, cpu, rss = [], [], 0
    for i in range(runs):
        shutil.rmtree(storage, ignore_errors=True)
        e = Exporter(exe, threads, storage)
        ready.append(e.ready); cpu.append(e.cpu)
        if i == runs - 1:
            time.sleep(12)  # the first save (the baseline saves every 10 s)
        rss = max(rss, e.hwm_mb()); e.stop()
    r["fresh_s"], r["fresh_cpu"], r["fresh_rss"] = statistics.median(ready), statistics.median(cpu), rss
    ready, cpu, rss = [], [], 0
    for i in range(runs):
        e = Exporter(exe, threads, storage)
        ready.append(e.ready); cpu.append(e.cpu); rss = max(rss, e.hwm_mb())
        if i < runs - 1:
            e.stop()
    r["restart_s"], r["restart_cpu"], r["restart_rss"] = statistics.median(ready), statistics.median(cpu), rss
    files = sorted(os.listdir(threads))
    for f in files[: n * 25 // 30]:
        os.remove(os.path.join(threads, f))
    time.sleep(12)
    w0 = e.written()
    target = os.path.join(threads, files[-1])
    scrapes, t_end, k, next_grow = [], time.perf_counter() + 20, 0, 0
    while time.perf_counter() < t_end:
        now = time.perf_counter()
        if now >= next_grow:
            grow(target, k); k += 1; next_grow = now + 0.25
        _, d = get(e.port, "/metrics"); scrapes.append(d)
        time.sleep(0.1)
    for _ in range(110):  # the saves that follow, scraping on
        _, d = get(e.port, "/metrics"); scrapes.append(d); time.sleep(0.1)
    scrapes.sort()
    r["written_mb"], r["peak_rss"] = (e.written() - w0) / 1e6, max(r["restart_rss"], e.hwm_mb())
    r["scrapes"] = f"{scrapes[len(scrapes)//2]*1000:.1f} / {scrapes[int(len(scrapes)*0.99)]*1000:.0f} / {scrapes[-1]*1000:.0f} ms"
    r["state_mb"] = sum(os.path.getsize(os.path.join(storage, f)) for f in os.listdir(storage)) / 1e6
    e.stop()
    rows.append(r)
    shutil.rmtree(threads)

print(f"| binary | fresh scan → ready (CPU) | its peak RSS | restart → ready (CPU) | its peak RSS | 20 s of rewrites: written | scrapes p50 / p99 / max | peak RSS | state on disk |")
print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
for r in rows:
    print(f"| {r['name']} | {r['fresh_s']:.2f} s ({r['fresh_cpu']:.2f} s) | {r['fresh_rss']:.0f} MB | {r['restart_s']:.2f} s ({r['restart_cpu']:.2f} s) | {r['restart_rss']:.0f} MB | "
          f"{r['written_mb']:.2f} MB | {r['scrapes']} | {r['peak_rss']:.0f} MB | {r['state_mb']:.1f} MB |")
PY
