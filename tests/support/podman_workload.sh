#!/usr/bin/env bash
# A pod's workload container as the kubelet has it started: podman (runc) on a private root
# (scripts/lib/podman.sh), joining the pod's network namespace, with the pod's hostport.io CSI
# volume directory bind-mounted read-only at /hostport. Runs COMMAND in busybox's sh, prints what
# it prints and exits with its status; removes its container, image and mounts however it ends.
#
# Usage: podman_workload.sh WORK NETNS_PATH VOLUME_DIR COMMAND
#   WORK        an empty directory of the caller's (podman's root, the image's rootfs)
#   NETNS_PATH  the pod's network namespace (a /run/netns file)
#   VOLUME_DIR  the volume's target directory, as the kubelet hands it to the runtime
set -euo pipefail

readonly PROG="podman_workload.sh"
if (($# != 4)); then
  sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed -e '$d' -e 's/^# \{0,1\}//' >&2
  exit 2
fi
readonly WORK="$1" NETNS_PATH="$2" VOLUME_DIR="$3" COMMAND="$4"
readonly IMAGE="localhost/hostport-workload:$$"

# shellcheck source=scripts/lib/podman.sh
source "$(dirname "${BASH_SOURCE[0]}")/../../scripts/lib/podman.sh"

cleanup() {
  set +e
  if ((${#PODMAN[@]} > 0)); then
    podman_ rm -f -t 0 -a >/dev/null 2>&1
    podman_ rmi -f -a >/dev/null 2>&1
  fi
  podman_unmount_under "$WORK"
}
trap cleanup EXIT

mkdir -p "$WORK/cni-bin" "$WORK/cni-conf"
podman_private_root "$WORK" "$WORK/cni-bin" "$WORK/cni-conf"
podman_import_busybox "$WORK" "$IMAGE" "$PROG" || {
  printf '%s: error: cannot import the busybox image\n' "$PROG" >&2
  exit 1
}
podman_ run --rm --network "ns:$NETNS_PATH" -v "$VOLUME_DIR:/hostport:ro" "$IMAGE" sh -c "$COMMAND"
