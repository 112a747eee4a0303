# shellcheck shell=bash
# The sanitizer build tree that scripts/test.sh and scripts/fuzz.sh share (build-sanitize/):
# clang 16, ASan and UBSan everywhere, coverage for libFuzzer, the fuzz targets.
#
# -O0 -gline-tables-only: on 2 cores a TU compiles about 4x faster than at -O1 (docs/fuzzing.md),
# which is what keeps CI's sanitizer stage within its budget; the stack traces keep file:line.
# Debug keeps assert() on: a sanitizer run should also trip our own assertions.

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
