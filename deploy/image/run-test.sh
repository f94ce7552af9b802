#!/usr/bin/env bash
# Runs the exporter from the image built by `make image` under Debian's
# podman: load the oci-archive, start it (read-only threads mount, state in
# the image's volume), wait for /-/ready, check it runs as 65534 with the
# stamped version in amp_exporter_build_info, stop it with SIGTERM.
#   deploy/image/run-test.sh <image.oci.tar> <version>
#
# Flags this machine needs (each measured here, a Firecracker VM without
# CAP_SYS_RESOURCE and with hybrid cgroups v1):
#   --runtime runc --cgroup-manager=cgroupfs  crun: "cgroups in hybrid mode
#       not supported, drop all controllers from cgroupv2"
#   --ulimit nofile=1024:1024 --ulimit nproc=1024:1024  crun/runc:
#       "setrlimit RLIMIT_NOFILE: Operation not permitted" (podman raises the
#       limits by default; without CAP_SYS_RESOURCE only lowering works)
#   --network host  no netavark/slirp4netns needed; the port is on loopback
# Override with PODMAN (global flags) and PODMAN_RUN_FLAGS elsewhere.
set -euo pipefail
tarball=$1 version=$2
: "${PODMAN:=podman --runtime runc --cgroup-manager=cgroupfs}"
: "${PODMAN_RUN_FLAGS:=--ulimit nofile=1024:1024 --ulimit nproc=1024:1024 --network host}"
port=${PORT:-19974}
name=amp-exporter-image-test-$$
threads=$(mktemp -d)
ref=
trap '$PODMAN rm -f "$name" >/dev/null 2>&1 || true; [ -z "$ref" ] || $PODMAN rmi -f "$ref" >/dev/null 2>&1 || true; rm -rf "$threads"' EXIT
chmod 755 "$threads"

command -v podman >/dev/null || { echo "image-test: podman is not installed (apt-get install podman runc)"; exit 1; }
loaded=$($PODMAN load -q -i "$tarball")
ref=${loaded#Loaded image: }
ref=${ref%%$'\n'*}
echo "image-test: loaded $ref"

if ! $PODMAN run -d --name "$name" $PODMAN_RUN_FLAGS -v "$threads":/data/amp/threads:ro \
    "$ref" --web.listen-address=127.0.0.1:$port --storage.path=/var/lib/amp-exporter >/dev/null; then
  echo "image-test: the container runtime does not run here (error above); the image itself was verified by deploy/image verify"
  exit 1
fi
ready=
for _ in $(seq 1 100); do
  if curl -fsS "http://127.0.0.1:$port/-/ready" >/dev/null 2>&1; then ready=1; break; fi
  if [ "$($PODMAN inspect -f '{{.State.Running}}' "$name")" != true ]; then break; fi
  sleep 0.2
done
if [ -z "$ready" ]; then
  echo "image-test: the exporter never became ready; its log:"; $PODMAN logs "$name"; exit 1
fi
pid=$($PODMAN inspect -f '{{.State.Pid}}' "$name")
uid=$(awk '/^Uid:/ {print $2}' /proc/$pid/status)
[ "$uid" = 65534 ] || { echo "image-test: runs as uid $uid, want 65534"; exit 1; }
info=$(curl -fsS "http://127.0.0.1:$port/metrics" | grep '^amp_exporter_build_info')
case $info in
  *"version=\"$version\""*) ;;
  *) echo "image-test: build_info does not carry version $version: $info"; exit 1 ;;
esac
$PODMAN stop -t 10 "$name" >/dev/null
code=$($PODMAN inspect -f '{{.State.ExitCode}}' "$name")
[ "$code" = 0 ] || { echo "image-test: exit code $code after SIGTERM; log:"; $PODMAN logs "$name"; exit 1; }
log=$($PODMAN logs "$name" 2>&1)
grep -q 'first scan done' <<<"$log" || { echo "image-test: no first scan in the log"; exit 1; }
echo "image-test: ok — $ref ran as uid 65534, ready, $info, clean exit on SIGTERM"
