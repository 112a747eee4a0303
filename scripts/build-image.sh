#!/usr/bin/env bash
# Builds the hostport-agent image without a registry or Docker: mmdebstrap makes a Debian
# bookworm rootfs (variant essential) from the machine's own apt sources, with the shared
# libraries the built binaries need, copies the binaries in at the paths daemonset/Dockerfile
# uses, and `podman import` makes it an image with the Dockerfile's ENV, ENTRYPOINT and CMD.
# Idempotent: a rebuild retags and removes the image it replaces (when no container uses it).
set -euo pipefail

readonly PROG="build-image.sh"
REPO_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
readonly REPO_ROOT
# shellcheck source=scripts/lib/apt_sources.sh
source "${REPO_ROOT}/scripts/lib/apt_sources.sh"
readonly DOCKERFILE="${REPO_ROOT}/daemonset/Dockerfile"
readonly DAEMONSET="${REPO_ROOT}/daemonset/daemonset.yaml"
# The agent runs the nft command for rules with conditions (nft/kernel/nft_context.h), so ldd
# does not show it.
readonly EXECUTED_PACKAGES=(nftables)

TAG=""
BUILD_DIR="${REPO_ROOT}/build"
TAR_OUT=""
WORK=""

log() { printf '%s: %s\n' "$PROG" "$*"; }
die() { printf '%s: error: %s\n' "$PROG" "$*" >&2; exit 1; }

usage() {
  cat <<EOF
Usage: sudo scripts/build-image.sh [--tag NAME] [--build-dir DIR] [--tar FILE]

Builds the hostport-agent image from an existing build tree, without a registry:
  1. mmdebstrap --variant=essential bookworm ROOTFS.tar <this machine's apt sources>
     --include= the Debian packages of the shared libraries that ldd shows for the agent,
     hostportctl and hostport-admission, and ${EXECUTED_PACKAGES[*]} (run as a command, so ldd
     cannot show it);
     the plugin is static and needs none;
  2. copies them in (debug info stripped) where daemonset/Dockerfile puts them:
     /usr/local/bin/hostport-agent, /usr/local/bin/hostportctl,
     /usr/local/bin/hostport-admission, /opt/hostport/bin/hostport;
  3. podman import ROOTFS.tar NAME, with the ENV, ENTRYPOINT and CMD lines of
     daemonset/Dockerfile as --change (GLIBC_TUNABLES among them).

  --tag NAME        image name (default: the image of daemonset/daemonset.yaml, $(default_tag))
  --build-dir DIR   build tree with agent/hostport-agent, agent/hostportctl,
                    admission/hostport-admission and
                    cni-plugin/hostport (default: build/ in the repository)
  --tar FILE        also keep the rootfs tar at FILE

Needs root, mmdebstrap and podman (scripts/setup.sh) and the Debian mirror of the apt sources.
podman's containers.conf is CONTAINERS_CONF when set (and its storage CONTAINERS_STORAGE_CONF);
otherwise a private one (runtime runc, no default ulimits, CNI backend) in a temp dir. Nothing
under /etc changes. Temp files are removed at exit.
EOF
}

# The image name daemonset.yaml runs (its first `image:`).
default_tag() {
  sed -n 's/^ *image: *\([^ #]*\).*/\1/p' "$DAEMONSET" | head -n 1
}

cleanup() {
  if [[ -n "$WORK" && -d "$WORK" ]]; then
    rm -rf "$WORK"
  fi
}

# Prints the Debian package that owns the shared library at $1 (a path from ldd). With merged
# /usr, dpkg knows a file under one of /lib and /usr/lib only: try both, and the real path.
package_of() {
  local lib="$1" candidate owner
  for candidate in "$lib" "$(readlink -f "$lib")" "/usr${lib}" "${lib#/usr}"; do
    if owner="$(dpkg-query -S "$candidate" 2>/dev/null)"; then
      printf '%s\n' "${owner%%:*}"
      return 0
    fi
  done
  die "no Debian package owns $lib (needed by the binaries)"
}

# Prints, one a line and sorted, the packages the binaries' shared libraries come from.
runtime_packages() {
  local binary lib
  {
    printf '%s\n' "${EXECUTED_PACKAGES[@]}"
    for binary in "$@"; do
      ldd "$binary" | grep -q 'not found' && die "ldd $binary: $(ldd "$binary" | grep 'not found')"
      while read -r lib; do
        package_of "$lib"
      done < <(ldd "$binary" | awk '$2 == "=>" && $3 ~ /^\// {print $3}')
    done
  } | sort -u
}

# Prints podman import --change arguments from the Dockerfile's last stage (ENV, ENTRYPOINT,
# CMD), so the two builds cannot drift apart.
dockerfile_changes() {
  local line
  while read -r line; do
    printf -- '--change\n%s\n' "$line"
  done < <(awk '/^FROM /{n=0; delete keep} /^(ENV|ENTRYPOINT|CMD) /{keep[n++]=$0}
                END{for (i = 0; i < n; i++) print keep[i]}' "$DOCKERFILE")
}

main() {
  while (($# > 0)); do
    case "$1" in
      -h | --help) usage; return 0 ;;
      --tag) (($# >= 2)) || die "--tag needs a value"; TAG="$2"; shift 2 ;;
      --build-dir) (($# >= 2)) || die "--build-dir needs a value"; BUILD_DIR="$2"; shift 2 ;;
      --tar) (($# >= 2)) || die "--tar needs a value"; TAR_OUT="$2"; shift 2 ;;
      *) usage >&2; die "unknown argument: $1" ;;
    esac
  done
  [[ -n "$TAG" ]] || TAG="$(default_tag)"
  [[ -n "$TAG" ]] || die "no --tag given and no image: in $DAEMONSET"
  ((EUID == 0)) || die "needs root (mmdebstrap builds the rootfs as root)"
  local tool
  for tool in mmdebstrap podman ldd dpkg-query strip; do
    command -v "$tool" >/dev/null || die "missing tool '$tool' (run scripts/setup.sh)"
  done

  local agent="${BUILD_DIR}/agent/hostport-agent" ctl="${BUILD_DIR}/agent/hostportctl"
  local admission="${BUILD_DIR}/admission/hostport-admission"
  local plugin="${BUILD_DIR}/cni-plugin/hostport" binary
  for binary in "$agent" "$ctl" "$admission" "$plugin"; do
    [[ -x "$binary" ]] || die "$binary is missing: build first (ninja -C ${BUILD_DIR})"
  done

  WORK="$(mktemp -d "${TMPDIR:-/tmp}/hostport-image.XXXXXX")"
  trap cleanup EXIT
  if [[ -z "${CONTAINERS_CONF:-}" ]]; then
    printf '[containers]\ndefault_ulimits = []\n[engine]\nruntime = "runc"\n[network]\nnetwork_backend = "cni"\n' \
      >"$WORK/containers.conf"
    export CONTAINERS_CONF="$WORK/containers.conf"
  fi

  # Copies with the debug info stripped, as the Dockerfile does: what the image holds is fixed
  # even if the build tree changes while mmdebstrap runs.
  mkdir -p "$WORK/bin"
  for binary in "$agent" "$ctl" "$admission" "$plugin"; do
    strip --strip-debug -o "$WORK/bin/$(basename "$binary")" "$binary" ||
      die "strip $binary failed"
  done

  local packages sources
  packages="$(runtime_packages "$agent" "$ctl" "$admission" | paste -sd, -)"
  sources="$(sources_file)"
  log "rootfs: bookworm essential + ${packages} (sources: ${sources})"
  local started=$SECONDS
  mmdebstrap --quiet --variant=essential --include="$packages" \
    --dpkgopt='path-exclude=/usr/share/{doc,man,info,locale}/*' \
    --customize-hook='mkdir -p "$1/opt/hostport/bin" "$1/usr/local/bin"' \
    --customize-hook="copy-in $WORK/bin/hostport-agent $WORK/bin/hostportctl $WORK/bin/hostport-admission /usr/local/bin" \
    --customize-hook="copy-in $WORK/bin/hostport /opt/hostport/bin" \
    --customize-hook='chroot "$1" /usr/local/bin/hostportctl --help >/dev/null' \
    --customize-hook='chroot "$1" /usr/local/bin/hostport-admission --help >/dev/null' \
    --customize-hook='chroot "$1" env CNI_COMMAND=VERSION /opt/hostport/bin/hostport </dev/null >/dev/null' \
    bookworm "$WORK/rootfs.tar" "$sources" ||
    die "mmdebstrap failed (see its output above)"
  log "rootfs: $(du -h "$WORK/rootfs.tar" | cut -f1) in $((SECONDS - started)) s"

  local old_id="" new_id changes
  old_id="$(podman image inspect --format '{{.Id}}' "$TAG" 2>/dev/null || true)"
  mapfile -t changes < <(dockerfile_changes)
  new_id="$(podman import --quiet "${changes[@]}" "$WORK/rootfs.tar" "$TAG")" ||
    die "podman import of the rootfs as $TAG failed"
  new_id="${new_id#sha256:}"
  if [[ -n "$old_id" && "${old_id#sha256:}" != "$new_id" ]]; then
    podman rmi "$old_id" >/dev/null 2>&1 || log "kept the replaced image $old_id (in use)"
  fi
  if [[ -n "$TAR_OUT" ]]; then
    mv "$WORK/rootfs.tar" "$TAR_OUT"
    log "rootfs tar kept at $TAR_OUT"
  fi
  log "image $TAG ($new_id) built in $((SECONDS - started)) s"
}

main "$@"
