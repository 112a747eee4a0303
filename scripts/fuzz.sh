#!/usr/bin/env bash
# Builds and runs the libFuzzer targets of tests/fuzz (docs/fuzzing.md), each for a while from
# its committed seeds. CI runs each for 10 s through ctest (label fuzz); a full run is 600 s each.
set -euo pipefail

readonly PROG="fuzz.sh"
REPO_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
readonly REPO_ROOT
readonly CORPUS_DIR="${REPO_ROOT}/tests/fuzz/corpus"
# shellcheck source=scripts/lib/sanitize_tree.sh
source "${REPO_ROOT}/scripts/lib/sanitize_tree.sh"

log() { printf '%s: %s\n' "$PROG" "$*"; }
die() { printf '%s: error: %s\n' "$PROG" "$*" >&2; exit 1; }

usage() {
  cat <<EOF
Usage: scripts/fuzz.sh [--seconds N] [--only NAME[,NAME...]] [--build-dir DIR] [--no-build]

Configures and builds the fuzz targets (unless --no-build) in DIR with clang 16, ASan and UBSan
(scripts/lib/sanitize_tree.sh: the tree of scripts/test.sh's sanitizer stage), then runs every
target (or those named) for N seconds each, one after the other, and prints each run's
executions and coverage.
Each run reads the seeds in tests/fuzz/corpus/NAME/ without changing them; what it finds new
goes to DIR/fuzz-corpus/NAME/, and a crash, leak or broken invariant to DIR/fuzz-artifacts/NAME/,
which is printed. Exits 1 when any target failed. Install clang first: sudo scripts/setup.sh --fuzz

  --seconds N    seconds per target (default 600, the full run; CI runs 10)
  --only LIST    comma-separated target names (default: every target)
  --build-dir D  the build tree (default: build-sanitize/ in the repository)
  --no-build     run what DIR holds (ctest's smoke runs use this)

Targets: $(targets | tr '\n' ' ')
EOF
}

# Every fuzz target's name: the seed directories, one per target.
targets() { find "$CORPUS_DIR" -mindepth 1 -maxdepth 1 -type d -printf '%f\n' | sort; }

configure_and_build() {
  local build_dir="$1"
  shift
  configure_sanitize_tree "$REPO_ROOT" "$build_dir"
  cmake --build "$build_dir" -j"${HOSTPORT_JOBS:-$(nproc)}" --target "${@/%/_fuzzer}"
}

# Runs one target; prints its figures; fails when libFuzzer did.
run_target() {
  local build_dir="$1" name="$2" seconds="$3"
  local binary="${build_dir}/tests/fuzz/${name}_fuzzer"
  local found="${build_dir}/fuzz-corpus/${name}" artifacts="${build_dir}/fuzz-artifacts/${name}"
  local out="${build_dir}/fuzz-logs/${name}.log"
  [[ -x "$binary" ]] || die "${binary} is not built"
  mkdir -p "$found" "$artifacts" "$(dirname "$out")"
  local rc=0
  # halt_on_error and abort_on_error: every sanitizer report ends the run as a crash that
  # libFuzzer saves. detect_leaks: LSan at the end of each input that leaked.
  # Under scripts/test.sh's stage the options come with its log_path; alone, they are the same
  # without it.
  local asan_options="${ASAN_OPTIONS:-}" ubsan_options="${UBSAN_OPTIONS:-}"
  [[ -n "$asan_options" ]] || asan_options="$(sanitizer_options ASAN)"
  [[ -n "$ubsan_options" ]] || ubsan_options="$(sanitizer_options UBSAN)"
  ASAN_OPTIONS="$asan_options" UBSAN_OPTIONS="$ubsan_options" \
    "$binary" -max_total_time="$seconds" -print_final_stats=1 -artifact_prefix="${artifacts}/" \
    "$found" "${CORPUS_DIR}/${name}" >"$out" 2>&1 || rc=$?
  local execs cov
  # -a: a log quotes the inputs it reports, which may be binary.
  execs="$(grep -aoE 'stat::number_of_executed_units: *[0-9]+' "$out" | tail -n 1 |
    grep -oE '[0-9]+$' || true)"
  cov="$(grep -aoE 'cov: [0-9]+ ft: [0-9]+' "$out" | tail -n 1 || true)"
  if ((rc != 0)); then
    tail -n 40 "$out" >&2
    log "${name}: FAILED (exit ${rc}) after ${execs:-?} runs; input and log: ${artifacts}/, ${out}"
    return 1
  fi
  log "${name}: ${seconds} s, ${execs:-?} runs, ${cov:-no coverage line}; log ${out}"
}

main() {
  local seconds=600 only="" build_dir="${REPO_ROOT}/build-sanitize" build=1
  while (($# > 0)); do
    case "$1" in
      -h | --help) usage; return 0 ;;
      --seconds) seconds="${2:?--seconds needs a number}"; shift ;;
      --only) only="${2:?--only needs target names}"; shift ;;
      --build-dir) build_dir="${2:?--build-dir needs a directory}"; shift ;;
      --no-build) build=0 ;;
      *) usage >&2; die "unknown argument: $1" ;;
    esac
    shift
  done
  [[ "$seconds" =~ ^[0-9]+$ ]] || die "--seconds: '${seconds}' is not a number of seconds"

  local -a names all
  mapfile -t all < <(targets)
  if [[ -n "$only" ]]; then
    IFS=',' read -r -a names <<<"$only"
    local name
    for name in "${names[@]}"; do
      [[ -d "${CORPUS_DIR}/${name}" ]] || die "--only: no target '${name}' (targets: ${all[*]})"
    done
  else
    names=("${all[@]}")
  fi

  require_symbolizer || exit 1
  if ((build)); then
    command -v clang++-16 >/dev/null || die "clang++-16 not found: run 'sudo scripts/setup.sh --fuzz'"
    log "build ${names[*]} in ${build_dir}"
    configure_and_build "$build_dir" "${names[@]}"
  fi

  local failed=()
  for name in "${names[@]}"; do
    run_target "$build_dir" "$name" "$seconds" || failed+=("$name")
  done
  if ((${#failed[@]} > 0)); then
    die "${#failed[@]} of ${#names[@]} targets failed: ${failed[*]}; artifacts in ${build_dir}/fuzz-artifacts/"
  fi
  log "all ${#names[@]} targets ran ${seconds} s each without a finding"
}

main "$@"
