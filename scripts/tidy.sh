#!/usr/bin/env bash
# clang-tidy over the production sources, with .clang-tidy's checks, every finding an error. The
# sanitizer stage runs it (ctest ClangTidy, labels sanitize and tidy) in the tree clang 16 built,
# whose compile commands clang-tidy understands (g++'s -std=c++23 it does not).
#
# Design note: a full run costs ~5 s of CPU per source, ~6 minutes on CI's two cores, which would
# double the stage. A source whose inputs are unchanged since a clean run is not checked again:
# the key is its compile command, the bytes of every file the compiler read for it (ninja's
# recorded deps, system headers too), .clang-tidy and clang-tidy's version, so a key that matches
# is the same check of the same text. Only clean results are kept; a finding is found again on
# every run until fixed. The cache lives outside the clone, as ccache's does, so CI's fresh clones
# share it.
set -euo pipefail

readonly PROG="tidy.sh"
REPO_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
readonly REPO_ROOT
readonly TIDY="${HOSTPORT_CLANG_TIDY:-clang-tidy-16}"
readonly JOBS="${HOSTPORT_JOBS:-$(nproc)}"
readonly PRODUCTION=(common lease netlink hostnet nft forwards annotations kube tls settings agent
  admission cni-plugin)

usage() {
  cat <<EOF
Usage: scripts/tidy.sh BUILD_DIR

Runs ${TIDY} with the repository's .clang-tidy over every production source (${PRODUCTION[*]}),
with the flags BUILD_DIR/compile_commands.json gives it; BUILD_DIR must be built (ninja's deps
key the cache). Prints each finding and exits 1 when there is one, 0 when every source is clean.

Environment:
  HOSTPORT_TIDY_CACHE=DIR    clean results (default: /var/cache/hostport-tidy as root, else
                             \${XDG_CACHE_HOME:-~/.cache}/hostport-tidy)
  HOSTPORT_CLANG_TIDY=PROG   the clang-tidy to run (default: clang-tidy-16, scripts/setup.sh --fuzz)
  HOSTPORT_JOBS=N            sources checked at once (default: nproc, here ${JOBS})
EOF
}

die() { printf '%s: error: %s\n' "$PROG" "$*" >&2; exit 2; }

case "${1:-}" in
  -h | --help) usage; exit 0 ;;
  "") usage >&2; exit 2 ;;
esac
BUILD_DIR="$(cd "$1" && pwd)" || die "no build directory $1"
readonly BUILD_DIR
[[ -f "${BUILD_DIR}/compile_commands.json" ]] || die "${BUILD_DIR} has no compile_commands.json"
command -v "$TIDY" >/dev/null || die "${TIDY} is missing: run sudo scripts/setup.sh --fuzz"
if [[ -n "${HOSTPORT_TIDY_CACHE:-}" ]]; then
  CACHE="$HOSTPORT_TIDY_CACHE"
elif ((EUID == 0)); then
  CACHE=/var/cache/hostport-tidy
else
  CACHE="${XDG_CACHE_HOME:-$HOME/.cache}/hostport-tidy"
fi
readonly CACHE
mkdir -p "$CACHE"
WORK="$(mktemp -d)"
readonly WORK
trap '[[ -n "${HOSTPORT_TIDY_KEEP:-}" ]] || rm -rf "$WORK"' EXIT

# What every key shares: the checks and the tool.
{ cat "${REPO_ROOT}/.clang-tidy"; "$TIDY" --version; } | sha256sum | cut -d' ' -f1 >"${WORK}/base"

# source <TAB> object <TAB> command, for the production sources of the tree.
jq -r --arg root "$REPO_ROOT/" '.[] | select(.file | startswith($root)) |
    [.file, (.command | capture("-o (?<o>[^ ]+)").o), .command] | @tsv' \
  "${BUILD_DIR}/compile_commands.json" |
  while IFS=$'\t' read -r file object command; do
    relative="${file#"$REPO_ROOT"/}"
    for folder in "${PRODUCTION[@]}"; do
      if [[ "$relative" == "$folder"/* ]]; then
        printf '%s\t%s\t%s\n' "$file" "$object" "$command"
        break
      fi
    done
  done >"${WORK}/sources"
[[ -s "${WORK}/sources" ]] || die "no production source in ${BUILD_DIR}/compile_commands.json"

# Every file each object was compiled from, as ninja recorded it, then the hash of each once.
cut -f2 "${WORK}/sources" | xargs ninja -C "$BUILD_DIR" -t deps >"${WORK}/deps"
awk '/^[^ ]/ { next } NF { print $1 }' "${WORK}/deps" | sort -u |
  (cd "$BUILD_DIR" || exit; xargs -r sha256sum 2>/dev/null || true) >"${WORK}/hashes"

# object <TAB> key, from its deps' hashes, its command and the base.
awk -F'\t' -v base="$(cat "${WORK}/base")" '
  FILENAME == ARGV[1] { hash[substr($0, 67)] = substr($0, 1, 64); next }
  FILENAME == ARGV[2] { command[$2] = $3; next }
  # An object not built, or changed since, has no deps to trust: it gets no key, so no cache.
  /^[^ ]/ {
    object = ""
    if ($0 !~ /\(VALID\)$/) next
    object = $0; sub(/: .*/, "", object); text[object] = base " " command[object]; next
  }
  NF && object != "" { path = $0; sub(/^ +/, "", path); text[object] = text[object] " " hash[path] }
  END { for (o in text) print o "\t" text[o] }
' "${WORK}/hashes" "${WORK}/sources" "${WORK}/deps" |
  while IFS=$'\t' read -r object text; do
    printf '%s\t%s\n' "$object" "$(printf '%s' "$text" | sha256sum | cut -d' ' -f1)"
  done >"${WORK}/keys"

# The sources to check: those without a clean result under their key (none: no key at all).
awk -F'\t' 'FILENAME == ARGV[1] { key[$1] = $2; next }
  { print $1 "\t" ($2 in key ? key[$2] : "none") }' "${WORK}/keys" "${WORK}/sources" |
  while IFS=$'\t' read -r file key; do
    [[ "$key" != none && -f "${CACHE}/${key}" ]] || printf '%s\t%s\n' "$file" "$key"
  done >"${WORK}/todo"
total="$(wc -l <"${WORK}/sources")"
todo="$(wc -l <"${WORK}/todo")"
printf '%s: %d sources, %d clean before, %d to check (-j%d)\n' "$PROG" "$total" \
  "$((total - todo))" "$todo" "$JOBS"

# One source: its findings to WORK/findings.<n>; a clean one is remembered under its key.
check_one() {
  local file="$1" key="$2" out
  out="$(mktemp "${WORK}/findings.XXXXXX")"
  if "$TIDY" -p "$BUILD_DIR" --quiet "$file" >"$out" 2>&1 && ! grep -qE '(warning|error):' "$out"; then
    rm -f "$out"
    [[ "$key" == none ]] || : >"${CACHE}/${key}"
  fi
}
export -f check_one
export TIDY BUILD_DIR WORK CACHE
tr '\t' '\n' <"${WORK}/todo" | xargs -r -d '\n' -n 2 -P "$JOBS" bash -c 'check_one "$@"' _

shopt -s nullglob
findings=("${WORK}"/findings.*)
if ((${#findings[@]} > 0)); then
  cat "${findings[@]}"
  printf '%s: %d source(s) with findings\n' "$PROG" "${#findings[@]}" >&2
  exit 1
fi
printf '%s: every source is clean\n' "$PROG"
