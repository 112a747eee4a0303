#!/usr/bin/env bash
# Installs every build and test dependency of hostport from Debian's packages.
# Idempotent: when every package is already installed it does nothing (no apt-get update).
set -euo pipefail

readonly PROG="setup.sh"

# Build toolchain and libraries, then the runtime tools the netns and e2e tests and the demo drive.
PACKAGES=(
  build-essential cmake ninja-build pkg-config git
  libnftables-dev libmnl-dev
  libboost-dev libspdlog-dev nlohmann-json3-dev libyaml-cpp-dev libcli11-dev
  libgtest-dev libgmock-dev
  containernetworking-plugins nftables iproute2 conntrack
  podman runc busybox-static iptables
  curl procps ca-certificates jq
  clang-format  # scripts/format.sh and the ctest SourcesAreClangFormatted
)
# What scripts/bench.sh needs on top: the plot.
readonly BENCH_PACKAGES=(gnuplot-nox)

log() { printf '%s: %s\n' "$PROG" "$*"; }
die() { printf '%s: error: %s\n' "$PROG" "$*" >&2; exit 1; }

usage() {
  cat <<EOF
Usage: sudo scripts/setup.sh [--bench] [--help]

Installs the Debian packages hostport needs to build and test:
  ${PACKAGES[*]}

Runs 'apt-get update' and 'apt-get install --no-install-recommends' only when a
package is missing; when everything is installed it exits at once. Needs root.

  --bench   also install what scripts/bench.sh needs: ${BENCH_PACKAGES[*]}
EOF
}

# Prints the packages from PACKAGES that dpkg does not report as installed.
missing_packages() {
  local pkg status
  for pkg in "${PACKAGES[@]}"; do
    status="$(dpkg-query -W -f='${db:Status-Status}' "$pkg" 2>/dev/null || true)"
    if [[ "$status" != "installed" ]]; then
      printf '%s\n' "$pkg"
    fi
  done
}

main() {
  case "${1:-}" in
    -h | --help) usage; return 0 ;;
    --bench) PACKAGES+=("${BENCH_PACKAGES[@]}") ;;
    "") ;;
    *) usage >&2; die "unknown argument: $1" ;;
  esac

  command -v dpkg-query >/dev/null || die "dpkg-query not found: this script supports Debian only"

  local missing
  mapfile -t missing < <(missing_packages)
  if ((${#missing[@]} == 0)); then
    log "all ${#PACKAGES[@]} packages are installed"
    return 0
  fi

  if ((EUID != 0)); then
    die "missing packages: ${missing[*]}; installing them needs root: run 'sudo $0'"
  fi

  export DEBIAN_FRONTEND=noninteractive
  log "missing: ${missing[*]}"
  log "apt-get update"
  apt-get update -q
  log "apt-get install ${#missing[@]} packages"
  apt-get install -y -q --no-install-recommends "${missing[@]}"

  mapfile -t missing < <(missing_packages)
  if ((${#missing[@]} != 0)); then
    die "still not installed after apt-get: ${missing[*]}"
  fi
  log "all ${#PACKAGES[@]} packages are installed"
}

main "$@"
