#!/usr/bin/env bash
# Benchmarks hostport against Debian's CNI portmap on this machine, side by side, and writes
# docs/benchmarks.json, docs/benchmarks.md and docs/benchmarks-add-latency.png.
# Not a test: nothing here passes or fails on a timing. Run as root; see --help.
# The programs it drives live in bench/: the C++ ones (built with -DHOSTPORT_BUILD_BENCH=ON),
# results.jq (the JSON), report.jq (the Markdown) and add-latency.gp (the plot).
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
LEASES=50000
RECONCILE_SIZES=""
ONLY="cni,agent,recovery,reconcile"
BUILD_DIR="${REPO_ROOT}/build-bench"
DO_BUILD=1
REPLOT=0
ONLY_GIVEN=0
OUT_DIR="${REPO_ROOT}/docs"
TCP_SECONDS="" TCP_ROUNDS="" LOAD_SECONDS="" STARTUP_RUNS="" PASS_SAMPLES="" FLUSH_ROUNDS=""

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
  1. CNI ADD/DEL latency (p50, p99) of hostport (standalone), Debian's portmap and hostport
     with hostport-agent (a dynamic port by annotation), each run as a runtime runs a chained
     plugin after a real bridge prevResult, with N mappings already installed;
  2. new TCP connections/s from the node netns to nodeIP:hostPort with N mappings installed
     (hostport and portmap), next to the same rate straight to the pod IP;
  3. hostport-agent: durable allocate+release round trips/s and latency, 1/8/32 clients;
  4. hostport-agent start-up (exec to /readyz, and its own store.recovered event) and RSS,
     empty and with 50,000 leases;
  5. hostport-agent's reconciler with N leases whose forwards it writes: the start-up pass
     that installs them all, a pass that finds nothing to repair (every second), and the time
     from "nft flush map ip hostport ports" until traffic through the host ports is back.

Options:
  --quick               smaller N (0,200,1000), fewer samples; about 2 minutes after the build
  --sizes LIST          mappings installed before measuring (default 0,1000,5000)
  --samples N           ADD+DEL pairs per size for hostport (default 100; quick 20)
  --portmap-samples N   the same for portmap, whose ADD takes up to a second (default 40; quick 10)
  --bulk B              mappings per prepopulation ADD (default 10)
  --portmap-budget S    seconds portmap may take; larger sizes are skipped and reported
                        (default 1500; quick 120)
  --leases N            leases for the recovery benchmark (default 50000)
  --reconcile-sizes L   leases for the reconciler benchmark (default 5000,50000; quick
                        1000,5000). On a 2-core VM 50,000 takes about 6 minutes: the agent's
                        start-up pass and each flush's repair run about a minute each there
  --only LIST           sections to run: cni,agent,recovery,reconcile (default all; cni includes
                        the datapath)
  --build-dir DIR       build tree (default build-bench in the repository), configured with
                        -DHOSTPORT_BUILD_BENCH=ON -DBUILD_TESTING=OFF
  --no-build            use the binaries already in the build tree
  --out DIR             where the results go (default docs/ in the repository)
  --replot              measure nothing: redraw the plot and rewrite the Markdown from the
                        benchmarks.json already in --out (after a change to bench/report.jq or
                        bench/add-latency.gp)
  -h, --help            this text

Environment:
  HOSTPORT_JOBS=N       parallel build jobs (default: nproc, here ${JOBS})

Needs root, but for --replot. Installs what it needs with scripts/setup.sh --bench (apt-get, only when something
is missing): iproute2, nftables, iptables, conntrack, jq, containernetworking-plugins
(/usr/lib/cni/{bridge,host-local,portmap}) and gnuplot-nox for the plot.
EOF
}

parse_args() {
  while (($# > 0)); do
    case "$1" in
      --sizes | --samples | --portmap-samples | --bulk | --portmap-budget | --leases | \
        --reconcile-sizes | --only | --build-dir | --out)
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
      --leases) LEASES="$2"; shift ;;
      --reconcile-sizes) RECONCILE_SIZES="$2"; shift ;;
      --only) ONLY="$2"; ONLY_GIVEN=1; shift ;;
      --build-dir) BUILD_DIR="$2"; shift ;;
      --no-build) DO_BUILD=0 ;;
      --out) OUT_DIR="$2"; shift ;;
      --replot) REPLOT=1 ;;
      *) usage >&2; die "unknown argument: $1" ;;
    esac
    shift
  done
  if ((REPLOT)); then
    ((!ONLY_GIVEN)) || die "--replot measures nothing, so it takes no --only"
    ONLY=""
  fi
  if ((QUICK)); then
    : "${SIZES:=0,200,1000}" "${SAMPLES:=20}" "${PORTMAP_SAMPLES:=10}" "${PORTMAP_BUDGET:=120}"
    : "${RECONCILE_SIZES:=1000,5000}"
    TCP_SECONDS=1 TCP_ROUNDS=3 LOAD_SECONDS=2 STARTUP_RUNS=2 PASS_SAMPLES=5 FLUSH_ROUNDS=3
  else
    : "${SIZES:=0,1000,5000}" "${SAMPLES:=100}" "${PORTMAP_SAMPLES:=40}" "${PORTMAP_BUDGET:=1500}"
    : "${RECONCILE_SIZES:=5000,50000}"
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
  for ns in $(ip netns list | awk -v t="$TAG-" 'index($1, t) == 1 {print $1}'); do
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
    -DHOSTPORT_BUILD_BENCH=ON -DBUILD_TESTING=OFF >"$TMP/cmake.log" 2>&1 ||
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
  LEASEGEN=$(bin_path hostport-bench-leasegen bench)
  PASSES_BENCH=$(bin_path hostport-bench-reconcile-passes bench)
  FLUSH_BENCH=$(bin_path hostport-bench-flush-restore bench)
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
    case $kind in
      hostport)
        args+=(--plugin "$HOSTPORT_BIN" --tcp-client "$TCP_BENCH" --tcp-seconds "$TCP_SECONDS"
          --tcp-rounds "$TCP_ROUNDS")
        ;;
      portmap)
        args+=(--plugin /usr/lib/cni/portmap --tcp-client "$TCP_BENCH"
          --tcp-seconds "$TCP_SECONDS" --tcp-rounds "$TCP_ROUNDS"
          --budget-seconds "$PORTMAP_BUDGET")
        ;;
      hostport-agent)
        start_agent "$NODE_NS" "$TMP/cni-agent-state" "$TMP/cni-agent.sock" 10000-39999 \
          "$TMP/cni-agent.log" --log-level warn
        args+=(--plugin "$HOSTPORT_BIN" --agent-socket "$TMP/cni-agent.sock")
        ;;
    esac
    run "$CNI_BENCH" "${args[@]}" >"$TMP/cni-$kind.jsonl"
    if [[ $kind == hostport-agent ]]; then
      stop_pid "$AGENT_PID"
    fi
    node_down
  done
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

startup_runs() {  # state-dir port-range: one JSON object
  run env "${AGENT_ENV[@]}" "$STARTUP_BENCH" --agent "$AGENT_BIN" --state-dir "$1" \
    --socket "$TMP/startup.sock" --netns "/run/netns/$TAG-recovery" --port-range "$2" \
    --runs "$STARTUP_RUNS" --log "$1.log"
}

bench_recovery() {
  local range layout
  ip netns add "$TAG-recovery"
  ip -n "$TAG-recovery" link set lo up
  range=10000-$((10000 + LEASES - 1 > 60999 ? 10000 + LEASES - 1 : 60999))
  log "recovery: empty state dir"
  startup_runs "$TMP/rec-empty" "$range" >"$TMP/recovery-empty.json"
  for layout in snapshot journal; do
    log "recovery: $LEASES leases ($layout)"
    run "$LEASEGEN" --state-dir "$TMP/rec-$layout" --leases "$LEASES" --layout "$layout" \
      --first-port 10000 --netns-path "/run/netns/$TAG-recovery" 2>"$TMP/leasegen-$layout.log"
    startup_runs "$TMP/rec-$layout" "$range" >"$TMP/recovery-$layout.json"
    # The state dir as the agent left it: after its own start it may have compacted.
    du -sk "$TMP/rec-$layout" | cut -f1 >"$TMP/recovery-$layout.kib"
  done
  ip netns del "$TAG-recovery"
}

# The reconciler with N leases whose forwards the agent writes (agent mode), made by
# hostport-bench-leasegen: each lease one host port (10000 + i -> 8080/tcp) to its own pod
# address (10.88.1.0 + i, in the bridge's 10.88.0.0/16; masquerade elements are keyed by pod
# address, so they must be distinct) in the real pod's netns, which the liveness check sees alive.
# A few leases spread over the list are made reachable: their addresses go on the pod's eth0,
# where the TCP server answers on 8080.
readonly RECONCILE_PROBES=8

bench_reconcile() {
  local n
  node_up reconcile
  # The pool (10000 and up) is reserved from ephemeral use in this netns; the probes need some.
  ip netns exec "$NODE_NS" sysctl -qw net.ipv4.ip_local_port_range="61000 65535"
  for n in ${RECONCILE_SIZES//,/ }; do
    reconcile_size "$n"
  done >"$TMP/reconcile.jsonl"
  node_down
}

reconcile_size() {  # leases: one JSON object on stdout
  local n=$1 state="$TMP/reconcile-$1" socket="$TMP/reconcile-$1.sock"
  local log="$TMP/reconcile-$1.agent.log" probes ports address startup
  log "reconcile: $n leases with forwarding: start-up pass, $PASS_SAMPLES steady passes," \
    "$FLUSH_ROUNDS flushes"
  run "$LEASEGEN" --state-dir "$state" --leases "$n" --first-port 10000 \
    --netns-path "/run/netns/$POD_NS" --forwarding-network hpbench \
    --first-pod-address 10.88.1.0/16 --targets "$state.targets" 2>"$state.leasegen.log"
  probes=$(awk -v n="$n" -v k="$RECONCILE_PROBES" '
    BEGIN { for (j = 0; j < k; j++) want[int(j * (n - 1) / (k - 1)) + 1] = 1 }
    want[NR]' "$state.targets")
  while read -r _ address; do
    ip -n "$POD_NS" addr add "$address/32" dev eth0
  done <<<"$probes"
  ports=$(awk '{print $1}' <<<"$probes" | paste -sd, -)

  start_agent "$NODE_NS" "$state" "$socket" "10000-$((10000 + n - 1))" "$log" \
    --log-level info --log-format json --table-repair-interval 1
  # The start-up pass runs as the socket starts to serve: wait for its end.
  wait_event table.reconciled "$log" 600
  startup=$(first_event table.reconciled "$log")
  [[ $(jq '.leases_restored' <<<"$startup") == "$n" ]] ||
    die "the start-up pass did not install all $n leases: ${startup:-no table.reconciled event}"
  run "$PASSES_BENCH" --socket "$socket" --samples "$PASS_SAMPLES" \
    --nudge-netns "/run/netns/$NODE_NS" >"$state.passes.json"
  run "$FLUSH_BENCH" --netns "/run/netns/$NODE_NS" --node-ip 192.0.2.1 --ports "$ports" \
    --agent-log "$log" --rounds "$FLUSH_ROUNDS" >"$state.flush.jsonl"
  stop_pid "$AGENT_PID"
  # The next size starts from an empty table, as this one did: elements left behind would be
  # strays to the next agent, whose start-up pass would spend its time deleting them.
  ip netns exec "$NODE_NS" nft delete table ip hostport
  ip netns exec "$NODE_NS" nft delete table ip6 hostport

  while read -r _ address; do
    ip -n "$POD_NS" addr del "$address/32" dev eth0
  done <<<"$probes"
  jq -n -c --argjson n "$n" --argjson readyMs "$AGENT_READY_MS" --argjson startup "$startup" \
    --argjson recovered "$(first_event store.recovered "$log")" \
    --argjson passes "$(cat "$state.passes.json")" --argjson flush "$(slurp "$state.flush.jsonl")" \
    --argjson logLines "$(wc -l <"$log")" \
    '{n: $n, execToSocketMs: $readyMs, recoveredMs: $recovered.ms,
      startupPass: {durationMs: $startup.duration_ms, leasesRestored: $startup.leases_restored},
      steadyPass: $passes, flush: $flush, agentLogLines: $logLines}'
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

first_event() {  # name agent-log(json): the first such event, or nothing
  jq -c -n --arg e "$1" 'first(inputs | select(.event == $e))' "$2"
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
    --argjson floor "$(slurp "$TMP/exec-floor.jsonl")" \
    --argjson recEmpty "$(object_or_null "$TMP/recovery-empty.json")" \
    --argjson recSnapshot "$(object_or_null "$TMP/recovery-snapshot.json")" \
    --argjson recJournal "$(object_or_null "$TMP/recovery-journal.json")" \
    --argjson kibSnapshot "$(object_or_null "$TMP/recovery-snapshot.kib")" \
    --argjson kibJournal "$(object_or_null "$TMP/recovery-journal.kib")" \
    --arg reconcileSizes "$RECONCILE_SIZES" --argjson passSamples "$PASS_SAMPLES" \
    --argjson flushRounds "$FLUSH_ROUNDS" --argjson reconcileProbes "$RECONCILE_PROBES" \
    --argjson reconcile "$(slurp "$TMP/reconcile.jsonl")" \
    >"$1.tmp"
  mv "$1.tmp" "$1"
  log "wrote $1"
}

# Draws ADD latency (p50 and p99) against N (bench/add-latency.gp) and prints the Markdown line
# for the plot section: the image, or why there is none.
draw_plot() {  # json-file png-file
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
    jq -r --arg s "$series" '.cni[$s][] | "\(.n) \(.add.p50) \(.add.p99)"' "$1" \
      >"$TMP/plot-$series.dat"
  done
  floor=$(jq -r '.execFloorMs.true.p50 // empty' "$1")
  machine=$(jq -r \
    '"\(.machine.cores) cores, kernel \(.machine.kernel), load \(.machine.loadAverageStart), \(.date[0:10])"' \
    "$1")
  gnuplot -c "$BENCH_DIR/add-latency.gp" "$2" "$TMP" "$machine" "$floor" >&2 ||
    die "gnuplot failed"
  log "wrote $2"
  echo "![ADD latency vs N]($(basename "$2"))"
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
  if section cni; then
    bench_cni
  fi
  if section agent; then
    bench_agent
  fi
  if section recovery; then
    bench_recovery
  fi
  if section reconcile; then
    bench_reconcile
  fi

  mkdir -p "$OUT_DIR"
  local json_file="$OUT_DIR/benchmarks.json" plot_line
  if ((REPLOT)); then
    [[ -s $json_file ]] || die "--replot: no $json_file to redraw from"
    log "replot: from $json_file"
  else
    write_json "$json_file" "$started_at" "$load_start" "$((SECONDS - run_started))"
  fi
  plot_line=$(draw_plot "$json_file" "$OUT_DIR/benchmarks-add-latency.png")
  write_markdown "$json_file" "$OUT_DIR/benchmarks.md" "$plot_line"
  log "wrote $OUT_DIR/benchmarks.md ($((SECONDS - run_started)) s)"
}

main "$@"
