#!/usr/bin/env bash
# Installs every build and test dependency of hostport from Debian's packages, and the npm
# packages of the manifest checks (tests/manifests, npm ci from its lock file).
# Idempotent: when every package is already installed it does nothing (no apt-get update, no npm).
set -euo pipefail

readonly PROG="setup.sh"

# Build toolchain and libraries, then the runtime tools the netns and e2e tests and the demo drive.
PACKAGES=(
  build-essential cmake ninja-build pkg-config git
  libboost-dev libspdlog-dev nlohmann-json3-dev libyaml-cpp-dev libcli11-dev
  libgtest-dev libgmock-dev
  libssl-dev    # HTTPS to the Kubernetes API (issue 13): kube/ and tests/fakes/fake_kube_*
  # The hostport.io CSI driver (issue 26, agent/csi): gRPC, and protoc with its C++ gRPC plugin
  # for the .proto subsets.
  libgrpc++-dev libprotobuf-dev protobuf-compiler protobuf-compiler-grpc
  containernetworking-plugins nftables iproute2 conntrack
  podman runc busybox-static iptables
  curl procps ca-certificates jq
  openssl       # the demo makes the admission webhook's certificate (scripts/demo.sh)
  mmdebstrap    # scripts/build-image.sh and the image test (tests/image)
  yq            # the image test reads the rendered manifests (tests/image/image_test.sh)
  clang-format  # scripts/format.sh and the ctest SourcesAreClangFormatted
  yamllint      # tests/manifests: the DaemonSet manifests
)
# Commands the manifest checks run (tests/manifests), each with the Debian package that brings it
# when it is missing. A machine may have them from elsewhere (kubectl from Kubernetes' own apt
# repository, node from NodeSource), and those are used as they are.
readonly -A COMMAND_PACKAGES=([kubectl]=kubernetes-client [node]=nodejs [npm]=npm)
# The schema checker's npm packages, installed from its package-lock.json.
readonly MANIFEST_CHECKS_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)/tests/manifests"
# What scripts/bench.sh needs on top: the plot.
readonly BENCH_PACKAGES=(gnuplot-nox)
# What scripts/fuzz.sh and scripts/test.sh's sanitizer stage need on top: clang 16 (the oldest
# that builds our std::expected with libstdc++ 12, see CMakeLists.txt), its sanitizer and
# libFuzzer runtimes, and llvm-16 for its llvm-symbolizer, which every sanitized process is
# pointed at (scripts/lib/sanitize_tree.sh): a report without file:line helps no one; and
# clang-tidy-16, which the stage runs over the production sources (scripts/tidy.sh).
readonly FUZZ_PACKAGES=(clang-16 libclang-rt-16-dev llvm-16 clang-tidy-16)

log() { printf '%s: %s\n' "$PROG" "$*"; }
die() { printf '%s: error: %s\n' "$PROG" "$*" >&2; exit 1; }

usage() {
  cat <<EOF
Usage: sudo scripts/setup.sh [--bench] [--fuzz] [--help]

Installs the Debian packages hostport needs to build and test:
  ${PACKAGES[*]}

and, when the commands are missing: kubectl (kubernetes-client), node (nodejs), npm.
Runs 'apt-get update' and 'apt-get install --no-install-recommends' only when a
package is missing; when everything is installed it exits at once. Needs root.
Then 'npm ci' in tests/manifests (the offline schema checker of the manifests),
skipped when its node_modules was installed from the current package-lock.json.

  --bench   also install what scripts/bench.sh needs: ${BENCH_PACKAGES[*]}
  --fuzz    also install what scripts/fuzz.sh and the sanitizer stage of scripts/test.sh
            need: ${FUZZ_PACKAGES[*]}
EOF
}

# Prints the packages from PACKAGES that dpkg does not report as installed, and the package of
# every command of COMMAND_PACKAGES that is not on PATH.
missing_packages() {
  local pkg status cmd
  for pkg in "${PACKAGES[@]}"; do
    status="$(dpkg-query -W -f='${db:Status-Status}' "$pkg" 2>/dev/null || true)"
    if [[ "$status" != "installed" ]]; then
      printf '%s\n' "$pkg"
    fi
  done
  for cmd in "${!COMMAND_PACKAGES[@]}"; do
    command -v "$cmd" >/dev/null || printf '%s\n' "${COMMAND_PACKAGES[$cmd]}"
  done
}

# `npm ci` in tests/manifests, skipped when node_modules was installed from this very lock file
# (a stamp holds the lock file's hash): the common run costs one sha256sum.
install_manifest_checker() {
  local stamp="${MANIFEST_CHECKS_DIR}/node_modules/.hostport-lock.sha256"
  local want
  want="$(sha256sum "${MANIFEST_CHECKS_DIR}/package-lock.json" | cut -d' ' -f1)"
  if [[ -f "$stamp" && "$(cat "$stamp")" == "$want" ]]; then
    log "manifest checker: node_modules is current"
    return 0
  fi
  log "manifest checker: npm ci in ${MANIFEST_CHECKS_DIR}"
  (cd "$MANIFEST_CHECKS_DIR" && npm ci --no-audit --no-fund --loglevel=error)
  printf '%s\n' "$want" >"$stamp"
}

main() {
  local arg
  for arg in "$@"; do
    case "$arg" in
      -h | --help) usage; return 0 ;;
      --bench) PACKAGES+=("${BENCH_PACKAGES[@]}") ;;
      --fuzz) PACKAGES+=("${FUZZ_PACKAGES[@]}") ;;
      *) usage >&2; die "unknown argument: $arg" ;;
    esac
  done

  command -v dpkg-query >/dev/null || die "dpkg-query not found: this script supports Debian only"

  local missing
  mapfile -t missing < <(missing_packages)
  if ((${#missing[@]} == 0)); then
    log "all ${#PACKAGES[@]} packages are installed"
    install_manifest_checker
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
  install_manifest_checker
}

main "$@"
