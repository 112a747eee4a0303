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
# The sanitizer stage's tree (scripts/lib/sanitize_tree.sh), and whether the stage runs.
readonly SANITIZE_DIR="${HOSTPORT_SANITIZE_BUILD_DIR:-${REPO_ROOT}/build-sanitize}"
readonly SANITIZE="${HOSTPORT_SANITIZE:-1}"
# shellcheck source=scripts/lib/sanitize_tree.sh
source "${REPO_ROOT}/scripts/lib/sanitize_tree.sh"

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

Then the sanitizer stage (unless HOSTPORT_SANITIZE=0; CI always runs it): scripts/setup.sh --fuzz
(clang 16), a second tree build-sanitize/ built by clang 16 with ASan and UBSan
(scripts/lib/sanitize_tree.sh), and in it
  ctest --test-dir build-sanitize -L sanitize
which runs every unit test, each fuzz target for 10 s from its seeds (scripts/fuzz.sh,
docs/fuzzing.md), the netns suite AgentPluginTest with the agent and the plugin built with
the sanitizers too, and clang-tidy over the production sources (ClangTidy: scripts/tidy.sh,
which checks again only what changed since a clean run). Every sanitizer report, in a test or in a process it started, is written
under build-sanitize/sanitizer-reports/ and fails the run, as a failed test does. CTEST_ARGS
apply to the first ctest only. The stage prints its own summary line.

Environment:
  HOSTPORT_BUILD_DIR=DIR   build tree (default: build/ in the repository)
  HOSTPORT_JOBS=N          parallel build jobs (default: nproc, here ${JOBS})
  HOSTPORT_SANITIZE=0      skip the sanitizer stage (refused with CI=true)
  HOSTPORT_SANITIZE_BUILD_DIR=DIR  the sanitizer stage's tree (default: build-sanitize/)

Test tiers are ctest labels:
  scripts/test.sh -L unit     unit tests (no root needed)
  scripts/test.sh -L netns    netns integration tests (root)
  scripts/test.sh -L e2e      podman end-to-end test (root)
  scripts/test.sh -LE e2e     everything but the e2e test
Any other ctest option passes through too (-R REGEX, -V, -j N, ...).
EOF
}

# Each ctest run's summary line, for the recap at the end.
SUMMARIES=()

# run_ctest NAME BUILD_DIR [CTEST_ARGS...]: runs ctest, prints its summary line (prefixed by
# NAME) and how many tests skipped; fails as ctest does, or when a test skipped under CI.
run_ctest() {
  local name="$1" build_dir="$2"
  shift 2
  log "${name}ctest $*"
  local rc=0 out
  out="$(mktemp "${TMPDIR:-/tmp}/hostport-ctest.XXXXXX")"
  ctest --test-dir "$build_dir" --output-on-failure --no-tests=error "$@" 2>&1 | tee "$out" ||
    rc=$?
  # With pipefail, rc is ctest's code unless tee itself failed.
  local summary
  summary="$(grep -E '^[0-9]+% tests passed' "$out" | tail -n 1 || true)"
  summary="${summary:-ctest printed no summary line (exit ${rc})}"
  SUMMARIES+=("$summary")
  log "${name}summary: ${summary}"
  local skipped
  skipped="$(grep -cE '\*\*\*Skipped|[[:space:]]Skipped[[:space:]]' "$out" || true)"
  rm -f "$out"
  log "${name}skipped: ${skipped}"
  if [[ "${CI:-}" == "true" ]] && ((skipped > 0 && rc == 0)); then
    log "error: ${skipped} tests skipped under CI, which runs every tier"
    rc=1
  fi
  return "$rc"
}

# The sanitizer stage (see usage): build-sanitize/'s `sanitize` label. Every report goes to a
# file of its own (log_path), from the tests and from every agent and plugin they start, so a
# report fails the stage even where a test would not notice (a leak at an agent's exit).
# Called as `sanitizer_stage || ...`, where set -e does not apply: each step checks itself.
sanitizer_stage() {
  log "sanitize: setup --fuzz"
  "${REPO_ROOT}/scripts/setup.sh" --fuzz || return 1
  log "sanitize: configure (${SANITIZE_DIR})"
  configure_sanitize_tree "$REPO_ROOT" "$SANITIZE_DIR" || return 1
  log "sanitize: build (-j${JOBS})"
  cmake --build "$SANITIZE_DIR" -j"$JOBS" --target sanitize-tests || return 1
  local reports="${SANITIZE_DIR}/sanitizer-reports"
  rm -rf "$reports"
  mkdir -p "$reports"
  require_symbolizer || return 1
  local rc=0 asan_options ubsan_options
  asan_options="$(sanitizer_options ASAN "${reports}/asan")"
  ubsan_options="$(sanitizer_options UBSAN "${reports}/ubsan")"
  ASAN_OPTIONS="$asan_options" UBSAN_OPTIONS="$ubsan_options" \
    run_ctest "sanitize " "$SANITIZE_DIR" -L sanitize -j"$JOBS" || rc=$?
  local report
  for report in "$reports"/*; do
    [[ -e "$report" ]] || continue
    log "sanitize: error: sanitizer report ${report}:"
    cat "$report" >&2
    rc=1
  done
  return "$rc"
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

  if [[ "${CI:-}" == "true" && "$SANITIZE" == "0" ]]; then
    die "CI=true with HOSTPORT_SANITIZE=0: CI runs the sanitizer stage"
  fi

  log "setup"
  "${REPO_ROOT}/scripts/setup.sh"

  log "configure (${BUILD_DIR})"
  cmake -G Ninja -S "$REPO_ROOT" -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DHOSTPORT_BUILD_BENCH=ON

  log "build (-j${JOBS})"
  cmake --build "$BUILD_DIR" -j"$JOBS"

  local rc=0 sanitize_rc=0
  run_ctest "" "$BUILD_DIR" "$@" || rc=$?
  if [[ "$SANITIZE" != "0" ]]; then
    sanitizer_stage || sanitize_rc=$?
    ((rc != 0)) || rc="$sanitize_rc"
  fi
  log "summary: ${SUMMARIES[0]}"
  [[ "$SANITIZE" == "0" ]] || log "sanitize summary: ${SUMMARIES[1]:-not reached}"
  log "ctest exit code ${rc}"
  return "$rc"
}

main "$@"
