#!/usr/bin/env bash
# Benchmarks hostport against Debian's CNI portmap on this machine, side by side, and writes
# docs/benchmarks.json, docs/benchmarks.md, docs/benchmarks-cni-latency.png and
# docs/benchmarks-datapath.png.
# Not a test: nothing here passes or fails on a timing. Run as root; see --help.
# The programs it drives live in bench/: the C++ ones (built with -DHOSTPORT_BUILD_BENCH=ON),
# results.jq (the JSON), report.jq (the Markdown), cni-latency.gp and datapath.gp (the plots).
set -euo pipefail

readonly PROG="bench.sh"
REPO_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
readonly REPO_ROOT
readonly BENCH_DIR="${REPO_ROOT}/bench"
readonly JOBS="${HOSTPORT_JOBS:-$(nproc)}"

# Options; the mode (full or --quick) fills in what is left empty.
QUICK=0
SIZES=""
SAMPLES=""
PORTMAP_SAMPLES=""
BULK=10
PORTMAP_BUDGET=""
LEASES=65535
RECONCILE_SIZES=""
ONLY="cni,cold,churn,agent,admission,claims,recovery,reconcile"
BUILD_DIR="${REPO_ROOT}/build-bench"
DO_BUILD=1
REPLOT=0
MERGE_FROM=""
MERGE_CLAIMS_FROM=""
ONLY_GIVEN=0
OUT_DIR="${REPO_ROOT}/docs"
TCP_SECONDS="" TCP_ROUNDS="" LOAD_SECONDS="" STARTUP_RUNS="" PASS_SAMPLES="" FLUSH_ROUNDS=""
UDP_SAMPLES="" COLD_SAMPLES="" CHURN_N="" CHURN_SECONDS="" CHURN_WINDOW=""
CHURN_RATE=200
CHURN_WORKERS=8
PORTMAP_MAX_ADD_MS=1000
BURST="" PORTMAP_BURST=""
SECTION_SECONDS="{}"

# State of the run; cleanup copes with any of it unset. Everything is named after the pid.
readonly TAG="hpb$$"
TMP=""
PIDS=()

log() { printf '%s %s: %s\n' "$(date +%T)" "$PROG" "$*" >&2; }
die() { log "error: $*"; exit 1; }

usage() {
  cat <<EOF
Usage: sudo scripts/bench.sh [--quick] [options]

Measures, in private network namespaces only (nothing touches the root netns):
  1. cni: CNI ADD/DEL latency (p50, p99) of hostport (standalone), Debian's portmap and hostport
     with hostport-agent (a dynamic port by annotation), each run as a runtime runs a chained
     plugin after a real bridge prevResult, with N mappings already installed, next to the
     process-start floor (/bin/true) and each plugin's bare VERSION. N = 65535 fills the TCP port
     space, N = 131070 fills UDP on top (but for the 5 ports of each protocol the measurement
     uses). Also the datapath at each N: new TCP connections/s from the node netns to
     nodeIP:hostPort, and UDP first-packet latency (a fresh source port per request: a new
     conntrack entry each), both next to the same straight to the pod IP; and bursts: at each N,
     B ADDs back to back, then their B DELs back to back, as a node drain or a rollout makes
     them (the paced pairs hide what one call leaves for the next);
  2. cold: the first ADD on a fresh node (a new node netns, no table yet), standalone and right
     after hostport-agent started on an empty node;
  3. churn: hostport-agent with N leases, ADD+DEL pairs at a fixed rate (open loop, several
     workers), per-window latency, agent RSS and state dir size;
  4. agent: hostport-agent durable allocate+release round trips/s and latency, 1/8/32 clients;
     admission: hostport-admission AdmissionReviews/s and latency over 1/8/32 kept-alive TLS
     connections (a 3.2 KB Deployment pod, /validate and /mutate in turn), and a new
     connection's handshake;
     claims: cluster pools' claims per second and their latency through 1 and 2
     hostport-admission replicas against the fake API server (tests/fakes, a process), 1,000 and
     10,000 claims, the pool's strategy lowest and random;
  5. recovery: hostport-agent start-up (exec to /readyz, and its own store.recovered event) and
     RSS, empty and with --leases leases;
  6. reconcile: hostport-agent's reconciler with N leases whose forwards it writes: the start-up
     pass that installs them all, a pass that finds nothing to repair (every second), the agent's
     RSS (VmRSS, VmHWM) with them, the time from "nft flush map ip hostport ports" until traffic
     through the host ports is back, and a restart with the table in place.

Options:
  --quick               sizes 0,1000,65535, fewer samples, shorter churn (N=1000, 20 s);
                        3.5 minutes after the build on a 2-core VM (measured)
  --sizes LIST          mappings installed before measuring (default 0,1000,10000,65535,131070)
  --samples N           ADD+DEL pairs per size for hostport (default 100; quick 20)
  --portmap-samples N   the same for portmap, whose ADD takes up to a second (default 40; quick 10)
  --bulk B              mappings per prepopulation ADD (default 10)
  --portmap-budget S    seconds portmap may take; larger sizes are skipped and reported
                        (default 1500; quick 120)
  --portmap-max-add-ms MS
                        portmap stops before the next size once its ADD p50 is past MS
                        (default 1000)
  --burst LIST          burst sizes for hostport, standalone and with the agent
                        (default 15,100,1000; quick 15,100)
  --portmap-burst LIST  the same for portmap, whose DEL takes ~100 ms (default 15,100; quick 15)
  --udp-samples K       UDP requests per direction and datapath round (default 500; quick 200)
  --cold-samples K      first ADDs on a fresh node, each kind (default 20; quick 5)
  --churn-n N           leases installed before the churn (default 10000; quick 1000)
  --churn-seconds S     how long the churn runs (default 60; quick 20), in windows of 10 s
                        (quick 5 s)
  --churn-rate R        ADD+DEL pairs started per second (default 200)
  --churn-workers W     pairs in flight at most, as a runtime's parallel sandboxes (default 8)
  --leases N            leases for the recovery benchmark (default 65535)
  --reconcile-sizes L   leases for the reconciler benchmark (default 10000,65535; quick
                        1000,10000)
  --only LIST           sections to run: cni,cold,churn,agent,admission,claims,recovery,
                        reconcile
                        (default all)
  --build-dir DIR       build tree (default build-bench in the repository), configured with
                        -DHOSTPORT_BUILD_BENCH=ON (tests configured, for the fake API server
                        the claims section needs; only the benchmark's targets are built)
  --no-build            use the binaries already in the build tree
  --out DIR             where the results go (default docs/ in the repository)
  --replot              measure nothing: redraw the plots and rewrite the Markdown from the
                        benchmarks.json already in --out (after a change to bench/report.jq or
                        bench/*.gp)
  --merge-admission-from FILE
                        with --replot: first take the admission figures of FILE (the
                        benchmarks.json of a --only admission run) into --out's, marked with
                        that run's date and commit
  --merge-claims-from FILE
                        the same for the claims figures (a --only claims run)
  -h, --help            this text

The full run took 9.3 minutes on a quiet 2-core VM with --portmap-budget 600 (portmap stopped
before N = 10,000, where its ADD was predicted at 0.9 s); with the default budget, up to 25
minutes more of portmap. The UDP half of 131070 takes about 2.5 minutes of prepopulation
(ADDs of 10 UDP ports, ~20 ms each); the prepopulation's progress lines say the pace.

Environment:
  HOSTPORT_JOBS=N       parallel build jobs (default: nproc, here ${JOBS})

Needs root, but for --replot. Installs what it needs with scripts/setup.sh --bench (apt-get, only when something
is missing): iproute2, nftables, iptables, conntrack, jq, containernetworking-plugins
(/usr/lib/cni/{bridge,host-local,portmap}) and gnuplot-nox for the plots.
EOF
}

parse_args() {
  while (($# > 0)); do
    case "$1" in
      --sizes | --samples | --portmap-samples | --bulk | --portmap-budget | --leases | \
        --reconcile-sizes | --only | --build-dir | --out | --portmap-max-add-ms | \
        --udp-samples | --cold-samples | --churn-n | --churn-seconds | --churn-rate | \
        --churn-workers | --merge-admission-from | --merge-claims-from | --burst | --portmap-burst)
        (($# >= 2)) || die "$1 needs a value (see --help)"
        ;;
    esac
    case "$1" in
      -h | --help) usage; exit 0 ;;
      --quick) QUICK=1 ;;
      --sizes) SIZES="$2"; shift ;;
      --samples) SAMPLES="$2"; shift ;;
      --portmap-samples) PORTMAP_SAMPLES="$2"; shift ;;
      --bulk) BULK="$2"; shift ;;
      --portmap-budget) PORTMAP_BUDGET="$2"; shift ;;
      --portmap-max-add-ms) PORTMAP_MAX_ADD_MS="$2"; shift ;;
      --burst) BURST="$2"; shift ;;
      --portmap-burst) PORTMAP_BURST="$2"; shift ;;
      --udp-samples) UDP_SAMPLES="$2"; shift ;;
      --cold-samples) COLD_SAMPLES="$2"; shift ;;
      --churn-n) CHURN_N="$2"; shift ;;
      --churn-seconds) CHURN_SECONDS="$2"; shift ;;
      --churn-rate) CHURN_RATE="$2"; shift ;;
      --churn-workers) CHURN_WORKERS="$2"; shift ;;
      --leases) LEASES="$2"; shift ;;
      --reconcile-sizes) RECONCILE_SIZES="$2"; shift ;;
      --only) ONLY="$2"; ONLY_GIVEN=1; shift ;;
      --build-dir) BUILD_DIR="$2"; shift ;;
      --no-build) DO_BUILD=0 ;;
      --out) OUT_DIR="$2"; shift ;;
      --replot) REPLOT=1 ;;
      --merge-admission-from) MERGE_FROM="$2"; shift ;;
      --merge-claims-from) MERGE_CLAIMS_FROM="$2"; shift ;;
      *) usage >&2; die "unknown argument: $1" ;;
    esac
    shift
  done
  [[ -z $MERGE_FROM ]] || ((REPLOT)) || die "--merge-admission-from goes with --replot"
  [[ -z $MERGE_CLAIMS_FROM ]] || ((REPLOT)) || die "--merge-claims-from goes with --replot"
  if ((REPLOT)); then
    ((!ONLY_GIVEN)) || die "--replot measures nothing, so it takes no --only"
    ONLY=""
  fi
  if ((QUICK)); then
    : "${SIZES:=0,1000,65535}" "${SAMPLES:=20}" "${PORTMAP_SAMPLES:=10}" "${PORTMAP_BUDGET:=120}"
    : "${RECONCILE_SIZES:=1000,10000}" "${UDP_SAMPLES:=200}" "${COLD_SAMPLES:=5}"
    : "${CHURN_N:=1000}" "${CHURN_SECONDS:=20}" "${BURST:=15,100}" "${PORTMAP_BURST:=15}"
    CHURN_WINDOW=5
    TCP_SECONDS=1 TCP_ROUNDS=3 LOAD_SECONDS=2 STARTUP_RUNS=2 PASS_SAMPLES=5 FLUSH_ROUNDS=3
  else
    : "${SIZES:=0,1000,10000,65535,131070}" "${SAMPLES:=100}" "${PORTMAP_SAMPLES:=40}"
    : "${PORTMAP_BUDGET:=1500}" "${RECONCILE_SIZES:=10000,65535}" "${UDP_SAMPLES:=500}"
    : "${COLD_SAMPLES:=20}" "${CHURN_N:=10000}" "${CHURN_SECONDS:=60}"
    : "${BURST:=15,100,1000}" "${PORTMAP_BURST:=15,100}"
    CHURN_WINDOW=10
    TCP_SECONDS=2 TCP_ROUNDS=7 LOAD_SECONDS=5 STARTUP_RUNS=5 PASS_SAMPLES=10 FLUSH_ROUNDS=5
  fi
}

mode() { if ((QUICK)); then echo quick; else echo full; fi; }
section() { [[ ",$ONLY," == *",$1,"* ]]; }

require_tools() {
  "${REPO_ROOT}/scripts/setup.sh" --bench >&2 || die "scripts/setup.sh --bench failed"
  local tool plugin
  if ((REPLOT)); then  # only the report: jq, and gnuplot for the plot
    command -v jq >/dev/null || die "jq is missing (run scripts/setup.sh --bench)"
    return 0
  fi
  for tool in ip nft iptables conntrack jq cmake ninja; do
    command -v "$tool" >/dev/null || die "$tool is missing (run scripts/setup.sh --bench)"
  done
  for plugin in bridge host-local portmap; do
    [[ -x /usr/lib/cni/$plugin ]] ||
      die "/usr/lib/cni/$plugin is missing (containernetworking-plugins)"
  done
}

# --- processes and cleanup -----------------------------------------------------------------

cleanup() {
  local pid ns
  for pid in "${PIDS[@]}"; do
    kill "$pid" 2>/dev/null || true
  done
  for pid in "${PIDS[@]}"; do
    wait "$pid" 2>/dev/null || true
  done
  PIDS=()
  for ns in $(ip netns list 2>/dev/null | awk -v t="$TAG-" 'index($1, t) == 1 {print $1}'); do
    ip netns del "$ns" 2>/dev/null || true
  done
  if [[ -n "$TMP" ]]; then
    rm -rf "$TMP"
  fi
}

# Runs a long command as a background child and waits for it: bash runs a trap only between
# commands, so a signal must not have to wait for a foreground child that runs for minutes.
run() {
  "$@" &
  local pid=$! rc=0
  PIDS+=("$pid")
  wait "$pid" || rc=$?
  forget_pid "$pid"
  return "$rc"
}

# Drops a reaped child from PIDS, so cleanup never signals a pid the system has reused since.
forget_pid() {
  local kept=() pid
  for pid in "${PIDS[@]}"; do
    [[ $pid == "$1" ]] || kept+=("$pid")
  done
  PIDS=("${kept[@]}")
}

wait_for_file() {  # path seconds
  local i
  for ((i = 0; i < $2 * 100; i++)); do
    [[ -e $1 ]] && return 0
    sleep 0.01
  done
  return 1
}

stop_pid() {  # stops one process this script started, by its pid
  [[ -n ${1:-} ]] || return 0
  kill "$1" 2>/dev/null || true
  wait "$1" 2>/dev/null || true
  forget_pid "$1"
}

# --- build ---------------------------------------------------------------------------------

bin_path() {  # name dir: the path of a built executable
  local path="$BUILD_DIR/$2/$1"
  [[ -x $path ]] || die "$1 is not built in $BUILD_DIR (run without --no-build)"
  echo "$path"
}

build() {
  log "building into $BUILD_DIR (-j$JOBS)"
  cmake -G Ninja -S "$REPO_ROOT" -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DHOSTPORT_BUILD_BENCH=ON -DBUILD_TESTING=ON >"$TMP/cmake.log" 2>&1 ||
    { cat "$TMP/cmake.log" >&2; die "cmake failed"; }
  ninja -C "$BUILD_DIR" -j"$JOBS" hostport-bench >"$TMP/build.log" 2>&1 ||
    { tail -50 "$TMP/build.log" >&2; die "build failed"; }
}

# Sets the paths of the programs to measure and to measure with.
locate_binaries() {
  HOSTPORT_BIN=$(bin_path hostport cni-plugin)
  AGENT_BIN=$(bin_path hostport-agent agent)
  CNI_BENCH=$(bin_path hostport-bench-cni bench)
  TCP_BENCH=$(bin_path hostport-bench-tcp bench)
  LOAD_BENCH=$(bin_path hostport-bench-agent-load bench)
  STARTUP_BENCH=$(bin_path hostport-bench-agent-startup bench)
  ADMISSION_BENCH=$(bin_path hostport-bench-admission bench)
  ADMISSION_BIN=$(bin_path hostport-admission admission)
  CLAIMS_BENCH=$(bin_path hostport-bench-claims bench)
  FAKE_APISERVER=$(bin_path fake-kube-apiserver tests/fakes)
  LEASEGEN=$(bin_path hostport-bench-leasegen bench)
  PASSES_BENCH=$(bin_path hostport-bench-reconcile-passes bench)
  FLUSH_BENCH=$(bin_path hostport-bench-flush-restore bench)
  SET_DUMP_BENCH=$(bin_path hostport-bench-set-dump bench)
  # CNI finds a plugin by the file name in "type": give ours its real name in a private dir.
  mkdir -p "$TMP/cni-bin"
  cp "$HOSTPORT_BIN" "$TMP/cni-bin/hostport"
  HOSTPORT_BIN="$TMP/cni-bin/hostport"
}

# --- a simulated node ----------------------------------------------------------------------

# A node netns with a "node IP" on a veth (192.0.2.1), a pod netns attached by Debian's bridge +
# host-local (10.88.0.0/16, the pod in 10.88.0.10-250), and a TCP server in the pod. Every
# plugin gets a fresh node, so the iptables chains and nft tables of one never meet the other's.
node_up() {  # name: sets NODE_NS, POD_NS, PREV_RESULT, SERVER_PID
  local name=$1
  NODE_NS="$TAG-$name-node"
  POD_NS="$TAG-$name-pod"
  ip netns add "$NODE_NS"
  ip netns add "$POD_NS"
  ip -n "$NODE_NS" link set lo up
  ip -n "$POD_NS" link set lo up
  ip -n "$NODE_NS" link add hp0 type veth peer name hp1
  ip -n "$NODE_NS" addr add 192.0.2.1/24 dev hp0
  ip -n "$NODE_NS" link set hp0 up
  ip -n "$NODE_NS" link set hp1 up
  cat >"$TMP/$name-bridge.json" <<EOF
{"cniVersion": "1.0.0", "name": "hpbench", "type": "bridge", "bridge": "hpbr0",
 "isGateway": true, "hairpinMode": true, "ipMasq": false,
 "ipam": {"type": "host-local", "dataDir": "$TMP/$name-ipam",
          "ranges": [[{"subnet": "10.88.0.0/16", "rangeStart": "10.88.0.10",
                       "rangeEnd": "10.88.0.250", "gateway": "10.88.0.1"}]],
          "routes": [{"dst": "0.0.0.0/0"}]}}
EOF
  PREV_RESULT="$TMP/$name-prev.json"
  ip netns exec "$NODE_NS" env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin CNI_COMMAND=ADD \
    CNI_CONTAINERID="bench-$name-pod" CNI_NETNS="/run/netns/$POD_NS" CNI_IFNAME=eth0 \
    CNI_PATH=/usr/lib/cni /usr/lib/cni/bridge <"$TMP/$name-bridge.json" >"$PREV_RESULT" ||
    die "bridge ADD failed: $(cat "$PREV_RESULT")"
  "$TCP_BENCH" serve --port 8080 --threads 2 --netns "/run/netns/$POD_NS" \
    --ready-file "$TMP/$name-server.ready" &
  SERVER_PID=$!
  PIDS+=("$SERVER_PID")
  wait_for_file "$TMP/$name-server.ready" 10 || die "the TCP server did not start"
}

node_down() {
  stop_pid "${SERVER_PID:-}"
  ip netns del "$NODE_NS" 2>/dev/null || true
  ip netns del "$POD_NS" 2>/dev/null || true
}

# The agent runs as its image runs it (daemonset/Dockerfile): with malloc's heap on
# transparent huge pages.
readonly AGENT_ENV=(GLIBC_TUNABLES=glibc.malloc.hugetlb=1)

# Sets AGENT_PID, and AGENT_READY_MS: exec to the control socket, which opens after the start-up
# pass. That pass may install tens of thousands of leases, so the wait lasts as long as the agent
# lives (up to 10 minutes).
start_agent() {  # netns state-dir socket port-range log agent-flags...
  local netns=$1 state=$2 socket=$3 range=$4 log=$5 started=$EPOCHREALTIME i
  shift 5
  ip netns exec "$netns" env "${AGENT_ENV[@]}" "$AGENT_BIN" --state-dir "$state" \
    --socket "$socket" --pod-socket "" --release-spool "$(dirname "$socket")/released" \
    --port-range "$range" \
    "$@" 2>"$log" &
  AGENT_PID=$!
  PIDS+=("$AGENT_PID")
  for ((i = 0; i < 60000; i++)); do
    if [[ -S $socket ]]; then
      AGENT_READY_MS=$(awk -v a="$started" -v b="$EPOCHREALTIME" \
        'BEGIN {printf "%.0f", (b - a) * 1000}')
      return 0
    fi
    kill -0 "$AGENT_PID" 2>/dev/null || die "hostport-agent exited: $(tail -5 "$log")"
    sleep 0.01
  done
  die "hostport-agent did not open $socket"
}

# --- the measurements ----------------------------------------------------------------------

bench_cni() {
  local program kind kind_samples args
  # The floor under every CNI call here: a process that starts and exits, then each plugin's
  # VERSION (its start-up alone, no kernel work).
  log "exec floor: /bin/true, hostport VERSION, portmap VERSION"
  for program in /bin/true "$HOSTPORT_BIN" /usr/lib/cni/portmap; do
    run "$CNI_BENCH" --exec-floor "$program" --samples "$SAMPLES"
  done >"$TMP/exec-floor.jsonl"
  for kind in hostport portmap hostport-agent; do
    kind_samples=$SAMPLES
    [[ $kind == portmap ]] && kind_samples=$PORTMAP_SAMPLES
    log "CNI $kind: sizes $SIZES, $kind_samples samples each"
    node_up "$kind"
    args=(--kind "$kind" --node-netns "/run/netns/$NODE_NS" --pod-netns "/run/netns/$POD_NS"
      --prev-result "$PREV_RESULT" --sizes "$SIZES" --samples "$kind_samples"
      --node-ip 192.0.2.1 --container-port 8080 --bulk "$BULK")
    if [[ $kind == portmap ]]; then
      args+=(--burst "$PORTMAP_BURST")
    else
      args+=(--burst "$BURST")
    fi
    case $kind in
      hostport)
        args+=(--plugin "$HOSTPORT_BIN" --plugin-state-dir "$TMP/cni-state"
          --tcp-client "$TCP_BENCH" --tcp-seconds "$TCP_SECONDS"
          --tcp-rounds "$TCP_ROUNDS" --udp-samples "$UDP_SAMPLES")
        ;;
      portmap)
        args+=(--plugin /usr/lib/cni/portmap --tcp-client "$TCP_BENCH"
          --tcp-seconds "$TCP_SECONDS" --tcp-rounds "$TCP_ROUNDS" --udp-samples "$UDP_SAMPLES"
          --budget-seconds "$PORTMAP_BUDGET" --max-add-ms "$PORTMAP_MAX_ADD_MS")
        ;;
      hostport-agent)
        start_full_space_agent "$NODE_NS" "$TMP/cni-agent-state" "$TMP/cni-agent.sock" \
          "$TMP/cni-agent.log" --log-level warn
        args+=(--plugin "$HOSTPORT_BIN" --agent-socket "$TMP/cni-agent.sock")
        ;;
    esac
    # A failed plugin call ends this kind's series (what it measured before stays), not the run:
    # the failure goes into the results with the plugin's own words.
    if ! run "$CNI_BENCH" "${args[@]}" >"$TMP/cni-$kind.jsonl" 2> >(tee "$TMP/cni-$kind.err" >&2)
    then
      log "CNI $kind failed; its series ends there (see benchmarks.json, cni.failures)"
      sleep 0.2  # tee's last lines
      jq -n -c --arg kind "$kind" --rawfile err "$TMP/cni-$kind.err" \
        '{plugin: $kind, done: true, failed: ($err | split("\n") | map(select(startswith("bench: ")))
          | first // "exited with an error" | .[0:600])}' >>"$TMP/cni-$kind.jsonl"
    fi
    if [[ $kind == hostport-agent ]]; then
      stop_pid "$AGENT_PID"
    fi
    node_down
  done
}

# An agent whose default pool is the whole port space, as the largest sizes need: no metrics
# listener (it would hold a port of the pool), and the pool left out of
# ip_local_reserved_ports, which would otherwise leave the node netns no ephemeral port at all.
start_full_space_agent() {  # netns state-dir socket log agent-flags...
  local netns=$1 state=$2 socket=$3 log=$4
  shift 4
  start_agent "$netns" "$state" "$socket" 1-65535 "$log" --metrics-address "" \
    --reserve-local-ports=false "$@"
}

# A node netns with nothing in it yet: no nft table, a node IP and a route to the pod subnet
# (the fabricated pod's address), as a node has before its first pod.
fresh_node() {  # name
  ip netns add "$1"
  ip -n "$1" link set lo up
  ip -n "$1" link add hp0 type veth peer name hp1
  ip -n "$1" addr add 192.0.2.1/24 dev hp0
  ip -n "$1" link add hpbr0 type veth peer name hpbr1
  ip -n "$1" addr add 10.88.0.1/16 dev hpbr0
  local link
  for link in hp0 hp1 hpbr0 hpbr1; do
    ip -n "$1" link set "$link" up
  done
}

# The first ADD on a fresh node: each sample a new node netns without our table. Standalone, the
# ADD lays the table out itself; with the agent, the agent has just started on the empty node
# (its start-up pass lays the table out) and the sample is the first ADD it serves.
bench_cold() {
  local kind i fresh
  node_up cold
  for kind in hostport hostport-agent; do
    log "cold: first $kind ADD on a fresh node, $COLD_SAMPLES samples"
    for ((i = 0; i < COLD_SAMPLES; i++)); do
      fresh="$TAG-cold-$i"
      fresh_node "$fresh"
      local args=(--kind "$kind" --plugin "$HOSTPORT_BIN" --node-netns "/run/netns/$fresh"
        --pod-netns "/run/netns/$POD_NS" --prev-result "$PREV_RESULT" --cold-add
        --plugin-state-dir "$TMP/cni-state")
      if [[ $kind == hostport-agent ]]; then
        rm -rf "$TMP/cold-agent"
        mkdir -p "$TMP/cold-agent"
        start_full_space_agent "$fresh" "$TMP/cold-agent/state" "$TMP/cold-agent/agent.sock" \
          "$TMP/cold-agent/agent.log" --log-level warn
        args+=(--agent-socket "$TMP/cold-agent/agent.sock")
      fi
      run "$CNI_BENCH" "${args[@]}" | jq -c --arg kind "$kind" '. + {kind: $kind}'
      if [[ $kind == hostport-agent ]]; then
        stop_pid "$AGENT_PID"
      fi
      ip netns del "$fresh"
    done
  done >"$TMP/cold.jsonl"
  node_down
}

# Churn with the agent: CHURN_N leases installed by the plugin's ADD, then ADD+DEL pairs at
# CHURN_RATE per second for CHURN_SECONDS, sampling the agent's RSS and state dir per window. The
# agent compacts its journal past compactAfterJournalBytes: 1 MiB here, an eighth of its default,
# so that a 60 s run at 200 pairs/s (~55 KiB of journal a second) goes through a few compactions
# (each a snapshot of every lease) and shows the journal bounded by them.
readonly CHURN_COMPACT_BYTES=1048576

bench_churn() {
  log "churn: N=$CHURN_N, $CHURN_RATE ADD+DEL pairs/s for $CHURN_SECONDS s, $CHURN_WORKERS workers"
  node_up churn
  printf 'compactAfterJournalBytes: %s\n' "$CHURN_COMPACT_BYTES" >"$TMP/churn-agent.yaml"
  start_full_space_agent "$NODE_NS" "$TMP/churn-state" "$TMP/churn.sock" "$TMP/churn-agent.log" \
    --log-level warn --config "$TMP/churn-agent.yaml"
  run "$CNI_BENCH" --kind hostport-agent --plugin "$HOSTPORT_BIN" \
    --node-netns "/run/netns/$NODE_NS" --pod-netns "/run/netns/$POD_NS" \
    --prev-result "$PREV_RESULT" --agent-socket "$TMP/churn.sock" --sizes "$CHURN_N" \
    --bulk "$BULK" --churn-seconds "$CHURN_SECONDS" --churn-rate "$CHURN_RATE" \
    --churn-workers "$CHURN_WORKERS" --churn-window "$CHURN_WINDOW" --agent-pid "$AGENT_PID" \
    --state-dir "$TMP/churn-state" >"$TMP/churn-raw.json"
  stop_pid "$AGENT_PID"
  # The agent logs at warn: what it has to say about failures goes with the figures.
  jq -c --argjson compact "$CHURN_COMPACT_BYTES" --argjson lines "$(wc -l <"$TMP/churn-agent.log")" \
    --rawfile head <(head -c 4000 "$TMP/churn-agent.log") \
    '. + {compactAfterJournalBytes: $compact, agentLogLines: $lines, agentLogHead: $head}' \
    "$TMP/churn-raw.json" >"$TMP/churn.json"
  node_down
}

bench_agent() {
  log "agent: allocate+release round trips, clients 1,8,32, ${LOAD_SECONDS} s each"
  ip netns add "$TAG-agent"
  ip -n "$TAG-agent" link set lo up
  start_agent "$TAG-agent" "$TMP/load-state" "$TMP/load.sock" 10000-39999 "$TMP/load-agent.log" \
    --log-level warn
  run "$LOAD_BENCH" --socket "$TMP/load.sock" --clients 1,8,32 --seconds "$LOAD_SECONDS" \
    --netns-path "/run/netns/$TAG-agent" --fsync-probe "$TMP/load-state" >"$TMP/agent-load.jsonl"
  stop_pid "$AGENT_PID"
  ip netns del "$TAG-agent"
}

bench_admission() {
  log "admission: reviews over kept-alive TLS, clients 1,8,32, ${LOAD_SECONDS} s each"
  ip netns add "$TAG-admission"
  ip -n "$TAG-admission" link set lo up
  run "$ADMISSION_BENCH" --admission "$ADMISSION_BIN" --netns-path "/run/netns/$TAG-admission" \
    --dir "$TMP/admission" --clients 1,8,32 --seconds "$LOAD_SECONDS" >"$TMP/admission.jsonl"
  ip netns del "$TAG-admission"
}

bench_claims() {
  log "claims: cluster pools' claims through 1 and 2 replicas, 1000 and 10000 claims"
  ip netns add "$TAG-claims"
  ip -n "$TAG-claims" link set lo up
  run "$CLAIMS_BENCH" --admission "$ADMISSION_BIN" --fake-apiserver "$FAKE_APISERVER" \
    --netns-path "/run/netns/$TAG-claims" --dir "$TMP/claims" >"$TMP/claims.jsonl"
  ip netns del "$TAG-claims"
}

startup_runs() {  # state-dir port-range: one JSON object
  run env "${AGENT_ENV[@]}" "$STARTUP_BENCH" --agent "$AGENT_BIN" --state-dir "$1" \
    --socket "$TMP/startup.sock" --netns "/run/netns/$TAG-recovery" --port-range "$2" \
    --runs "$STARTUP_RUNS" --log "$1.log"
}

bench_recovery() {
  local range layout
  ip netns add "$TAG-recovery"
  ip -n "$TAG-recovery" link set lo up
  ((LEASES <= 65535)) || die "--leases: at most 65535 (one port each)"
  range=1-65535
  log "recovery: empty state dir"
  startup_runs "$TMP/rec-empty" "$range" >"$TMP/recovery-empty.json"
  for layout in snapshot journal; do
    log "recovery: $LEASES leases ($layout)"
    run "$LEASEGEN" --state-dir "$TMP/rec-$layout" --leases "$LEASES" --layout "$layout" \
      --first-port 1 --netns-path "/run/netns/$TAG-recovery" 2>"$TMP/leasegen-$layout.log"
    startup_runs "$TMP/rec-$layout" "$range" >"$TMP/recovery-$layout.json"
    # The state dir as the agent left it: after its own start it may have compacted.
    du -sk "$TMP/rec-$layout" | cut -f1 >"$TMP/recovery-$layout.kib"
  done
  ip netns del "$TAG-recovery"
}

# The reconciler with N leases whose forwards the agent writes (agent mode), made by
# hostport-bench-leasegen: each lease one host port (1 + i -> 8080/tcp, so 65,535 leases fill the
# port space) to its own pod address (10.88.1.0 + i in 10.88.0.0/15: masquerade elements are keyed
# by pod address, so they must be distinct, and 65,535 of them do not fit in the bridge's /16;
# the node routes 10.89.0.0/16 to the bridge too) in the real pod's netns, which the liveness
# check sees alive. A few leases spread over the list are made reachable: their addresses go on
# the pod's eth0, where the TCP server answers on 8080.
readonly RECONCILE_PROBES=8

bench_reconcile() {
  local n
  node_up reconcile
  ip -n "$NODE_NS" route add 10.89.0.0/16 dev hpbr0
  for n in ${RECONCILE_SIZES//,/ }; do
    reconcile_size "$n"
  done >"$TMP/reconcile.jsonl"
  node_down
}

reconcile_size() {  # leases: one JSON object on stdout
  local n=$1 state="$TMP/reconcile-$1" socket="$TMP/reconcile-$1.sock"
  local log="$TMP/reconcile-$1.agent.log" probes ports address startup memory restart ready_ms
  log "reconcile: $n leases with forwarding: start-up pass, $PASS_SAMPLES steady passes," \
    "$FLUSH_ROUNDS flushes"
  run "$LEASEGEN" --state-dir "$state" --leases "$n" --first-port 1 \
    --netns-path "/run/netns/$POD_NS" --forwarding-network hpbench \
    --first-pod-address 10.88.1.0/15 --targets "$state.targets" 2>"$state.leasegen.log"
  probes=$(awk -v n="$n" -v k="$RECONCILE_PROBES" '
    BEGIN { for (j = 0; j < k; j++) want[int(j * (n - 1) / (k - 1)) + 1] = 1 }
    want[NR]' "$state.targets")
  while read -r _ address; do
    ip -n "$POD_NS" addr add "$address/32" dev eth0
  done <<<"$probes"
  ports=$(awk '{print $1}' <<<"$probes" | paste -sd, -)

  # The pool is the leases' ports, left out of ip_local_reserved_ports: at 65,535 it is every
  # port, and the probes need ephemeral ones (their source ports meet no DNAT: only new
  # connections' destination ports are looked up).
  start_agent "$NODE_NS" "$state" "$socket" "1-$n" "$log" --metrics-address "" \
    --reserve-local-ports=false --log-level info --log-format json --table-repair-interval 1
  ready_ms=$AGENT_READY_MS
  # The start-up pass runs as the socket starts to serve: wait for its end.
  wait_event table.reconciled "$log" 900
  startup=$(first_event table.reconciled "$log")
  [[ $(jq '.leases_restored' <<<"$startup") == "$n" ]] ||
    die "the start-up pass did not install all $n leases: ${startup:-no table.reconciled event}"
  run "$PASSES_BENCH" --socket "$socket" --samples "$PASS_SAMPLES" \
    --nudge-netns "/run/netns/$NODE_NS" >"$state.passes.json"
  # Memory with every lease's forwards written and the steady passes done.
  memory=$(agent_memory "$AGENT_PID")
  # The kernel's share of a compare: the same dumps, nothing compared.
  run "$SET_DUMP_BENCH" --netns "/run/netns/$NODE_NS" --samples 5 >"$state.dump.json"
  run "$FLUSH_BENCH" --netns "/run/netns/$NODE_NS" --node-ip 192.0.2.1 --ports "$ports" \
    --agent-log "$log" --rounds "$FLUSH_ROUNDS" --leases "$n" >"$state.flush.jsonl"
  memory=$(jq -c --argjson after "$(agent_memory "$AGENT_PID")" '. + {afterFlush: $after}' \
    <<<"$memory")
  stop_pid "$AGENT_PID"
  # A restart with the table in place, as after an upgrade or a crash: recovery, a start-up pass
  # that compares and finds everything there (it logs only a repair, so its figures come from
  # /metrics, read before the first periodic pass of the default interval), then the socket.
  start_agent "$NODE_NS" "$state" "$socket" "1-$n" "$log.restart" --metrics-address "" \
    --reserve-local-ports=false --log-level info --log-format json
  restart=$(jq -c -n --argjson ready "$AGENT_READY_MS" \
    --argjson pass "$("$PASSES_BENCH" --socket "$socket" --once)" \
    --argjson recovered "$(event_or_null store.recovered "$log.restart")" \
    --argjson memory "$(agent_memory "$AGENT_PID")" \
    '{execToSocketMs: $ready, recoveredMs: $recovered.ms, startupPass: {durationMs:
      $pass.lastPassMs, passes: $pass.passes, repairs: $pass.repairs}, memory: $memory}')
  stop_pid "$AGENT_PID"
  # The next size starts from an empty table, as this one did: elements left behind would be
  # strays to the next agent, whose start-up pass would spend its time deleting them.
  ip netns exec "$NODE_NS" nft delete table ip hostport
  ip netns exec "$NODE_NS" nft delete table ip6 hostport

  while read -r _ address; do
    ip -n "$POD_NS" addr del "$address/32" dev eth0
  done <<<"$probes"
  jq -n -c --argjson n "$n" --argjson readyMs "$ready_ms" --argjson startup "$startup" \
    --argjson recovered "$(first_event store.recovered "$log")" \
    --argjson passes "$(cat "$state.passes.json")" --argjson flush "$(slurp "$state.flush.jsonl")" \
    --argjson logLines "$(wc -l <"$log")" --argjson memory "$memory" --argjson restart "$restart" \
    --argjson kernelDump "$(cat "$state.dump.json")" \
    '{n: $n, execToSocketMs: $readyMs, recoveredMs: $recovered.ms,
      startupPass: {durationMs: $startup.duration_ms, leasesRestored: $startup.leases_restored},
      steadyPass: $passes, kernelDump: $kernelDump, memory: $memory, flush: $flush,
      restart: $restart, agentLogLines: $logLines}'
  rm -rf "$state"
}

wait_event() {  # name agent-log(json) seconds: until the log holds such an event
  local i
  for ((i = 0; i < $3 * 100; i++)); do
    [[ -n $(first_event "$1" "$2") ]] && return 0
    sleep 0.01
  done
  die "no $1 event in $2 within $3 s"
}

agent_memory() {  # pid: {"vmRssKiB","vmHwmKiB"} from /proc/PID/status
  awk '/^VmRSS:/ {rss = $2} /^VmHWM:/ {hwm = $2}
    END {printf "{\"vmRssKiB\":%d,\"vmHwmKiB\":%d}\n", rss, hwm}' "/proc/$1/status"
}

event_or_null() {  # name agent-log(json): the first such event, or null
  local event
  event=$(first_event "$1" "$2")
  echo "${event:-null}"
}

first_event() {  # name agent-log(json): the first such event, or nothing
  jq -c -n --arg e "$1" 'first(inputs | select(.event == $e))' "$2"
}

timed_section() {  # name: runs bench_NAME and records its seconds in SECTION_SECONDS
  local started=$SECONDS
  "bench_$1"
  SECTION_SECONDS=$(jq -c --arg s "$1" --argjson t "$((SECONDS - started))" '.[$s] = $t' \
    <<<"$SECTION_SECONDS")
  log "section $1: $((SECONDS - started)) s"
}

# --- results -------------------------------------------------------------------------------

slurp() { if [[ -s $1 ]]; then jq -s . "$1"; else echo '[]'; fi; }
object_or_null() { if [[ -s $1 ]]; then cat "$1"; else echo null; fi; }

# Writes benchmarks.json from the measurements in $TMP (bench/results.jq).
write_json() {  # json-file start-time load-start seconds
  local plugins_version dirty=no
  plugins_version=$(dpkg-query -W -f='${Version}' containernetworking-plugins 2>/dev/null ||
    echo unknown)
  if [[ -n "$(git -C "$REPO_ROOT" status --porcelain 2>/dev/null)" ]]; then
    dirty=yes
  fi
  jq -n -f "$BENCH_DIR/results.jq" \
    --arg date "$2" \
    --arg mode "$(mode)" \
    --arg kernel "$(uname -r)" \
    --arg cpu "$(awk -F': ' '/model name/ {print $2; exit}' /proc/cpuinfo)" \
    --argjson cores "$(nproc)" \
    --arg memory "$(awk '/MemTotal/ {printf "%.1f GiB", $2 / 1048576}' /proc/meminfo)" \
    --arg loadStart "$3" --arg loadEnd "$(cut -d' ' -f1-3 /proc/loadavg)" \
    --argjson seconds "$4" \
    --arg commit "$(git -C "$REPO_ROOT" rev-parse --short HEAD 2>/dev/null || echo unknown)" \
    --arg dirty "$dirty" \
    --arg pluginsVersion "$plugins_version" \
    --arg iptables "$(iptables -V)" --arg nft "$(nft -v)" \
    --arg sizes "$SIZES" --argjson samples "$SAMPLES" --argjson portmapSamples "$PORTMAP_SAMPLES" \
    --argjson bulk "$BULK" \
    --argjson tcpSeconds "$TCP_SECONDS" --argjson tcpRounds "$TCP_ROUNDS" \
    --argjson leases "$LEASES" \
    --argjson hostport "$(slurp "$TMP/cni-hostport.jsonl")" \
    --argjson portmap "$(slurp "$TMP/cni-portmap.jsonl")" \
    --argjson agentPlugin "$(slurp "$TMP/cni-hostport-agent.jsonl")" \
    --argjson load "$(slurp "$TMP/agent-load.jsonl")" \
    --argjson admission "$(slurp "$TMP/admission.jsonl")" \
    --argjson claims "$(slurp "$TMP/claims.jsonl")" \
    --argjson floor "$(slurp "$TMP/exec-floor.jsonl")" \
    --argjson recEmpty "$(object_or_null "$TMP/recovery-empty.json")" \
    --argjson recSnapshot "$(object_or_null "$TMP/recovery-snapshot.json")" \
    --argjson recJournal "$(object_or_null "$TMP/recovery-journal.json")" \
    --argjson kibSnapshot "$(object_or_null "$TMP/recovery-snapshot.kib")" \
    --argjson kibJournal "$(object_or_null "$TMP/recovery-journal.kib")" \
    --arg reconcileSizes "$RECONCILE_SIZES" --argjson passSamples "$PASS_SAMPLES" \
    --argjson flushRounds "$FLUSH_ROUNDS" --argjson reconcileProbes "$RECONCILE_PROBES" \
    --argjson reconcile "$(slurp "$TMP/reconcile.jsonl")" \
    --argjson udpSamples "$UDP_SAMPLES" --argjson cold "$(slurp "$TMP/cold.jsonl")" \
    --argjson churn "$(object_or_null "$TMP/churn.json")" \
    --argjson sectionSeconds "$SECTION_SECONDS" \
    >"$1.tmp" || {
    # Keep what was measured: the raw files, for a fix of results.jq and a rerun of it by hand.
    mkdir -p "$(dirname "$1")/raw-measurements"
    cp "$TMP"/*.json* "$TMP"/*.kib "$(dirname "$1")/raw-measurements/" 2>/dev/null || true
    die "bench/results.jq failed; the raw measurements are in $(dirname "$1")/raw-measurements"
  }
  mv "$1.tmp" "$1"
  log "wrote $1"
}

# Takes a section (admission, claims) of another run's benchmarks.json (a --only run of it) into
# json-file, with where it came from: its figures stand alone, unlike the N series of the others.
merge_section() {  # section figures-key from-json json-file
  local section=$1 key=$2
  jq -e --arg s "$section" --arg k "$key" '(.[$s][$k] // []) | length > 0' "$3" >/dev/null ||
    die "--merge-$section-from: $3 has no $section figures"
  jq --arg s "$section" --slurpfile from "$3" '.[$s] = ($from[0][$s] + {
      method: $from[0].method[$s],
      run: {date: $from[0].date, hostport: $from[0].versions.hostport,
            loadAverageStart: $from[0].machine.loadAverageStart}})' "$4" >"$4.tmp"
  mv "$4.tmp" "$4"
  log "merged the $section figures of $3 (run of $(jq -r .date "$3"))"
}

# Draws CNI ADD and DEL latency against N (bench/cni-latency.gp) and the datapath against N
# (bench/datapath.gp), and prints the Markdown for the plot section: the images, or why there
# are none. N = 0 is drawn at 10 on the log scale.
readonly PLOT_ZERO_AT=10

draw_plots() {  # json-file out-dir
  local series floor machine
  if [[ $(jq '.cni.hostport | length' "$1") == 0 ]]; then
    echo "(not drawn: this run skipped the CNI section)"
    return 0
  fi
  if ! command -v gnuplot >/dev/null; then
    echo "(not drawn: gnuplot is missing; apt-get install gnuplot-nox)"
    return 0
  fi
  for series in hostport portmap hostportAgent; do
    jq -r --arg s "$series" --argjson z "$PLOT_ZERO_AT" '.cni[$s][]
      | "\(if .n == 0 then $z else .n end) \(.add.p50) \(.add.p99) \(.del.p50) \(.del.p99)"' \
      "$1" >"$TMP/plot-$series.dat"
    jq -r --arg s "$series" --argjson z "$PLOT_ZERO_AT" '.cni[$s][] | select(.datapath != null)
      | "\(if .n == 0 then $z else .n end) \(.datapath.connectionsPerSecond)"
        + " \(.datapath.directConnectionsPerSecond) \(.datapath.udp.p50Ms // "NaN")"
        + " \(.datapath.udp.p99Ms // "NaN") \(.datapath.udp.directP50Ms // "NaN")"' \
      "$1" >"$TMP/datapath-$series.dat"
  done
  floor=$(jq -r '.execFloorMs.true.p50 // empty' "$1")
  machine=$(jq -r \
    '"\(.machine.cores) cores, kernel \(.machine.kernel), load \(.machine.loadAverageStart), \(.date[0:10])"' \
    "$1")
  gnuplot -c "$BENCH_DIR/cni-latency.gp" "$2/benchmarks-cni-latency.png" "$TMP" "$machine" \
    "$PLOT_ZERO_AT" "$floor" >&2 || die "gnuplot failed (cni-latency.gp)"
  gnuplot -c "$BENCH_DIR/datapath.gp" "$2/benchmarks-datapath.png" "$TMP" "$machine" \
    "$PLOT_ZERO_AT" >&2 || die "gnuplot failed (datapath.gp)"
  log "wrote $2/benchmarks-cni-latency.png and $2/benchmarks-datapath.png"
  echo "![CNI ADD and DEL latency vs N](benchmarks-cni-latency.png)"
  echo
  echo "![Datapath vs N](benchmarks-datapath.png)"
}

# The Markdown: tables from the JSON (bench/report.jq), between two markers; what the file holds
# outside them (the findings, written by hand) is kept.
readonly BEGIN_MARKER='<!-- bench.sh: generated from benchmarks.json, rewritten by every run up to the end marker -->'
readonly END_MARKER='<!-- bench.sh: end of the generated part -->'

write_markdown() {  # json-file md-file plot-line
  jq -r --arg plot "$3" -f "$BENCH_DIR/report.jq" "$1" >"$TMP/generated.md"
  if [[ -f $2 ]] && grep -qxF "$BEGIN_MARKER" "$2" && grep -qxF "$END_MARKER" "$2"; then
    awk -v b="$BEGIN_MARKER" -v e="$END_MARKER" -v g="$TMP/generated.md" '
      $0 == b { print; while ((getline line < g) > 0) print line; skip = 1; next }
      $0 == e { skip = 0 }
      !skip { print }' "$2" >"$2.tmp"
  else
    {
      echo "$BEGIN_MARKER"
      cat "$TMP/generated.md"
      echo "$END_MARKER"
      echo
      echo "## Findings"
      echo
      echo "(Written by hand: scripts/bench.sh rewrites only the part between the markers above.)"
    } >"$2.tmp"
  fi
  mv "$2.tmp" "$2"
}

# --- main ----------------------------------------------------------------------------------

main() {
  parse_args "$@"
  ((REPLOT || EUID == 0)) || die "needs root (network namespaces, nftables, iptables)"
  require_tools

  TMP=$(mktemp -d "/tmp/$TAG.XXXXXX")
  trap cleanup EXIT
  trap 'log "interrupted"; exit 130' INT TERM HUP

  if ((!REPLOT)); then
    if ((DO_BUILD)); then
      build
    fi
    locate_binaries
  fi

  local load_start started_at run_started=$SECONDS
  load_start=$(cut -d' ' -f1-3 /proc/loadavg)
  started_at=$(date -u +%Y-%m-%dT%H:%M:%SZ)
  log "mode $(mode), sizes $SIZES, load average $load_start"
  local name
  for name in cni cold churn agent admission claims recovery reconcile; do
    if section "$name"; then
      timed_section "$name"
    fi
  done

  mkdir -p "$OUT_DIR"
  local json_file="$OUT_DIR/benchmarks.json" plot_line
  if ((REPLOT)); then
    [[ -s $json_file ]] || die "--replot: no $json_file to redraw from"
    log "replot: from $json_file"
    [[ -z $MERGE_FROM ]] || merge_section admission load "$MERGE_FROM" "$json_file"
    [[ -z $MERGE_CLAIMS_FROM ]] || merge_section claims runs "$MERGE_CLAIMS_FROM" "$json_file"
  else
    write_json "$json_file" "$started_at" "$load_start" "$((SECONDS - run_started))"
  fi
  plot_line=$(draw_plots "$json_file" "$OUT_DIR")
  write_markdown "$json_file" "$OUT_DIR/benchmarks.md" "$plot_line"
  log "wrote $OUT_DIR/benchmarks.md ($((SECONDS - run_started)) s)"
  if ((!REPLOT)); then
    log "sections (s): $(jq -r 'to_entries | map("\(.key) \(.value)") | join(", ")' \
      <<<"$SECTION_SECONDS"); the full run (no --quick, every section) took 9.3 minutes on a" \
      "quiet 2-core VM with --portmap-budget 600, plus whatever more portmap's budget allows" \
      "(see --help)"
  fi
}

main "$@"
