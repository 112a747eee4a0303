#!/usr/bin/env bash
# The soak (issue 15, section 3; docs/soak.md): a simulated node with the built hostport-agent
# and the real bridge + host-local + hostport chain, churned for N minutes while the agent is
# SIGKILLed, the table flushed and deleted, netns removed without DEL and the state dir filled to
# ENOSPC once; the invariants are checked throughout and at the end. Run as root; see --help.
# The churn and the checks are tests/soak/ (hostport-soak); this script builds, runs and cleans up.
set -euo pipefail

readonly PROG="soak.sh"
REPO_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
readonly REPO_ROOT
readonly JOBS="${HOSTPORT_JOBS:-$(nproc)}"

MINUTES=2
BUILD_DIR="${REPO_ROOT}/build"
DO_BUILD=1
OUT=""
SEED=""
WORKERS=""
MAX_PODS=""

# State of the run; cleanup copes with any of it unset. Everything is named after the pid.
TMP=""
DRIVER_PID=""  # while it runs
NETNS_TAG=""   # "hpt-<driver pid>-": the prefix of the driver's namespaces

log() { printf '%s %s: %s\n' "$(date +%T)" "$PROG" "$*" >&2; }
die() { log "error: $*"; exit 2; }

usage() {
  cat <<EOF
Usage: sudo scripts/soak.sh [--minutes N] [options]

Runs hostport-soak (tests/soak/) for N minutes on a simulated node in network namespaces of its
own (nothing touches the root netns, /etc/cni or /opt/cni): worker threads ADD and DEL pods in
parallel (static and dynamic ports; tcp, udp, tcpudp; ranges; two pools), abandon some netns
without DEL and claim live pods' static ports; meanwhile the agent is SIGKILLed and restarted at
random points, the map and the table flushed or the table deleted, and the state dir's tmpfs
filled to ENOSPC once and freed. Invariants (checked every few seconds and at the end): no
acknowledged lease lost, no port in two leases, every live lease carries TCP/UDP traffic, no
element without a lease, deleted and vanished pods gone within their grace, the agent's RSS and
fds bounded. Prints a summary; exits 0 when everything held, 1 when an invariant broke, 2 when
the run could not be set up, 77 when not run as root (ctest counts that as skipped).

Options:
  --minutes N       how long to churn (default 2; fractions allowed); the end phase adds ~20 s
  --build-dir DIR   build tree (default build/ in the repository)
  --no-build        use the binaries already in the build tree
  --out FILE        write the figures as JSON to FILE, and the agent's log (all of its runs)
                    next to it (FILE without .json, plus .agent.log)
  --seed N          replay a run's random choices (not its thread timing)
  --workers N       churn threads (default 6)
  --max-pods N      pods on the node at once (default 48)
  -h, --help        this text

Environment:
  HOSTPORT_JOBS=N   parallel build jobs (default: nproc, here ${JOBS})
EOF
}

parse_args() {
  while (($# > 0)); do
    case "$1" in
      --minutes | --build-dir | --out | --seed | --workers | --max-pods)
        (($# >= 2)) || die "$1 needs a value (see --help)"
        ;;
    esac
    case "$1" in
      -h | --help) usage; exit 0 ;;
      --minutes) MINUTES="$2"; shift ;;
      --build-dir) BUILD_DIR="$2"; shift ;;
      --no-build) DO_BUILD=0 ;;
      --out) OUT="$2"; shift ;;
      --seed) SEED="$2"; shift ;;
      --workers) WORKERS="$2"; shift ;;
      --max-pods) MAX_PODS="$2"; shift ;;
      *) usage >&2; die "unknown argument: $1" ;;
    esac
    shift
  done
  [[ $MINUTES =~ ^[0-9]+([.][0-9]+)?$ ]] || die "--minutes wants a number, not '$MINUTES'"
}

require_tools() {
  local tool plugin
  if ((EUID != 0)); then
    log "skipped: run as root (the soak creates network namespaces and mounts a tmpfs)"
    exit 77  # ctest's SKIP_RETURN_CODE for this test
  fi
  for tool in ip nft; do
    command -v "$tool" >/dev/null || die "$tool is missing (run scripts/setup.sh)"
  done
  for plugin in bridge host-local; do
    [[ -x /usr/lib/cni/$plugin ]] ||
      die "/usr/lib/cni/$plugin is missing (containernetworking-plugins; scripts/setup.sh)"
  done
}

cleanup() {
  local ns
  if [[ -n "$DRIVER_PID" ]]; then
    kill "$DRIVER_PID" 2>/dev/null || true
    wait "$DRIVER_PID" 2>/dev/null || true
  fi
  # The driver removes its namespaces; after a crash its "hpt-<pid>-N" ones are left.
  if [[ -n "$NETNS_TAG" ]]; then
    for ns in $(ip netns list | awk -v t="$NETNS_TAG" 'index($1, t) == 1 {print $1}'); do
      ip netns del "$ns" 2>/dev/null || true
    done
  fi
  if [[ -n "$TMP" ]]; then
    rm -rf "$TMP"
  fi
}

build() {
  if ((!DO_BUILD)); then
    return 0
  fi
  "${REPO_ROOT}/scripts/setup.sh" >&2 || die "scripts/setup.sh failed"
  log "building into $BUILD_DIR (-j$JOBS)"
  cmake -G Ninja -S "$REPO_ROOT" -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DHOSTPORT_BUILD_BENCH=ON >"$TMP/cmake.log" 2>&1 ||
    { cat "$TMP/cmake.log" >&2; die "cmake failed"; }
  ninja -C "$BUILD_DIR" -j"$JOBS" hostport-soak hostport hostport-agent >"$TMP/build.log" 2>&1 ||
    { tail -50 "$TMP/build.log" >&2; die "build failed"; }
}

bin_path() {  # name dir: the path of a built executable
  local path="$BUILD_DIR/$2/$1"
  [[ -x $path ]] || die "$1 is not built in $BUILD_DIR (run without --no-build)"
  echo "$path"
}

main() {
  parse_args "$@"
  require_tools
  trap cleanup EXIT
  trap 'exit 130' INT TERM
  TMP="$(mktemp -d "${TMPDIR:-/tmp}/hostport-soak-$$.XXXXXX")"
  build
  local soak agent plugin
  soak="$(bin_path hostport-soak tests/soak)"
  agent="$(bin_path hostport-agent agent)"
  plugin="$(bin_path hostport cni-plugin)"

  local args=(--agent "$agent" --plugin "$plugin" --minutes "$MINUTES")
  [[ -z "$OUT" ]] || args+=(--out "$OUT" --agent-log "${OUT%.json}.agent.log")
  [[ -z "$SEED" ]] || args+=(--seed "$SEED")
  [[ -z "$WORKERS" ]] || args+=(--workers "$WORKERS")
  [[ -z "$MAX_PODS" ]] || args+=(--max-pods "$MAX_PODS")
  log "soak for $MINUTES min: $soak ${args[*]}"
  # In the background, so that a signal reaches the trap at once; its temp files go under $TMP.
  local rc=0
  TMPDIR="$TMP" "$soak" "${args[@]}" &
  DRIVER_PID=$!
  NETNS_TAG="hpt-${DRIVER_PID}-"
  wait "$DRIVER_PID" || rc=$?
  DRIVER_PID=""
  case "$rc" in
    0) log "passed" ;;
    1) log "FAILED: an invariant broke (see the VIOLATION lines above)" ;;
    *) log "error: the soak could not run (exit $rc)" ;;
  esac
  return "$rc"
}

main "$@"
