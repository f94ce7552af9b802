#!/usr/bin/env bash
# Runs the Helm chart's Deployment, as `helm template` renders it with its
# default image, under `podman kube play`: the chart's security contexts
# (uid 65534, read-only root filesystem), ConfigMap, emptyDir state and
# read-only thread hostPath against the image `make image` built. Checks
# /-/ready and the version in amp_exporter_build_info, then tears it down.
#   deploy/image/chart-test.sh <image.oci.tar> <version> <helm>
# podman here: runc, cgroupfs, lowered ulimits, host network (see
# run-test.sh); with host networking podman refuses port mappings, so the
# containerPort is dropped from the played copy, and the listen address
# and probes move to a free loopback port.
set -euo pipefail
cd "$(dirname "$0")/../.."
tarball=$1 version=$2 helm=$3
tmp=$(mktemp -d)
conf=$tmp/containers.conf
cat >"$conf" <<'CONF'
[containers]
default_ulimits = ["nofile=1024:1024", "nproc=1024:1024"]
netns = "host"
[engine]
runtime = "runc"
cgroup_manager = "cgroupfs"
CONF
P() { CONTAINERS_CONF=$conf podman "$@"; }
ref=
trap 'P kube down "$tmp/play.yaml" >/dev/null 2>&1 || true; [ -z "$ref" ] || P rmi -f "$ref" >/dev/null 2>&1 || true; rm -rf "$tmp"' EXIT
loaded=$(P load -q -i "$tarball"); ref=${loaded#Loaded image: }; ref=${ref%%$'\n'*}
mkdir -p "$tmp/threads"; chmod 755 "$tmp" "$tmp/threads"
"$helm" template ae deploy/helm/amp-exporter --set threads.hostPath="$tmp/threads" \
  --set image.tag="$version" --set image.pullPolicy=Never > "$tmp/all.yaml"
grep -q "image: \"$ref\"" "$tmp/all.yaml" || { echo "chart-test: the chart's image is not $ref"; exit 1; }
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
python3 - "$tmp/all.yaml" "$tmp/play.yaml" "$port" <<'PY'
import sys, yaml
port = int(sys.argv[3])
docs = [d for d in yaml.safe_load_all(open(sys.argv[1])) if d]
for d in docs:
    if d["kind"] == "Deployment":
        for c in d["spec"]["template"]["spec"]["containers"]:
            c.pop("ports", None)
            # Host networking is shared with the machine: a free loopback port.
            c["args"] = [a if a != "--web.listen-address=:9974" else f"--web.listen-address=127.0.0.1:{port}" for a in c["args"]]
            for p in ("startupProbe", "livenessProbe", "readinessProbe"):
                if p in c:
                    c[p]["httpGet"]["port"] = port
yaml.safe_dump_all(docs, open(sys.argv[2], "w"))
PY
grep -q -- "--web.listen-address=127.0.0.1:$port" "$tmp/play.yaml" || { echo "chart-test: the chart's listen address changed"; exit 1; }
# (podman logs errors about systemd healthcheck timers here; kept aside)
(cd "$tmp" && P kube play --build=false --network host play.yaml >/dev/null 2>"$tmp/play.err") || { cat "$tmp/play.err"; exit 1; }
ctr=ae-amp-exporter-pod-0-amp-exporter
ready=
for _ in $(seq 1 100); do
  if curl -fsS http://127.0.0.1:$port/-/ready >/dev/null 2>&1; then ready=1; break; fi
  sleep 0.2
done
[ -n "$ready" ] || { echo "chart-test: not ready; log:"; P logs "$ctr"; exit 1; }
info=$(curl -fsS http://127.0.0.1:$port/metrics | grep '^amp_exporter_build_info')
grep -qF "version=\"$version\"" <<<"$info" || { echo "chart-test: $info"; exit 1; }
got=$(P inspect "$ctr" -f '{{.Config.User}} {{.HostConfig.ReadonlyRootfs}}')
[ "$got" = "65534:65534 true" ] || { echo "chart-test: user/read-only root: $got"; exit 1; }
echo "chart-test: ok — the chart's Deployment ran $ref as 65534 on a read-only root, ready, $info"
