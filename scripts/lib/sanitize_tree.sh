# shellcheck shell=bash
# The sanitizer build tree that scripts/test.sh and scripts/fuzz.sh share (build-sanitize/):
# clang 16, ASan and UBSan everywhere, coverage for libFuzzer, the fuzz targets.
#
# -O0 -gline-tables-only: on 2 cores a TU compiles about 4x faster than at -O1 (docs/fuzzing.md),
# which is what keeps CI's sanitizer stage within its budget; the stack traces keep file:line.
# Debug keeps assert() on: a sanitizer run should also trip our own assertions.

# The symbolizer of the clang that builds the tree (package llvm-16, scripts/setup.sh --fuzz),
# named to every sanitized process: left to search PATH, a runtime takes whatever
# llvm-symbolizer comes first (llvm-14's from the image's `llvm` package), not the one of the clang
# that built it. On a fresh machine the stage failed on files that held only "WARNING: invalid
# path to external symbolizer!" (issue 22); which processes wrote them was not found on the
# development machine, where they did not recur, and the report names now carry the program.
readonly SANITIZER_SYMBOLIZER=/usr/lib/llvm-16/bin/llvm-symbolizer

# sanitizer_options ASAN|UBSAN [LOG_PREFIX]: the options every sanitized run of ours uses. Every
# report ends its process with an error (abort_on_error, halt_on_error), with its stack
# symbolized; with LOG_PREFIX each process writes its reports to LOG_PREFIX.<exe>.<pid>, so a
# report names the program that wrote it.
sanitizer_options() {
  local kind="$1" log_prefix="${2:-}" options
  case "$kind" in
    ASAN) options="detect_leaks=1:abort_on_error=1" ;;
    UBSAN) options="halt_on_error=1:print_stacktrace=1" ;;
    *) printf 'sanitizer_options: unknown kind %s\n' "$kind" >&2; return 1 ;;
  esac
  options+=":external_symbolizer_path=${SANITIZER_SYMBOLIZER}:symbolize=1"
  [[ -z "$log_prefix" ]] || options+=":log_path=${log_prefix}:log_exe_name=1"
  printf '%s\n' "$options"
}

# require_symbolizer: fails, saying what to install, when SANITIZER_SYMBOLIZER cannot run.
require_symbolizer() {
  if [[ ! -x "$SANITIZER_SYMBOLIZER" ]]; then
    printf 'error: %s is missing: run sudo scripts/setup.sh --fuzz (package llvm-16)\n' \
      "$SANITIZER_SYMBOLIZER" >&2
    return 1
  fi
}

# configure_sanitize_tree REPO_ROOT BUILD_DIR: (re)configures the tree; quiet unless it fails.
configure_sanitize_tree() {
  local repo_root="$1" build_dir="$2" log
  log="$(mktemp "${TMPDIR:-/tmp}/hostport-cmake.XXXXXX")"
  if ! cmake -G Ninja -S "$repo_root" -B "$build_dir" -DCMAKE_BUILD_TYPE=Debug \
    "-DCMAKE_CXX_FLAGS_DEBUG=-O0 -gline-tables-only" -DCMAKE_CXX_COMPILER=clang++-16 \
    -DHOSTPORT_SANITIZE=ON -DHOSTPORT_FUZZ=ON >"$log" 2>&1; then
    cat "$log" >&2
    rm -f "$log"
    return 1
  fi
  rm -f "$log"
}
