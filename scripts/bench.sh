#!/usr/bin/env bash
# Benchmarks hostport against Debian's CNI portmap on this machine, side by side, and writes
# docs/benchmarks.json, docs/benchmarks.md and docs/benchmarks-add-latency.png.
# Not a test: nothing here passes or fails on a timing. Run as root; see --help.
set -euo pipefail

usage() {
  cat <<'EOF'
usage: sudo scripts/bench.sh [--quick] [options]

Measures, in private network namespaces only (nothing touches the root netns):
  1. CNI ADD/DEL latency (p50, p99) of hostport (standalone), Debian's portmap and hostport
     with hostport-agent (a dynamic port by annotation), each run as a runtime runs a chained
     plugin after a real bridge prevResult, with N mappings already installed;
  2. new TCP connections/s from the node netns to nodeIP:hostPort with N mappings installed
     (hostport and portmap), next to the same rate straight to the pod IP;
  3. hostport-agent: durable allocate+release round trips/s and latency, 1/8/32 clients;
  4. hostport-agent start-up (exec to /readyz, and its own "recovered N leases" line) and RSS,
     empty and with 50,000 leases.

options:
  --quick               smaller N (0,200,1000), fewer samples; about 1-2 minutes after the build
  --sizes LIST          mappings installed before measuring (default 0,1000,5000)
  --samples N           ADD+DEL pairs per size for hostport (default 100; quick 20)
  --portmap-samples N   the same for portmap, whose ADD takes up to a second (default 40; quick 10)
  --bulk B              mappings per prepopulation ADD (default 10)
  --portmap-budget S    seconds portmap may take; larger sizes are skipped and reported
                        (default 1500; quick 120)
  --leases N            leases for the recovery benchmark (default 50000)
  --only LIST           sections to run: cni,agent,recovery (default all; cni includes the
                        datapath)
  --build-dir DIR       build tree (default build-bench in the repository)
  --no-build            use the binaries already in the build tree
  --out DIR             where the results go (default docs/ in the repository)
  --replot              measure nothing: redraw the plot and rewrite the Markdown from the
                        benchmarks.json already in --out (after a change to either template)
  -h, --help            this text

Needs root. Installs what it needs with scripts/setup.sh --bench (apt-get, only when something
is missing): iproute2, nftables, iptables, conntrack, jq, containernetworking-plugins
(/usr/lib/cni/{bridge,host-local,portmap}) and gnuplot-nox for the plot.
EOF
}

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
quick=0
sizes=""
samples=""
portmap_samples=""
bulk=10
portmap_budget=""
leases=50000
only="cni,agent,recovery"
build_dir="$repo/build-bench"
build=1
replot=0
out_dir="$repo/docs"

while (($#)); do
  case "$1" in
    --quick) quick=1 ;;
    --sizes) sizes=$2; shift ;;
    --samples) samples=$2; shift ;;
    --portmap-samples) portmap_samples=$2; shift ;;
    --bulk) bulk=$2; shift ;;
    --portmap-budget) portmap_budget=$2; shift ;;
    --leases) leases=$2; shift ;;
    --only) only=$2; shift ;;
    --build-dir) build_dir=$2; shift ;;
    --no-build) build=0 ;;
    --out) out_dir=$2; shift ;;
    --replot) replot=1; only="" ;;
    -h | --help) usage; exit 0 ;;
    *) echo "bench.sh: unknown argument: $1 (see --help)" >&2; exit 2 ;;
  esac
  shift
done

if ((quick)); then
  : "${sizes:=0,200,1000}" "${samples:=20}" "${portmap_samples:=10}" "${portmap_budget:=120}"
  tcp_seconds=1; tcp_rounds=3; load_seconds=2; startup_runs=2
else
  : "${sizes:=0,1000,5000}" "${samples:=100}" "${portmap_samples:=40}" "${portmap_budget:=1500}"
  tcp_seconds=2; tcp_rounds=7; load_seconds=5; startup_runs=5
fi
section() { [[ ",$only," == *",$1,"* ]]; }
log() { printf '%s bench: %s\n' "$(date +%T)" "$*" >&2; }
die() { log "error: $*"; exit 1; }

[[ $(id -u) == 0 ]] || die "needs root (network namespaces, nftables, iptables)"
"$repo/scripts/setup.sh" --bench >&2 || die "scripts/setup.sh --bench failed"
for tool in ip nft iptables conntrack jq cmake ninja; do
  command -v "$tool" >/dev/null || die "$tool is missing (scripts/setup.sh, apt-get install jq)"
done
for plugin in bridge host-local portmap; do
  [[ -x /usr/lib/cni/$plugin ]] || die "/usr/lib/cni/$plugin is missing (containernetworking-plugins)"
done

# ---------------------------------------------------------------------------------------------
# Cleanup: everything this run makes is named after its pid, and is removed on any exit.
tag="hpb$$"
tmp=$(mktemp -d "/tmp/$tag.XXXXXX")
pids=()
cleanup() {
  local pid ns
  for pid in "${pids[@]}"; do
    kill "$pid" 2>/dev/null || true
  done
  for pid in "${pids[@]}"; do
    wait "$pid" 2>/dev/null || true
  done
  pids=()
  for ns in $(ip netns list | awk -v t="$tag-" 'index($1, t) == 1 {print $1}'); do
    ip netns del "$ns" 2>/dev/null || true
  done
  rm -rf "$tmp"
}
trap cleanup EXIT
trap 'log "interrupted"; exit 130' INT TERM HUP

# Runs a long command as a background child and waits for it: bash runs a trap only between
# commands, so a signal must not have to wait for a foreground child that runs for minutes.
run() {
  "$@" &
  local pid=$!
  pids+=("$pid")
  wait "$pid"
}

# ---------------------------------------------------------------------------------------------
# Build.
bin_path() {  # the path of a built executable, in either build layout
  local candidate
  for candidate in "$build_dir/$2/$1" "$build_dir/main/$2/$1"; do
    [[ -x $candidate ]] && { echo "$candidate"; return; }
  done
  die "$1 is not built in $build_dir (run without --no-build)"
}
if ((build && !replot)); then
  if grep -q 'HOSTPORT_BUILD_BENCH' "$repo/CMakeLists.txt"; then
    source_dir=$repo
    extra=(-DHOSTPORT_BUILD_BENCH=ON -DBUILD_TESTING=OFF)
  else
    # The top level does not add bench/ yet: a wrapper project adds the tree and bench/.
    source_dir="$build_dir/wrapper-src"
    mkdir -p "$source_dir"
    cat >"$source_dir/CMakeLists.txt.new" <<EOF
cmake_minimum_required(VERSION 3.25)
project(hostport_bench_wrapper LANGUAGES CXX)
add_subdirectory("$repo" main)
add_subdirectory("$repo/bench" bench)
EOF
    cmp -s "$source_dir/CMakeLists.txt.new" "$source_dir/CMakeLists.txt" ||
      mv "$source_dir/CMakeLists.txt.new" "$source_dir/CMakeLists.txt"
    rm -f "$source_dir/CMakeLists.txt.new"
    extra=(-DBUILD_TESTING=OFF)
  fi
  # A build tree configured from the other layout cannot be reconfigured in place.
  if [[ -f $build_dir/CMakeCache.txt ]] &&
    ! grep -qxF "CMAKE_HOME_DIRECTORY:INTERNAL=$source_dir" "$build_dir/CMakeCache.txt"; then
    rm -rf "$build_dir/CMakeCache.txt" "$build_dir/CMakeFiles"
  fi
  log "building into $build_dir"
  cmake -G Ninja -S "$source_dir" -B "$build_dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo "${extra[@]}" \
    >"$tmp/cmake.log" 2>&1 || { cat "$tmp/cmake.log" >&2; die "cmake failed"; }
  ninja -C "$build_dir" -j2 hostport-bench >"$tmp/build.log" 2>&1 ||
    { tail -50 "$tmp/build.log" >&2; die "build failed"; }
fi
if ((!replot)); then
  hostport_bin=$(bin_path hostport cni-plugin)
  agent_bin=$(bin_path hostport-agent agent)
  cni_bench=$(bin_path hostport-bench-cni bench)
  tcp_bench=$(bin_path hostport-bench-tcp bench)
  load_bench=$(bin_path hostport-bench-agent-load bench)
  startup_bench=$(bin_path hostport-bench-agent-startup bench)
  leasegen=$(bin_path hostport-bench-leasegen bench)
  # CNI finds a plugin by the file name in "type": give ours its real name in a private dir.
  mkdir -p "$tmp/cni-bin"
  cp "$hostport_bin" "$tmp/cni-bin/hostport"
  hostport_bin="$tmp/cni-bin/hostport"
fi

# ---------------------------------------------------------------------------------------------
# A simulated node: a node netns with a "node IP" on a veth (192.0.2.1), a pod netns attached by
# Debian's bridge + host-local (10.88.0.0/16, the pod in 10.88.0.10-250), and a TCP server in
# the pod. Every plugin gets a fresh node, so the iptables chains and nft tables of one never
# meet the other's.
node_up() {  # name: sets node_ns, pod_ns, prev_result
  local name=$1
  node_ns="$tag-$name-node"
  pod_ns="$tag-$name-pod"
  ip netns add "$node_ns"
  ip netns add "$pod_ns"
  ip -n "$node_ns" link set lo up
  ip -n "$pod_ns" link set lo up
  ip -n "$node_ns" link add hp0 type veth peer name hp1
  ip -n "$node_ns" addr add 192.0.2.1/24 dev hp0
  ip -n "$node_ns" link set hp0 up
  ip -n "$node_ns" link set hp1 up
  cat >"$tmp/$name-bridge.json" <<EOF
{"cniVersion": "1.0.0", "name": "hpbench", "type": "bridge", "bridge": "hpbr0",
 "isGateway": true, "hairpinMode": true, "ipMasq": false,
 "ipam": {"type": "host-local", "dataDir": "$tmp/$name-ipam",
          "ranges": [[{"subnet": "10.88.0.0/16", "rangeStart": "10.88.0.10",
                       "rangeEnd": "10.88.0.250", "gateway": "10.88.0.1"}]],
          "routes": [{"dst": "0.0.0.0/0"}]}}
EOF
  prev_result="$tmp/$name-prev.json"
  ip netns exec "$node_ns" env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin CNI_COMMAND=ADD \
    CNI_CONTAINERID="bench-$name-pod" CNI_NETNS="/run/netns/$pod_ns" CNI_IFNAME=eth0 \
    CNI_PATH=/usr/lib/cni /usr/lib/cni/bridge <"$tmp/$name-bridge.json" >"$prev_result" ||
    die "bridge ADD failed: $(cat "$prev_result")"
  "$tcp_bench" serve --port 8080 --threads 2 --netns "/run/netns/$pod_ns" \
    --ready-file "$tmp/$name-server.ready" &
  pids+=($!)
  server_pid=$!
  wait_for_file "$tmp/$name-server.ready" 10 || die "the TCP server did not start"
}

node_down() {
  stop_pid "${server_pid:-}"
  ip netns del "$node_ns" 2>/dev/null || true
  ip netns del "$pod_ns" 2>/dev/null || true
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
}

# The agent runs as its image runs it (daemonset/Dockerfile): with malloc's heap on
# transparent huge pages.
agent_env=(GLIBC_TUNABLES=glibc.malloc.hugetlb=1)

start_agent() {  # netns state-dir socket port-range log: sets agent_pid
  ip netns exec "$1" env "${agent_env[@]}" "$agent_bin" --state-dir "$2" --socket "$3" --port-range "$4" \
    --log-level warn 2>"$5" &
  agent_pid=$!
  pids+=("$agent_pid")
  local i
  for ((i = 0; i < 1000; i++)); do
    [[ -S $3 ]] && return 0
    kill -0 "$agent_pid" 2>/dev/null || die "hostport-agent exited: $(cat "$5")"
    sleep 0.01
  done
  die "hostport-agent did not open $3"
}

# ---------------------------------------------------------------------------------------------
load_start=$(cut -d' ' -f1-3 /proc/loadavg)
started_at=$(date -u +%Y-%m-%dT%H:%M:%SZ)
run_started=$SECONDS
log "mode $( ((quick)) && echo quick || echo full), sizes $sizes, load average $load_start"

cni_common=(--node-ip 192.0.2.1 --container-port 8080 --bulk "$bulk")
if section cni; then
  # The floor under every CNI call here: a process that starts and exits, then each plugin's
  # VERSION (its start-up alone, no kernel work).
  log "exec floor: /bin/true, hostport VERSION, portmap VERSION"
  for program in /bin/true "$hostport_bin" /usr/lib/cni/portmap; do
    run "$cni_bench" --exec-floor "$program" --samples "$samples"
  done >"$tmp/exec-floor.jsonl"
  for kind in hostport portmap hostport-agent; do
    kind_samples=$samples
    [[ $kind == portmap ]] && kind_samples=$portmap_samples
    log "CNI $kind: sizes $sizes, $kind_samples samples each"
    node_up "$kind"
    args=(--kind "$kind" --node-netns "/run/netns/$node_ns" --pod-netns "/run/netns/$pod_ns"
      --prev-result "$prev_result" --sizes "$sizes" --samples "$kind_samples" "${cni_common[@]}")
    case $kind in
      hostport)
        args+=(--plugin "$hostport_bin" --tcp-client "$tcp_bench" --tcp-seconds "$tcp_seconds"
          --tcp-rounds "$tcp_rounds")
        ;;
      portmap)
        args+=(--plugin /usr/lib/cni/portmap --tcp-client "$tcp_bench"
          --tcp-seconds "$tcp_seconds" --tcp-rounds "$tcp_rounds"
          --budget-seconds "$portmap_budget")
        ;;
      hostport-agent)
        start_agent "$node_ns" "$tmp/cni-agent-state" "$tmp/cni-agent.sock" 10000-39999 \
          "$tmp/cni-agent.log"
        args+=(--plugin "$hostport_bin" --agent-socket "$tmp/cni-agent.sock")
        ;;
    esac
    run "$cni_bench" "${args[@]}" >"$tmp/cni-$kind.jsonl"
    [[ $kind == hostport-agent ]] && stop_pid "$agent_pid"
    node_down
  done
fi

if section agent; then
  log "agent: allocate+release round trips, clients 1,8,32, ${load_seconds} s each"
  ip netns add "$tag-agent"
  ip -n "$tag-agent" link set lo up
  start_agent "$tag-agent" "$tmp/load-state" "$tmp/load.sock" 10000-39999 "$tmp/load-agent.log"
  run "$load_bench" --socket "$tmp/load.sock" --clients 1,8,32 --seconds "$load_seconds" \
    --netns-path "/run/netns/$tag-agent" --fsync-probe "$tmp/load-state" >"$tmp/agent-load.jsonl"
  stop_pid "$agent_pid"
  ip netns del "$tag-agent"
fi

if section recovery; then
  ip netns add "$tag-recovery"
  ip -n "$tag-recovery" link set lo up
  range=10000-$((10000 + leases - 1 > 60999 ? 10000 + leases - 1 : 60999))
  startup() {  # state-dir: one JSON object
    run env "${agent_env[@]}" "$startup_bench" --agent "$agent_bin" --state-dir "$1" --socket "$tmp/startup.sock" \
      --netns "/run/netns/$tag-recovery" --port-range "$range" --runs "$startup_runs" \
      --log "$1.log"
  }
  log "recovery: empty state dir"
  startup "$tmp/rec-empty" >"$tmp/recovery-empty.json"
  for layout in snapshot journal; do
    log "recovery: $leases leases ($layout)"
    run "$leasegen" --state-dir "$tmp/rec-$layout" --leases "$leases" --layout "$layout" \
      --first-port 10000 --netns-path "/run/netns/$tag-recovery" 2>"$tmp/leasegen-$layout.log"
    startup "$tmp/rec-$layout" >"$tmp/recovery-$layout.json"
    # The state dir as the agent left it: after its own start it may have compacted.
    du -sk "$tmp/rec-$layout" | cut -f1 >"$tmp/recovery-$layout.kib"
  done
  ip netns del "$tag-recovery"
fi

# ---------------------------------------------------------------------------------------------
# Results.
load_end=$(cut -d' ' -f1-3 /proc/loadavg)
mkdir -p "$out_dir"
json_file="$out_dir/benchmarks.json"
md_file="$out_dir/benchmarks.md"
png_file="$out_dir/benchmarks-add-latency.png"

slurp() { if [[ -s $1 ]]; then jq -s . "$1"; else echo '[]'; fi; }
object() { if [[ -s $1 ]]; then cat "$1"; else echo null; fi; }
number_or_null() { if [[ -s $1 ]]; then cat "$1"; else echo null; fi; }

if ((replot)); then
  [[ -s $json_file ]] || die "--replot: no $json_file to redraw from"
  log "replot: from $json_file"
else
  portmap_version=$(dpkg-query -W -f='${Version}' containernetworking-plugins 2>/dev/null || echo unknown)
  jq -n \
    --arg date "$started_at" \
    --arg mode "$( ((quick)) && echo quick || echo full)" \
    --arg kernel "$(uname -r)" \
    --arg cpu "$(awk -F': ' '/model name/ {print $2; exit}' /proc/cpuinfo)" \
    --argjson cores "$(nproc)" \
    --arg memory "$(awk '/MemTotal/ {printf "%.1f GiB", $2 / 1048576}' /proc/meminfo)" \
    --arg loadStart "$load_start" --arg loadEnd "$load_end" \
    --argjson seconds "$((SECONDS - run_started))" \
    --arg commit "$(git -C "$repo" rev-parse --short HEAD 2>/dev/null || echo unknown)" \
    --arg dirty "$(git -C "$repo" status --porcelain 2>/dev/null | grep -q . && echo yes || echo no)" \
    --arg pluginsVersion "$portmap_version" \
    --arg iptables "$(iptables -V)" --arg nft "$(nft -v)" \
    --arg sizes "$sizes" --argjson samples "$samples" --argjson portmapSamples "$portmap_samples" \
    --argjson bulk "$bulk" \
    --argjson tcpSeconds "$tcp_seconds" --argjson tcpRounds "$tcp_rounds" \
    --argjson leases "$leases" \
    --argjson hostport "$(slurp "$tmp/cni-hostport.jsonl")" \
    --argjson portmap "$(slurp "$tmp/cni-portmap.jsonl")" \
    --argjson agentPlugin "$(slurp "$tmp/cni-hostport-agent.jsonl")" \
    --argjson load "$(slurp "$tmp/agent-load.jsonl")" \
    --argjson floor "$(slurp "$tmp/exec-floor.jsonl")" \
    --argjson recEmpty "$(object "$tmp/recovery-empty.json")" \
    --argjson recSnapshot "$(object "$tmp/recovery-snapshot.json")" \
    --argjson recJournal "$(object "$tmp/recovery-journal.json")" \
    --argjson kibSnapshot "$(number_or_null "$tmp/recovery-snapshot.kib")" \
    --argjson kibJournal "$(number_or_null "$tmp/recovery-journal.kib")" \
    '
    def rows($x): [$x[] | select(.done != true) | del(.addSamplesMs, .delSamplesMs)];
    def fin($x): ([$x[] | select(.done == true)] | first);
    {
      date: $date, mode: $mode, seconds: $seconds,
      machine: {cores: $cores, cpu: $cpu, memory: $memory, kernel: $kernel,
                loadAverageStart: $loadStart, loadAverageEnd: $loadEnd},
      versions: {hostport: ($commit + (if $dirty == "yes" then " (uncommitted changes)" else "" end)),
                 containernetworkingPlugins: $pluginsVersion, iptables: $iptables, nft: $nft},
      method: {
        sizes: $sizes, samplesPerSize: $samples, portmapSamplesPerSize: $portmapSamples,
        mappingsPerPrepopulationAdd: $bulk,
        cniVersion: "1.0.0",
        prevResult: "one real bridge (host-local) ADD per plugin for the measured pod netns; measured ADD/DEL samples reuse it with a distinct container ID each (ADD then DEL); prepopulated mappings come from the same plugin ADD in bulk, one fabricated pod per ADD with the prevResult IP rewritten to a distinct 10.88.x.y",
        latency: "wall time from fork to reaping of the plugin process, run in the node netns with the CNI_* env and the config on stdin; p99 is nearest-rank over the samples",
        datapath: "hostport-bench-tcp: connect, read 1 byte, close (SO_LINGER 0), 2 client threads, from the node netns to 192.0.2.1:hostPort (output hook DNAT) and, alternating, straight to the pod IP (the pod server has 2 accept threads); rates are medians of the rounds, ratioToDirect the median of the per-round ratios; conntrack flushed before each round",
        tcpSecondsPerRound: $tcpSeconds, tcpRounds: $tcpRounds,
        agent: "hostport-agent in its own netns, state dir on the root filesystem (fdatasync on), hostport-bench-agent-load through AgentClient (one connection per call); a round trip is allocate (1 dynamic TCP port) then release",
        agentEnvironment: "GLIBC_TUNABLES=glibc.malloc.hugetlb=1, as daemonset/Dockerfile sets it",
      recovery: "leases written by hostport-bench-leasegen through hostport_store (snapshot: one compacted snapshot; journal: one grant record each); hostport-agent started in a private netns, ready = first 200 from GET /readyz, polled every 1 ms; RSS read 500 ms after ready"
      },
      execFloorMs: {
        true: ([$floor[] | select(.program == "/bin/true") | .wallMs] | first),
        hostportVersion: ([$floor[] | select(.program | endswith("/hostport")) | .wallMs] | first),
        portmapVersion: ([$floor[] | select(.program | endswith("/portmap")) | .wallMs] | first)
      },
      cni: {hostport: rows($hostport), portmap: rows($portmap), hostportAgent: rows($agentPlugin),
            portmapStoppedAt: (fin($portmap).stoppedAt // null),
            portmapStopReason: (fin($portmap).reason // "")},
      agentLoad: [$load[] | select(.clients != null)],
      stateDirFdatasyncMs: ([$load[] | select(.fdatasyncMs != null) | .fdatasyncMs] | first),
      recovery: {leases: $leases, empty: $recEmpty, snapshot: $recSnapshot, journal: $recJournal,
                 stateDirKiB: {snapshot: $kibSnapshot, journal: $kibJournal}}
    }
    | .targets = (
        . as $r
        | {
          hostportAddP50Max: ([$r.cni.hostport[].add.p50] | max),
          hostportAddP50AtoMost3ms: (([$r.cni.hostport[].add.p50] | max) as $m | if $m == null then null else $m <= 3 end),
          datapathRatioLargestNToN0: (
            ($r.cni.hostport | map(select(.datapath != null))) as $d
            | if ($d | length) < 2 then null else
                (($d | last).datapath.ratioToDirect) / (($d | first).datapath.ratioToDirect) end),
          agent32ClientsPerSecond: ([$r.agentLoad[] | select(.clients == 32) | .allocationsPerSecond] | first),
          recovery50kMs: ($r.recovery.snapshot.recoveredMsMedian // null),
          rss50kMiB: (if $r.recovery.snapshot == null then null else ($r.recovery.snapshot.vmRssKiBMedian / 1024) end)
        })
    ' >"$json_file.tmp"
  mv "$json_file.tmp" "$json_file"
  log "wrote $json_file"
fi

# The plot: ADD latency (p50 and p99) against N, both plugins, log scale.
plot_note="(not drawn: gnuplot is missing; apt-get install gnuplot-nox)"
if [[ $(jq '.cni.hostport | length' "$json_file") == 0 ]]; then
  plot_note="(not drawn: this run skipped the CNI section)"
elif command -v gnuplot >/dev/null; then
  for series in hostport portmap hostportAgent; do
    jq -r --arg s "$series" '.cni[$s][] | "\(.n) \(.add.p50) \(.add.p99)"' "$json_file" \
      >"$tmp/plot-$series.dat"
  done
  floor=$(jq -r '.execFloorMs.true.p50 // empty' "$json_file")
  floor_lines=""
  if [[ -n $floor ]]; then
    floor_lines="set arrow from graph 0, first $floor to graph 1, first $floor nohead dt 2 lw 1 lc rgb \"#999999\"
set label \"a bare process start (/bin/true) p50\" at graph 0.98, first $floor * 0.85 right tc rgb \"#999999\""
  fi
  machine=$(jq -r '"\(.machine.cores) cores, kernel \(.machine.kernel), load \(.machine.loadAverageStart), \(.date[0:10])"' "$json_file")
  gnuplot <<EOF || die "gnuplot failed"
set terminal pngcairo size 900,560 font "sans,11"
set output "$png_file"
set title "CNI ADD latency vs mappings already installed\n{/*0.8 $machine}"
set xlabel "mappings already installed (N)"
set ylabel "ADD latency, ms (log scale)"
set logscale y
set grid ytics mytics xtics
set key right center box opaque
set yrange [1:*]
set arrow from graph 0, first 3 to graph 1, first 3 nohead dt 3 lw 1.5 lc rgb "#555555"
set label "goal: hostport ADD p50 <= 3 ms" at graph 0.98, first 3.5 right tc rgb "#555555"
$floor_lines
set style line 1 lc rgb "#1b7837" lw 2.5 pt 7 ps 1.2
set style line 2 lc rgb "#1b7837" lw 1.2 dt 2 pt 6 ps 1.0
set style line 3 lc rgb "#c51b7d" lw 2.5 pt 5 ps 1.2
set style line 4 lc rgb "#c51b7d" lw 1.2 dt 2 pt 4 ps 1.0
set style line 5 lc rgb "#2166ac" lw 2.0 pt 9 ps 1.2
plot "$tmp/plot-portmap.dat" using 1:2 with linespoints ls 3 title "portmap (Debian 1.1.1) p50", \
     "$tmp/plot-portmap.dat" using 1:3 with linespoints ls 4 title "portmap p99", \
     "$tmp/plot-hostport.dat" using 1:2 with linespoints ls 1 title "hostport standalone p50", \
     "$tmp/plot-hostport.dat" using 1:3 with linespoints ls 2 title "hostport standalone p99", \
     "$tmp/plot-hostportAgent.dat" using 1:2 with linespoints ls 5 title "hostport + agent (dynamic port) p50"
EOF
  plot_note="![ADD latency vs N]($(basename "$png_file"))"
  log "wrote $png_file"
fi

# The Markdown: tables from the JSON, between two markers; what the file holds outside them
# (the findings, written by hand) is kept.
begin_marker='<!-- bench.sh: generated from benchmarks.json, rewritten by every run up to the end marker -->'
end_marker='<!-- bench.sh: end of the generated part -->'
{
  jq -r '
    def f($x): if $x == null then "–" elif ($x | type) == "number" then
      (if $x >= 100 then ($x | round | tostring)
       else (($x * 10 | round) / 10 | tostring | if test("[.]") then . else . + ".0" end) end)
      else ($x | tostring) end;
    def k($x): if $x == null then "–" else (($x / 100 | round) / 10 | tostring) + "k" end;
    "# Benchmarks: hostport vs Debian portmap\n",
    "Generated by `scripts/bench.sh\(if .mode == "quick" then " --quick" else "" end)` on \(.date) (\(.mode) run, \(.seconds) s). Machine: \(.machine.cores) cores (\(.machine.cpu)), \(.machine.memory), kernel \(.machine.kernel); load average \(.machine.loadAverageStart) at the start, \(.machine.loadAverageEnd) at the end (other builds ran at the same time: absolute figures are noisy, ratios measured side by side much less so). hostport \(.versions.hostport); portmap from containernetworking-plugins \(.versions.containernetworkingPlugins); \(.versions.iptables); \(.versions.nft). Raw figures: `benchmarks.json`.\n",
    "## CNI ADD / DEL latency (ms) with N mappings installed\n",
    "Each plugin runs as a runtime runs it: a process with the CNI_* env and the config on stdin (cniVersion 1.0.0), in a private node netns, chained after a real prevResult: Debian'"'"'s bridge + host-local ran once per plugin for the measured pod netns, and every sample reuses that prevResult with a distinct container ID (ADD, then DEL of the same attachment). \(.method.samplesPerSize) ADD+DEL pairs per size for hostport, \(.method.portmapSamplesPerSize) for portmap; p99 is nearest-rank. The N mappings were installed first by the same plugin'"'"'s ADD, \(.method.mappingsPerPrepopulationAdd) mappings per ADD, each ADD a fabricated pod (that prevResult with a distinct IP of the bridge subnet). hostport rows are standalone (`\"agentSocket\": \"\"`, a static hostPort, like portmap); the agent row asks hostport-agent for a dynamic port by annotation.\n",
    "| plugin | N | ADD p50 | ADD p99 | DEL p50 | DEL p99 | prepopulation |",
    "|---|---:|---:|---:|---:|---:|---|",
    ((["hostport", "hostport"], ["portmap", "portmap"], ["hostportAgent", "hostport + agent"]) as [$key, $title]
      | .cni[$key][]
      | "| \($title) | \(.n) | \(f(.add.p50)) | \(f(.add.p99)) | \(f(.del.p50)) | \(f(.del.p99)) | \(.prepopulate.adds) ADDs, \(f(.prepopulate.seconds)) s |"),
    (if .cni.portmapStoppedAt != null then "\nportmap stopped before N=\(.cni.portmapStoppedAt): \(.cni.portmapStopReason)." else empty end),
    (if .execFloorMs.true != null then "\nThe floor under every call on this machine, through the same harness (p50): a process that only starts and exits (`/bin/true`) \(f(.execFloorMs.true.p50)) ms; CNI VERSION, the plugin'"'"'s start-up and nothing else, hostport \(f(.execFloorMs.hostportVersion.p50)) ms, portmap \(f(.execFloorMs.portmapVersion.p50)) ms." else empty end),
    "",
    "## Datapath: new TCP connections/s, node netns -> nodeIP:hostPort\n",
    "Connect, read 1 byte, close; \(.method.tcpRounds) round(s) of \(.method.tcpSecondsPerRound) s each, 2 client threads, each round through the host port and then straight to the pod IP (no DNAT lookup). Rates are medians over the rounds; `ratio` is the median of the per-round ratios via hostPort / direct (the two halves of a round share the background load), with its range over the rounds.\n",
    "| plugin | N | via hostPort conn/s | direct conn/s | ratio | ratio range | connect+read p99 (ms) |",
    "|---|---:|---:|---:|---:|---|---:|",
    ((["hostport", "hostport"], ["portmap", "portmap"]) as [$key, $title]
      | .cni[$key][] | select(.datapath != null)
      | "| \($title) | \(.n) | \(.datapath.connectionsPerSecond | round) | \(.datapath.directConnectionsPerSecond | round) | \((.datapath.ratioToDirect * 1000 | round) / 1000) | \((.datapath.ratioMin * 100 | round) / 100)–\((.datapath.ratioMax * 100 | round) / 100) | \(f([.datapath.rounds[].hostPort.latencyMs.p99] | max)) |"),
    "",
    "## hostport-agent: durable allocate + release\n",
    "Each round trip is POST /v1/attachments (one dynamic TCP port) then DELETE of the same key, both acknowledged after fdatasync, over the Unix socket through AgentClient (one connection per call). The state dir'"'"'s filesystem took p50 \(f(.stateDirFdatasyncMs.p50)) ms, p99 \(f(.stateDirFdatasyncMs.p99)) ms per fdatasync of a small append just before (the floor under one client'"'"'s round trip: two of them).\n",
    "| clients | round trips/s | allocate p50 | allocate p99 | release p99 | round trip p50 | round trip p99 | failures |",
    "|---:|---:|---:|---:|---:|---:|---:|---:|",
    (.agentLoad[] | "| \(.clients) | \(.roundTripsPerSecond | round) | \(f(.allocate.p50)) | \(f(.allocate.p99)) | \(f(.release.p99)) | \(f(.roundTrip.p50)) | \(f(.roundTrip.p99)) | \(.failures) |"),
    "",
    "## hostport-agent: start-up and memory\n",
    "\(.recovery.leases) leases of one port each, written through hostport_store; medians of the runs. The agent runs with `\(.method.agentEnvironment // "its default environment")`. `ready` is exec to the first 200 from GET /readyz; `recovered` is the agent'"'"'s own log line.\n",
    "| state dir | leases | exec -> /readyz (ms) | \"recovered in\" (ms) | VmRSS (MiB) | VmHWM (MiB) |",
    "|---|---:|---:|---:|---:|---:|",
    ((["empty", "empty"], ["snapshot", "compacted snapshot"], ["journal", "journal only"]) as [$key, $title]
      | .recovery[$key] | select(. != null)
      | "| \($title) | \(.runs[0].recoveredLeases) | \(f(.readyMsMedian)) | \(f(.recoveredMsMedian)) | \(f(.vmRssKiBMedian / 1024)) | \(f(([.runs[].vmHwmKiB] | sort | .[length / 2 | floor]) / 1024)) |"),
    "",
    "## Against the targets\n",
    "| target | goal | measured |",
    "|---|---|---|",
    "| hostport ADD p50, every N | ≤ 3 ms | \(f(.targets.hostportAddP50Max)) ms (largest p50; a bare process start here: \(f(.execFloorMs.true.p50)) ms) |",
    "| hostport datapath at the largest N vs N=0 (change of the hostPort/direct ratio) | within 5% | \(if .targets.datapathRatioLargestNToN0 == null then "–" else (((.targets.datapathRatioLargestNToN0 - 1) * 1000 | round) / 10 | if . > 0 then "+" + tostring else tostring end) + "%" end) |",
    "| agent, 32 clients | ≥ 5000 allocations/s | \(f(.targets.agent32ClientsPerSecond)) /s |",
    "| recovery of \(.recovery.leases) leases | < 300 ms | \(f(.targets.recovery50kMs)) ms |",
    "| agent RSS with \(.recovery.leases) leases | < 20 MiB | \(f(.targets.rss50kMiB)) MiB |"
  ' "$json_file"
  echo
  echo "## Plot"
  echo
  echo "$plot_note"
} >"$tmp/generated.md"
if [[ -f $md_file ]] && grep -qxF "$begin_marker" "$md_file" && grep -qxF "$end_marker" "$md_file"; then
  awk -v b="$begin_marker" -v e="$end_marker" -v g="$tmp/generated.md" '
    $0 == b { print; while ((getline line < g) > 0) print line; skip = 1; next }
    $0 == e { skip = 0 }
    !skip { print }' "$md_file" >"$md_file.tmp"
else
  {
    echo "$begin_marker"
    cat "$tmp/generated.md"
    echo "$end_marker"
    echo
    echo "## Findings"
    echo
    echo "(Written by hand: scripts/bench.sh rewrites only the part between the markers above.)"
  } >"$md_file.tmp"
fi
mv "$md_file.tmp" "$md_file"
log "wrote $md_file ($((SECONDS - run_started)) s)"
