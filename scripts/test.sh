#!/usr/bin/env bash
# The test entry point: install dependencies, configure, build, and run ctest.
# Extra arguments go to ctest as they are, e.g. `scripts/test.sh -L unit`.
set -euo pipefail

readonly PROG="test.sh"
REPO_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
readonly REPO_ROOT
# HOSTPORT_BUILD_DIR lets a developer keep a second tree; the default is build/.
readonly BUILD_DIR="${HOSTPORT_BUILD_DIR:-${REPO_ROOT}/build}"
readonly JOBS="${HOSTPORT_JOBS:-$(nproc)}"

log() { printf '%s: %s\n' "$PROG" "$*"; }
die() { printf '%s: error: %s\n' "$PROG" "$*" >&2; exit 1; }

usage() {
  cat <<EOF
Usage: sudo scripts/test.sh [CTEST_ARGS...]

Runs scripts/setup.sh (quick when everything is installed), configures
  cmake -G Ninja -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo -DHOSTPORT_BUILD_BENCH=ON
builds everything, the benchmark programs too (so they cannot rot; nothing runs them), and runs
  ctest --test-dir build --output-on-failure --no-tests=error [CTEST_ARGS...]
from the repository root, whatever the current directory. Exits with ctest's code, and prints
ctest's summary line and how many tests were skipped. With CI=true (as CI runs it) it refuses to
run as anyone but root, and a skipped test fails the run: CI runs every tier.

Environment:
  HOSTPORT_BUILD_DIR=DIR   build tree (default: build/ in the repository)
  HOSTPORT_JOBS=N          parallel build jobs (default: nproc, here ${JOBS})

Test tiers are ctest labels:
  scripts/test.sh -L unit     unit tests (no root needed)
  scripts/test.sh -L netns    netns integration tests (root)
  scripts/test.sh -L e2e      podman end-to-end test (root)
  scripts/test.sh -LE e2e     everything but the e2e test
Any other ctest option passes through too (-R REGEX, -V, -j N, ...).
EOF
}

main() {
  local arg
  for arg in "$@"; do
    case "$arg" in
      -h | --help) usage; return 0 ;;
    esac
  done

  cd "$REPO_ROOT"

  # CI must run every tier: as anyone but root the netns and e2e tests would skip, not fail.
  if [[ "${CI:-}" == "true" ]] && ((EUID != 0)); then
    die "CI=true but not root: the netns and e2e tiers need root and would be skipped"
  fi

  log "setup"
  "${REPO_ROOT}/scripts/setup.sh"

  log "configure (${BUILD_DIR})"
  cmake -G Ninja -S "$REPO_ROOT" -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DHOSTPORT_BUILD_BENCH=ON

  log "build (-j${JOBS})"
  cmake --build "$BUILD_DIR" -j"$JOBS"

  log "ctest $*"
  local rc=0 out
  out="$(mktemp "${TMPDIR:-/tmp}/hostport-ctest.XXXXXX")"
  # shellcheck disable=SC2064  # expand now: the path is fixed.
  trap "rm -f '$out'" EXIT
  ctest --test-dir "$BUILD_DIR" --output-on-failure --no-tests=error "$@" 2>&1 | tee "$out" ||
    rc=$?
  # With pipefail, rc is ctest's code unless tee itself failed.
  local summary
  summary="$(grep -E '^[0-9]+% tests passed' "$out" | tail -n 1 || true)"
  if [[ -n "$summary" ]]; then
    log "summary: ${summary}"
  else
    log "summary: ctest printed no summary line (exit ${rc})"
  fi
  local skipped
  skipped="$(grep -cE '\*\*\*Skipped|[[:space:]]Skipped[[:space:]]' "$out" || true)"
  log "skipped: ${skipped}"
  if [[ "${CI:-}" == "true" ]] && ((skipped > 0 && rc == 0)); then
    log "error: ${skipped} tests skipped under CI, which runs every tier"
    rc=1
  fi
  log "ctest exit code ${rc}"
  return "$rc"
}

main "$@"
