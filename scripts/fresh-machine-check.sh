#!/usr/bin/env bash
# Proves that the README's two commands work on a fresh Debian 12 machine, which the dev
# machine, with its hand-installed packages, cannot: a clean bookworm rootfs (mmdebstrap, cached),
# a fresh clone of HEAD in it at /root/hostport, and there, as root in a login shell, what a
# newcomer types: scripts/demo.sh, then CI=true scripts/test.sh. Prints each command's exit code
# and duration and the phases its log shows; the logs stay under the cache dir.
#
# The base: mmdebstrap --variant=important, i.e. priority required + important, what the Debian
# installer lays down on every Debian 12 system before any task (systemd, apt, iproute2, nftables,
# procps, kmod, less, ...), plus ca-certificates (cloud images and https mirrors have it) and git
# (the newcomer cloned the repository on that machine). No "standard" task (wget, python3,
# bash-completion): scripts/setup.sh has to install everything else, and the check is stricter.
# Not minbase: no real server lacks iproute2 or nftables. The apt sources are the file
# scripts/build-image.sh uses (the machine's own, Debian's mirror and keyring), so the check
# needs no other registry than the one the machine reaches; the rootfs keeps them as its own.
#
# The container: podman run --privileged --rootfs DIR, with podman on a private root
# (scripts/lib/podman.sh; runc, cgroupfs). Checked here: in it, `unshare -n`, `nft add table`,
# `ip link add type bridge`, `ip netns add` and a nested `podman run --rm` (runc, vfs) of a locally
# imported busybox image all work, and so does tests/e2e/podman_test.sh (nested podman through the
# CNI bridge + hostport, DNAT, hairpin) after setup.sh. --privileged mounts /proc and /proc/sys
# writable (sysctls in the tests' own netns) and the v1 controllers of this hybrid cgroup layout as
# the container's own writable subtree, where the nested runc makes its cgroups (the v2 "unified"
# hierarchy, which only systemd uses here, is not mounted in it, and runc does not need it; a
# cgroup-v2-only host is untried). systemd-nspawn (package systemd-container, not installed here)
# does not do: on this host (cgroup v1 hybrid, PID 1 not systemd) it mounts every v1 controller
# read-only, even with SYSTEMD_NSPAWN_API_VFS_WRITABLE=1, so the nested runc fails ("mkdir
# /sys/fs/cgroup/cpuset/libpod_parent/...: read-only file system"), and it needs --register=no
# --keep-unit without a systemd PID 1. The network is the machine's (--network=host): apt and npm
# reach their registries without NAT rules on the machine; the demo and the tests work in network
# namespaces of their own. So is the pid namespace (--pid=host), as on a real machine: the agent
# tells its own nf_tables commits by the committing thread's id in the initial pid namespace
# (nft/kernel/table_events.h; the DaemonSet sets hostPID), and in a pid namespace of the
# container's own TableEventsTest.ChangesMadeByThisProcessAreNotReported fails, as it should.
# /dev/shm is a tmpfs the size of the machine's; no pids limit.
# The commands run under a small first process (PID1, a bash that forwards SIGINT and SIGTERM to their process
# group and returns their exit code) with a clean login environment (env -i, bash --login).
# The machine's network goes along: the CAs it adds to its store (a TLS-intercepting egress
# proxy's, here) are added to the copy's, and its proxy and NODE_EXTRA_CA_CERTS variables are
# passed in; without them npm ci fails with SELF_SIGNED_CERT_IN_CHAIN on this network.
# Nothing under /etc or in the machine's podman storage changes.
set -euo pipefail

readonly PROG="fresh-machine-check.sh"
REPO_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
readonly REPO_ROOT
readonly SUITE="bookworm"
readonly VARIANT="important"
readonly INCLUDE="ca-certificates,git"
readonly GUEST_REPO="/root/hostport"
readonly GUEST_HOSTNAME="fresh-bookworm"
# The commands, as README.md gives them (as root: no sudo).
readonly -A COMMANDS=([demo]="scripts/demo.sh" [test]="CI=true scripts/test.sh")
readonly ORDER=(demo test)
# Free space below which a full run may not fit (two build trees, clang and llvm).
readonly MIN_FREE_GIB=15
# The machine's network settings the commands get too, when set here: proxies, and the extra CAs
# node is told of (it does not read the system's store), such as a TLS-intercepting egress
# proxy's. With HOSTPORT_JOBS, the whole environment the commands get from outside.
readonly PASS_ENV=(HOSTPORT_JOBS NODE_EXTRA_CA_CERTS http_proxy https_proxy no_proxy HTTP_PROXY
  HTTPS_PROXY NO_PROXY)
readonly LOCAL_CAS="/usr/local/share/ca-certificates"
# shellcheck source=scripts/lib/podman.sh
source "${REPO_ROOT}/scripts/lib/podman.sh"
# shellcheck source=scripts/lib/apt_sources.sh
source "${REPO_ROOT}/scripts/lib/apt_sources.sh"

# The container's first process: runs "$@" in a process group of its own (set -m, so SIGINT is not
# ignored in it and the demo's traps work), forwards SIGINT and SIGTERM to that group (podman's
# sig-proxy and `podman rm` signal that process only, not its children), and
# exits with its code. stderr goes to stdout, so the log keeps the order of the lines.
# shellcheck disable=SC2016 # expanded in the container
readonly PID1='exec 2>&1
set -m
"$@" &
child=$!
set +m
trap '\''kill -INT -- "-$child" 2>/dev/null'\'' INT
trap '\''kill -TERM -- "-$child" 2>/dev/null'\'' TERM
while :; do
  wait "$child"
  rc=$?
  kill -0 "$child" 2>/dev/null || exit "$rc"
done'

CACHE="/var/tmp/hostport-fresh-machine"
KEEP=0
REBUILD_BASE=0
ONLY=""
# Filled in as the run goes; cleanup copes with any of them unset.
RUN_DIR=""
ROOTFS=""
PODMAN_DIR=""  # podman's private root: short, podman refuses a runroot longer than 50 characters
CONTAINER=""
PIPELINE=""  # the background `podman run | stamp` of the command that runs
PARTIAL_BASE=""

log() { printf '%s: %s\n' "$PROG" "$*"; }
die() { printf '%s: error: %s\n' "$PROG" "$*" >&2; exit 1; }

usage() {
  cat <<EOF
Usage: sudo scripts/fresh-machine-check.sh [--only demo|test] [--keep] [--cache DIR]
                                           [--rebuild-base]

Runs README.md's commands on a fresh Debian 12 machine, to show they need nothing that this
machine has by hand:
  1. base rootfs: mmdebstrap --variant=${VARIANT} --include=${INCLUDE} ${SUITE}
     with this machine's apt sources; built once into DIR/base-${SUITE}-KEY.tar (KEY: a hash
     of those settings and the sources), reused until --rebuild-base or a change of them;
  2. a fresh copy: DIR/runs/TIME-PID/rootfs, extracted from that tar, and in it at
     ${GUEST_REPO} a git clone of this repository's HEAD (committed files only: not the work
     tree, its build trees or node_modules);
  3. in a privileged podman container on that rootfs (the machine's network, writable
     cgroups, netns, nftables, nested podman), as root in a login shell, one after the other:
       cd ${GUEST_REPO} && ${COMMANDS[demo]}
       cd ${GUEST_REPO} && ${COMMANDS[test]}
     (both run even when the first fails, as a newcomer would try both);
  4. prints each command's exit code and duration, and the phases its log shows, timed from
     the outside (demo: its sections and cmake steps; test: setup, configure, build, ctest and
     the sanitizer stage's steps; both: setup.sh's apt-get and npm steps). Each log line is
     prefixed by the clock and the seconds since the command started; the logs are
     DIR/runs/TIME-PID/{demo,test}.log, the summary summary.txt next to them.
Exits 0 when every command it ran exited 0, else 1. The container and the rootfs copy are
removed at exit, on an error and on Ctrl-C (the logs stay).

  --only demo|test   run one command only (on a fresh rootfs: 'test' then installs and builds
                     from nothing, as 'CI=true scripts/test.sh' does on a new CI machine)
  --keep             keep the rootfs copy for inspection (sudo chroot DIR/runs/.../rootfs)
  --cache DIR        base tar, runs and logs (default: ${CACHE})
  --rebuild-base     bootstrap the base rootfs again (about 2 minutes), e.g. after a point
                     release; older base tars in DIR are removed
  -h, --help         this help

Environment, passed into the container when set (and nothing else of this environment):
  HOSTPORT_JOBS=N    the commands' parallel build jobs (default there: nproc)
  NODE_EXTRA_CA_CERTS, http(s)_proxy, no_proxy (and upper case): the network's settings
The CAs this machine adds (${LOCAL_CAS}/*.crt) are added to the copy's store too
(update-ca-certificates): on a network that intercepts TLS, npm needs them.

Durations on a 2-core machine: the base 2 minutes once; the demo, which installs the packages and
builds the plugin and the agent, about 10+ minutes; the test about an hour (everything built,
every tier, the sanitizer stage). A full run needs about ${MIN_FREE_GIB} GiB free in DIR.
Needs root, mmdebstrap, podman, runc and git (scripts/setup.sh installs them).
EOF
}

# Formats seconds (an integer, or with a fraction) as 1h02m03s, 12m34s or 5.2s.
duration() {
  awk -v d="$1" 'BEGIN {
    if (d >= 3600) printf "%dh%02dm%02ds", d / 3600, (d % 3600) / 60, d % 60
    else if (d >= 60) printf "%dm%02ds", d / 60, d % 60
    else printf "%.1fs", d
  }'
}

# Microseconds since the epoch.
now_us() { printf '%s\n' "${EPOCHREALTIME//[^0-9]/}"; }

# stamp START_US LOG: copies stdin to stdout and to LOG, each line prefixed by the clock and
# the seconds since START_US: "HH:MM:SS +SECONDS.mmm line". Ignores SIGINT, so the output of
# a command cleaning up after Ctrl-C still reaches the log.
stamp() {
  local start_us="$1" log="$2" line now elapsed prefix
  trap '' INT
  while IFS= read -r line || [[ -n "$line" ]]; do
    now="${EPOCHREALTIME//[^0-9]/}"
    elapsed=$((now - start_us))
    printf -v prefix '%(%H:%M:%S)T +%d.%03d' "${now:0:-6}" $((elapsed / 1000000)) \
      $((elapsed / 1000 % 1000))
    printf '%s %s\n' "$prefix" "$line"
    printf '%s %s\n' "$prefix" "$line" >&3
  done 3>>"$log"
}

# phases NAME LOG END_SECONDS: prints the phases a stamped log shows, each with its duration
# (to the next phase or to END_SECONDS, the command's end). Top-level phases are test.sh's
# "test.sh: STEP" lines (its summary, skipped and error lines only end one) or the demo's
# "== [N/M] SECTION ==" and "$ cmake" lines; setup.sh's apt-get and npm steps are nested in them.
phases() {
  awk -v name="$1" -v end="$3" '
    function dur(d) {
      if (d >= 60) return sprintf("%dm%02ds", d / 60, d % 60)
      return sprintf("%.1fs", d)
    }
    function close_level(lvl, t,   i) {
      for (i = n; i >= 1; i--)
        if (level[i] >= lvl && stop[i] == "") stop[i] = t
    }
    function open(lvl, t, what) {
      close_level(lvl, t)
      n++; level[n] = lvl; start[n] = t; stop[n] = ""
      label[n] = length(what) > 72 ? substr(what, 1, 69) "..." : what
    }
    {
      t = substr($2, 2) + 0
      text = $0; sub(/^[^ ]* [^ ]* /, "", text)
    }
    name == "test" && text ~ /^test\.sh: / {
      step = substr(text, 10)
      if (step ~ /^sanitize: setup/ && sanitize_start == "") sanitize_start = t
      if (step ~ /^sanitize summary:/ && sanitize_stop == "") sanitize_stop = t
      if (step ~ /^((sanitize )?(summary|skipped):|ctest exit code|(sanitize: )?error)/)
        close_level(1, t)
      else open(1, t, step)
      next
    }
    name == "demo" && text ~ /^== .* ==$/ {
      open(1, t, substr(text, 4, length(text) - 6)); next
    }
    name == "demo" && text ~ /^  \$ cmake / { open(1, t, substr(text, 3)); next }
    text ~ /^setup\.sh: (apt-get|manifest checker: npm)/ { open(2, t, substr(text, 11)); next }
    text ~ /^setup\.sh: all [0-9]+ packages are installed/ { close_level(2, t) }
    END {
      close_level(1, end)
      for (i = 1; i <= n; i++)
        printf "    %9s  %s%s\n", dur(stop[i] - start[i]), (level[i] > 1 ? "  " : ""), label[i]
      if (sanitize_start != "") {
        s = sanitize_stop != "" ? sanitize_stop : end
        printf "    %9s  %s\n", dur(s - sanitize_start), "(sanitizer stage in all)"
      }
    }' "$2"
}

cleanup() {
  local rc=$?
  trap - EXIT
  # No second Ctrl-C until the container is gone: it would leave it running.
  trap '' INT TERM
  set +e
  if [[ -n "$PARTIAL_BASE" ]]; then
    rm -f "$PARTIAL_BASE"
  fi
  if [[ -n "$CONTAINER" ]] && podman_ container exists "$CONTAINER" 2>/dev/null; then
    log "removing container ${CONTAINER}"
    podman_ rm --force --time 10 "$CONTAINER" >/dev/null
  fi
  if [[ -n "$PIPELINE" ]]; then
    wait "$PIPELINE"  # podman run ends with its container; the log gets its last lines
  fi
  if [[ -n "$PODMAN_DIR" ]]; then
    podman_unmount_under "$PODMAN_DIR"
    rm -rf --one-file-system "$PODMAN_DIR"
  fi
  trap - INT TERM
  if [[ -n "$RUN_DIR" ]]; then
    podman_unmount_under "$RUN_DIR"
    if [[ -n "$ROOTFS" && -d "$ROOTFS" ]]; then
      if ((KEEP)); then
        log "kept the rootfs: ${ROOTFS} (look inside: sudo chroot ${ROOTFS} /bin/bash)"
      else
        log "removing the rootfs copy ${ROOTFS} (gigabytes of small files: a minute or more)"
        rm -rf --one-file-system "$ROOTFS"
      fi
    fi
  fi
  exit "$rc"
}

# Prints the base tar's path: named by a hash of what goes into it, so a change of the
# settings or the sources makes a new one.
base_tar() {
  local key
  key="$(printf '%s\n' "$SUITE" "$VARIANT" "$INCLUDE" | cat - "$(sources_file)" | sha256sum)"
  printf '%s/base-%s-%s.tar\n' "$CACHE" "$SUITE" "${key:0:12}"
}

# Builds the base tar unless it is there (or --rebuild-base). A lock keeps two runs from
# bootstrapping at once; a run that extracts it meanwhile keeps reading the file it opened.
ensure_base() {
  local tar="$1" lock sources
  exec {lock}>"${CACHE}/base.lock"
  flock "$lock"
  if [[ -f "$tar" ]] && ((REBUILD_BASE == 0)); then
    log "base: ${tar} (cached, $(du -h "$tar" | cut -f1), built $(date -r "$tar" '+%F %R'))"
    exec {lock}>&-
    return 0
  fi
  sources="$(sources_file)"
  log "base: mmdebstrap --variant=${VARIANT} --include=${INCLUDE} ${SUITE} (sources: ${sources})"
  local started=$SECONDS
  PARTIAL_BASE="${tar%.tar}.partial.tar"
  mmdebstrap --quiet --variant="$VARIANT" --include="$INCLUDE" "$SUITE" "$PARTIAL_BASE" \
    "$sources" || die "mmdebstrap failed (see its output above)"
  local old
  for old in "${CACHE}/base-${SUITE}-"*.tar; do
    [[ "$old" == "$PARTIAL_BASE" || "$old" == "$tar" ]] || rm -f "$old"
  done
  mv "$PARTIAL_BASE" "$tar"
  PARTIAL_BASE=""
  log "base: ${tar} ($(du -h "$tar" | cut -f1)) in $((SECONDS - started)) s"
  exec {lock}>&-
}

# run_in_fresh_machine NAME: runs COMMANDS[NAME] in the container, logs it to RUN_DIR/NAME.log
# and prints its result and phases (also into summary.txt). Fails as the command does.
run_in_fresh_machine() {
  local name="$1" command="cd ${GUEST_REPO} && ${COMMANDS[$1]}"
  local log_file="${RUN_DIR}/${name}.log" shm_bytes start end rc=0
  local guest_env=(HOME=/root USER=root LOGNAME=root SHELL=/bin/bash TERM=dumb) var
  for var in "${PASS_ENV[@]}"; do
    [[ -z "${!var:-}" ]] || guest_env+=("${var}=${!var}")
  done
  shm_bytes="$(df --output=size -B1 /dev/shm | tail -n 1 | tr -d ' ')"
  CONTAINER="hostport-fresh-${name}-$$"
  log "${name}: ${command} (container ${CONTAINER}, log ${log_file})"
  # podman_private_root caps each podman call at 120 s (PODMAN starts with `timeout 120`): right
  # for podman_'s short calls, not for a command that runs an hour.
  local podman=("${PODMAN[@]}")
  [[ "${podman[0]}" != "timeout" ]] || podman=("${podman[@]:2}")
  start="$(now_us)"
  # In the background, and waited for: a trapped signal (Ctrl-C) interrupts `wait` at once, where
  # it would wait for a foreground pipeline to end, i.e. for the command to honour it after its
  # apt-get or build step; cleanup then stops the container (SIGTERM, which PID1 forwards, then
  # SIGKILL after 10 s). A background podman ignores SIGINT: only cleanup stops it.
  # --rootfs is a flag: the rootfs path takes the image's place, before the command.
  "${podman[@]}" run --rm --name "$CONTAINER" --privileged --network=host --pid=host \
    --hostname "$GUEST_HOSTNAME" --pids-limit=-1 --shm-size="${shm_bytes}b" \
    --log-driver=none --workdir /root --rootfs "$ROOTFS" \
    /bin/bash -c "$PID1" pid1 env -i "${guest_env[@]}" /bin/bash --login -c "$command" \
    </dev/null 2>&1 | stamp "$start" "$log_file" &
  PIPELINE=$!
  # With pipefail, podman's code (the command's) unless stamp failed.
  wait "$PIPELINE" || rc=$?
  end="$(now_us)"
  PIPELINE=""
  CONTAINER=""
  local seconds note=""
  seconds="$(awk -v us=$((end - start)) 'BEGIN {printf "%.3f", us / 1e6}')"
  ((rc != 125)) || note=" (podman's own failure: the command did not run)"
  {
    printf '%s: %s exited %d%s after %s (log: %s)\n' "$name" "$command" "$rc" "$note" \
      "$(duration "$seconds")" "$log_file"
    phases "$name" "$log_file" "$seconds"
  } >>"${RUN_DIR}/summary.txt"
  return "$rc"
}

# The network's trust: the CAs this machine adds to its store (under LOCAL_CAS; a TLS-intercepting
# egress proxy's, for one) go into the copy's store too, or https to npm's registry fails there
# (SELF_SIGNED_CERT_IN_CHAIN) for a reason a fresh machine on an ordinary network does not have.
# The copy, not the base: the base tar stays what mmdebstrap made.
trust_local_cas() {
  local certs
  certs="$(find "$LOCAL_CAS" -name '*.crt' -printf '%P ' 2>/dev/null || true)"
  [[ -n "$certs" ]] || return 0
  mkdir -p "${ROOTFS}${LOCAL_CAS}"
  cp -a "${LOCAL_CAS}/." "${ROOTFS}${LOCAL_CAS}/"
  local out
  out="$(chroot "$ROOTFS" update-ca-certificates 2>&1)" ||
    die "update-ca-certificates in the rootfs failed: ${out}"
  log "rootfs: trusts this machine's local CAs too (${LOCAL_CAS}: ${certs% })"
}

main() {
  while (($# > 0)); do
    case "$1" in
      -h | --help) usage; return 0 ;;
      --keep) KEEP=1; shift ;;
      --rebuild-base) REBUILD_BASE=1; shift ;;
      --only)
        (($# >= 2)) || die "--only needs demo or test"
        [[ -n "${COMMANDS[$2]:-}" ]] || die "--only: unknown command '$2' (demo or test)"
        ONLY="$2"; shift 2 ;;
      --cache) (($# >= 2)) || die "--cache needs a directory"; CACHE="$2"; shift 2 ;;
      *) usage >&2; die "unknown argument: $1" ;;
    esac
  done
  ((EUID == 0)) || die "needs root (mmdebstrap, a privileged container): run 'sudo $0'"
  local tool
  for tool in mmdebstrap podman runc git tar flock sha256sum awk; do
    command -v "$tool" >/dev/null || die "missing tool '$tool' (run scripts/setup.sh)"
  done
  mkdir -p "$CACHE"
  CACHE="$(cd "$CACHE" && pwd)"

  local head dirty
  head="$(git -C "$REPO_ROOT" rev-parse HEAD)" || die "${REPO_ROOT} is not a git checkout"
  dirty="$(git -C "$REPO_ROOT" status --porcelain --untracked-files=no | wc -l)"
  log "HEAD ${head:0:12}: $(git -C "$REPO_ROOT" log -1 --format=%s HEAD)"
  ((dirty == 0)) ||
    log "note: ${dirty} files changed in the work tree are not checked (only HEAD is cloned)"
  local free_gib
  free_gib="$(df --output=avail -BG "$CACHE" | tail -n 1 | tr -dc '0-9')"
  ((free_gib >= MIN_FREE_GIB)) ||
    log "warning: ${free_gib} GiB free in ${CACHE}; a full run needs about ${MIN_FREE_GIB}"

  trap cleanup EXIT
  trap 'exit 130' INT
  trap 'exit 143' TERM

  local tar
  tar="$(base_tar)"
  ensure_base "$tar"

  RUN_DIR="${CACHE}/runs/$(date '+%Y%m%d-%H%M%S')-$$"
  ROOTFS="${RUN_DIR}/rootfs"
  mkdir -p "$ROOTFS"
  chmod 0755 "$ROOTFS"
  local started=$SECONDS
  tar -C "$ROOTFS" --numeric-owner --xattrs --xattrs-include='*' -xf "$tar" ||
    die "cannot extract ${tar} into ${ROOTFS}"
  git clone --quiet --no-hardlinks "$REPO_ROOT" "${ROOTFS}${GUEST_REPO}" ||
    die "git clone of ${REPO_ROOT} failed"
  git -C "${ROOTFS}${GUEST_REPO}" reset --quiet --hard "$head"
  log "rootfs: ${ROOTFS} (extracted, and HEAD cloned to ${GUEST_REPO}) in $((SECONDS - started)) s"
  trust_local_cas

  PODMAN_DIR="$(mktemp -d "${TMPDIR:-/tmp}/hpfresh.XXXXXX")"
  mkdir -p "${PODMAN_DIR}/cni"
  podman_private_root "$PODMAN_DIR" "${PODMAN_DIR}/cni" "${PODMAN_DIR}/cni"
  printf 'HEAD %s, base %s\n' "$head" "$tar" >"${RUN_DIR}/summary.txt"

  local name failed=0
  for name in "${ORDER[@]}"; do
    [[ -z "$ONLY" || "$ONLY" == "$name" ]] || continue
    run_in_fresh_machine "$name" || failed=1
  done

  printf '\n'
  log "summary (${RUN_DIR}/summary.txt):"
  cat "${RUN_DIR}/summary.txt"
  ((failed == 0)) || die "a command failed on the fresh machine (logs above)"
  log "every command passed on a fresh ${SUITE}"
}

main "$@"
