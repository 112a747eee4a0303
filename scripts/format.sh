#!/usr/bin/env bash
# Formats the C++ sources with clang-format and the repository's .clang-format, or checks them.
# The check is a ctest (SourcesAreClangFormatted, label unit), so CI fails on a file out of format.
set -euo pipefail

readonly PROG="format.sh"
REPO_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
readonly REPO_ROOT
readonly CLANG_FORMAT="${CLANG_FORMAT:-clang-format}"
# Another major version formats some constructs differently: the tree is kept as this one writes.
readonly CLANG_FORMAT_MAJOR=14
# How much of the diff --check prints for the files out of format.
readonly MAX_DIFF_LINES=200

log() { printf '%s: %s\n' "$PROG" "$*"; }
die() { printf '%s: error: %s\n' "$PROG" "$*" >&2; exit 1; }

usage() {
  cat <<EOF
Usage: scripts/format.sh [--check]

Runs clang-format (Debian's clang-format 14, package clang-format) with the repository's
.clang-format over every *.cc and *.h file: the files git tracks when the source tree is a git
checkout, else every such file outside the top-level build*/ trees.

  (no option)  rewrite the files in place (clang-format -i)
  --check      change nothing; exit 1 and name every file out of format, with its diff
               (clang-format --dry-run --Werror). ctest runs this as SourcesAreClangFormatted.

Environment:
  CLANG_FORMAT=PATH   the clang-format to run (default: clang-format)
EOF
}

# Prints the C++ sources, one per line, relative to the repository root.
list_sources() {
  local top
  if top="$(git -C "$REPO_ROOT" rev-parse --show-toplevel 2>/dev/null)" &&
    [[ "$top" -ef "$REPO_ROOT" ]]; then
    # A file deleted in the work tree but still in the index is not there to check.
    git -C "$REPO_ROOT" ls-files -- '*.cc' '*.h' | while IFS= read -r file; do
      if [[ -f "$REPO_ROOT/$file" ]]; then
        printf '%s\n' "$file"
      fi
    done
  else
    (cd "$REPO_ROOT" &&
      find . \( -path ./.git -o -path './build*' \) -prune -o \
        -type f \( -name '*.cc' -o -name '*.h' \) -print | sed 's|^\./||' | LC_ALL=C sort)
  fi
}

check() {
  local -a files=("$@")
  local out rc=0
  out="$(cd "$REPO_ROOT" && "$CLANG_FORMAT" --dry-run --Werror "${files[@]}" 2>&1)" || rc=$?
  if ((rc == 0)); then
    log "all ${#files[@]} files are formatted ($("$CLANG_FORMAT" --version))"
    return 0
  fi
  local -a bad
  mapfile -t bad < <(sed -nE 's/^(.+):[0-9]+:[0-9]+: error: .*-Wclang-format-violations.*/\1/p' \
    <<<"$out" | LC_ALL=C sort -u)
  if ((${#bad[@]} == 0)); then
    # Not a formatting verdict (a bad .clang-format, an unreadable file): show it as it is.
    printf '%s\n' "$out" >&2
    die "$CLANG_FORMAT failed (exit $rc)"
  fi
  log "${#bad[@]} of ${#files[@]} files are not clang-formatted ($("$CLANG_FORMAT" --version)):"
  printf '  %s\n' "${bad[@]}"
  log "fix them with scripts/format.sh (clang-format -i). The changes it would make:"
  local file
  for file in "${bad[@]}"; do
    (cd "$REPO_ROOT" && "$CLANG_FORMAT" "$file" | diff -u --label "$file" --label "$file (formatted)" "$file" -) || true
  done | head -n "$MAX_DIFF_LINES" || true
  return 1
}

main() {
  local mode=fix
  case "${1:-}" in
    -h | --help) usage; return 0 ;;
    --check) mode=check ;;
    "") ;;
    *) usage >&2; die "unknown argument: $1" ;;
  esac
  (($# <= 1)) || { usage >&2; die "too many arguments"; }

  command -v "$CLANG_FORMAT" >/dev/null ||
    die "$CLANG_FORMAT not found: install it with 'sudo scripts/setup.sh' (Debian package clang-format)"
  local version
  version="$("$CLANG_FORMAT" --version)"
  [[ "$version" =~ version\ ${CLANG_FORMAT_MAJOR}\. ]] ||
    die "$CLANG_FORMAT is not version ${CLANG_FORMAT_MAJOR} ($version): set CLANG_FORMAT to clang-format-${CLANG_FORMAT_MAJOR}"

  local -a files
  mapfile -t files < <(list_sources)
  ((${#files[@]} > 0)) || die "no *.cc or *.h files found under $REPO_ROOT"

  if [[ "$mode" == check ]]; then
    check "${files[@]}"
  else
    (cd "$REPO_ROOT" && "$CLANG_FORMAT" -i "${files[@]}")
    log "formatted ${#files[@]} files"
  fi
}

main "$@"
