#!/usr/bin/env bash
# hostport demo: a node agent and three pods with host ports, on this machine, in a few seconds.
#
# What it does, as root on Debian 12:
#   1. installs the dependencies (scripts/setup.sh) and builds hostport, hostport-agent and
#      hostportctl into build/ (HOSTPORT_BUILD_DIR overrides it);
#   2. makes a "node" network namespace (a veth gives it the node IP 192.0.2.1) and an
#      "outside" namespace (192.0.2.100) to play a client on the network;
#   3. starts a FAKE Kubernetes API server (the tests' fake-kube-apiserver: it stores objects and
#      streams watches, nothing more) and hostport-agent inside the node namespace, with a
#      temporary state dir and socket, a pool of ten ports (30000-30009), and the fake's
#      kubeconfig, as the node "demo-node";
#   4. starts a "host process" on the node's port 30000, then creates three "pods" (network
#      namespaces) through the CNI chain a runtime would run: Debian's bridge plugin, then
#      hostport, asking the agent for ports:
#        pod-a  a static hostPort 8080 -> 80 (runtimeConfig.portMappings)
#        pod-b  annotation hostport.io/ports: "web=80"
#        pod-c  annotation hostport.io/ports: "web=80, dns=53/udp"
#      and runs busybox httpd on port 80 in each;
#   5. shows the leases (hostportctl list, pools) and the nftables map;
#   6. shows a fourth pod's ADD refused: it claims 8080 too (CNI error 101);
#   7. fetches each pod's page through its host port from the node (node IP and 127.0.0.1)
#      and from the outside namespace;
#   8. deletes the pods (hostport DEL, then bridge DEL) and shows that the leases are gone;
#   9. creates a hostNetwork pod in the fake API server (hostport.io/ports: "web/tcp"): the agent
#      sees it through its watch and leases a port; the pod's process, in the node namespace and
#      in a cgroup named as the kubelet names the pod's (made below a parent of the demo's own),
#      reads its port from the pod socket and serves on it, reached from outside; a node process
#      is refused; the pod finishes and its port is released;
#  10. mounts a pod's hostport.io CSI volume as the kubelet does (the tests' fake-kubelet-csi sends
#      the kubelet's calls to the agent's CSI driver) before its sandbox exists, then runs its ADD:
#      the volume's ports.env holds the pod's port once ADD is answered, and the pod's process
#      reads it at its first start and serves on that port, reached from outside; the volume's
#      own pod.sock answers this pod alone; the pod is deleted and its volume unpublished;
#  11. starts hostport-admission, the admission webhook, on the node with a certificate made
#      here (as cert-manager would give it) and the agent's pool, and sends it two
#      AdmissionReviews over HTTPS as the API server would: a pod with a malformed
#      hostport.io/ports is refused in the plugin's own words, another is completed with the
#      JSON Patch that asks the scheduler for the pool's ports.
# Everything lives in namespaces and a temp dir that the script removes on exit, on an error
# and on Ctrl-C: the host's own network, nftables and sysctls are not touched. Names derive
# from the script's PID, so a second run (even a concurrent one) does not collide.
#
# Usage: sudo scripts/demo.sh [--no-build]
#   --no-build    skip setup.sh and the build; use the binaries already in the build dir
#   -h, --help    print this help
# Environment:
#   HOSTPORT_BUILD_DIR=DIR   build tree to use (default: build/ in the repository)
#   HOSTPORT_JOBS=N          parallel build jobs (default: nproc)
# Exit codes: 0 every request answered by the right pod, 1 something failed.
set -euo pipefail

readonly PROG="demo.sh"
REPO_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
readonly REPO_ROOT
readonly BUILD_DIR="${HOSTPORT_BUILD_DIR:-${REPO_ROOT}/build}"
readonly JOBS="${HOSTPORT_JOBS:-$(nproc)}"
readonly CNI_VERSION="1.0.0"  # Debian's bridge plugin (1.1.1) speaks up to 1.0.0
readonly POD_NAMESPACE="demo"
readonly POOL_RANGE="30000-30009"
readonly NODE_IP="192.0.2.1"
readonly OUTSIDE_IP="192.0.2.100"
readonly POD_SUBNET="10.88.0.0/24"
readonly NET_NAME="hostport-demo"
readonly BRIDGE="hpdemo0"  # lives in the node namespace, so a fixed name cannot collide
readonly NODE_NAME="demo-node"
# shellcheck source=scripts/lib/cni.sh
source "${REPO_ROOT}/scripts/lib/cni.sh"

# Names: unique per run. Pods are created in this order and deleted in reverse.
readonly NODE_NS="hpdemo-node-$$"
readonly OUTSIDE_NS="hpdemo-outside-$$"
readonly PODS=(pod-a pod-b pod-c)

# Filled in as the demo goes; cleanup copes with any of them unset.
WORK=""
AGENT_PID=""
ADMISSION_PID=""
FAKE_API_PID=""
RELAY_PID=""    # the hostNetwork pod's process
CGROUP_TOP=""   # the demo's own cgroup parent of the hostNetwork pod's cgroup
HOST_PID=""  # a process "on the node" that holds the pool's first port
SOCKET=""
CONFLIST=""  # bridge -> hostport, as a runtime would read it from /etc/cni/net.d
declare -A POD_NS=() POD_CID=() POD_UID=() POD_IP=() BRIDGE_RESULT=() POD_RESULT=() HTTPD_PID=()
declare -A HOST_PORT=()
NAMESPACES=()  # every netns we created, in creation order
FAILURES=0
CLEANED=0
DO_BUILD=1
PLUGIN=""
AGENT_BIN=""
CTL_BIN=""
FAKE_API_BIN=""
FAKE_KUBELET_BIN=""

# --- output ------------------------------------------------------------------------------

if [[ -t 1 ]]; then
  BOLD=$'\e[1m' DIM=$'\e[2m' GREEN=$'\e[32m' RED=$'\e[31m' RESET=$'\e[0m'
else
  BOLD="" DIM="" GREEN="" RED="" RESET=""
fi
STEP=0
readonly STEPS=14

section() {
  STEP=$((STEP + 1))
  printf '\n%s== [%d/%d] %s ==%s\n' "$BOLD" "$STEP" "$STEPS" "$*" "$RESET"
}
say() { printf '%s\n' "$*"; }
why() { printf '%s%s%s\n' "$DIM" "$*" "$RESET"; }
ok() { printf '  %sok%s    %s\n' "$GREEN" "$RESET" "$*"; }
bad() {
  printf '  %sFAIL%s  %s\n' "$RED" "$RESET" "$*"
  FAILURES=$((FAILURES + 1))
}
die() {
  printf '%s%s: error: %s%s\n' "$RED" "$PROG" "$*" "$RESET" >&2
  exit 1
}
indent() { sed 's/^/    /'; }
# Prints a command before running it, so the reader can repeat it; its output is indented.
show() {
  printf '  %s$ %s%s\n' "$DIM" "$*" "$RESET"
  "$@" 2>&1 | indent
  return "${PIPESTATUS[0]}"
}

# poll TRIES [--while PID] COMMAND...: runs COMMAND every 0.1 s until it succeeds (0), or until
# TRIES tries have failed or process PID (one we started) has exited (1).
poll() {
  local tries="$1" pid="" try
  shift
  if [[ "$1" == "--while" ]]; then
    pid="$2"
    shift 2
  fi
  for ((try = 0; try < tries; try++)); do
    "$@" && return 0
    [[ -z "$pid" ]] || kill -0 "$pid" 2>/dev/null || return 1
    sleep 0.1
  done
  return 1
}

exited() { ! kill -0 "$1" 2>/dev/null; }

usage() {
  sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed -e '$d' -e 's/^# \{0,1\}//'
}

# --- cleanup -----------------------------------------------------------------------------

# Stops one process we started: SIGTERM, then SIGKILL after ~5 s.
stop_pid() {
  local pid="$1"
  [[ -n "$pid" ]] || return 0
  kill -0 "$pid" 2>/dev/null || return 0
  kill -TERM "$pid" 2>/dev/null || return 0
  poll 50 exited "$pid" || true
  if kill -0 "$pid" 2>/dev/null; then
    kill -KILL "$pid" 2>/dev/null || true
  fi
  wait "$pid" 2>/dev/null || true
}

cleanup() {
  local rc=$?
  ((CLEANED == 0)) || return 0
  CLEANED=1
  trap - EXIT INT TERM
  set +e
  printf '\n%s== cleanup ==%s\n' "$BOLD" "$RESET"
  local pod ns i
  for pod in "${!HTTPD_PID[@]}"; do
    if [[ -n "${HTTPD_PID[$pod]:-}" ]]; then
      stop_pid "${HTTPD_PID[$pod]}"
    fi
  done
  stop_pid "$HOST_PID"
  stop_pid "$RELAY_PID"
  if [[ -n "$CGROUP_TOP" && -d "$CGROUP_TOP" ]]; then
    # Deepest first; empty once the relay is gone.
    find "$CGROUP_TOP" -depth -type d -exec rmdir {} + 2>/dev/null
    [[ -d "$CGROUP_TOP" ]] || say "  removed cgroup $CGROUP_TOP"
  fi
  if [[ -n "$AGENT_PID" ]]; then
    stop_pid "$AGENT_PID"
    say "  stopped hostport-agent (pid $AGENT_PID)"
  fi
  if [[ -n "$ADMISSION_PID" ]]; then
    stop_pid "$ADMISSION_PID"
    say "  stopped hostport-admission (pid $ADMISSION_PID)"
  fi
  if [[ -n "$FAKE_API_PID" ]]; then
    stop_pid "$FAKE_API_PID"
    say "  stopped the fake API server (pid $FAKE_API_PID)"
  fi
  # Deleting the namespaces takes everything in them along: the pods' veths, the bridge, the
  # node's nft table and sysctls. Deepest first: pods, then the outside and the node.
  for ((i = ${#NAMESPACES[@]} - 1; i >= 0; i--)); do
    ns="${NAMESPACES[$i]}"
    if [[ -e "/run/netns/$ns" ]]; then
      ip netns del "$ns" && say "  deleted netns $ns"
    fi
  done
  if [[ -n "$WORK" && -d "$WORK" ]]; then
    rm -rf "$WORK" && say "  removed $WORK"
  fi
  if ((rc == 0 && FAILURES > 0)); then
    rc=1
  fi
  if ((rc == 0)); then
    printf '\n%sdemo passed%s: every pod answered through its host port.\n' "$GREEN" "$RESET"
  elif ((rc == 130 || rc == 143)); then
    printf '\n%sdemo interrupted%s; everything it created is gone.\n' "$RED" "$RESET"
  else
    printf '\n%sdemo FAILED%s (exit %d); everything it created is gone.\n' "$RED" "$RESET" "$rc"
  fi
  exit "$rc"
}

on_signal() {
  printf '\n%s: interrupted by SIG%s\n' "$PROG" "$1" >&2
  [[ "$1" == "INT" ]] && exit 130
  exit 143
}

# --- steps -------------------------------------------------------------------------------

build() {
  section "setup and build"
  why "Installs the Debian packages (quick when present), then builds the plugin, the agent"
  why "and its CLI with CMake and Ninja."
  if ((DO_BUILD)); then
    "$REPO_ROOT/scripts/setup.sh"
    show cmake -G Ninja -S "$REPO_ROOT" -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE=RelWithDebInfo ||
      die "cmake configure failed"
    show cmake --build "$BUILD_DIR" -j"$JOBS" --target hostport hostport-agent hostportctl \
      hostport-admission fake-kube-apiserver fake-kubelet-csi || die "build failed"
  else
    say "  --no-build: using the binaries in $BUILD_DIR"
  fi
  PLUGIN="$BUILD_DIR/cni-plugin/hostport"
  AGENT_BIN="$BUILD_DIR/agent/hostport-agent"
  CTL_BIN="$BUILD_DIR/agent/hostportctl"
  ADMISSION_BIN="$BUILD_DIR/admission/hostport-admission"
  FAKE_API_BIN="$BUILD_DIR/tests/fakes/fake-kube-apiserver"
  FAKE_KUBELET_BIN="$BUILD_DIR/tests/fakes/fake-kubelet-csi"
  local bin
  for bin in "$PLUGIN" "$AGENT_BIN" "$CTL_BIN" "$ADMISSION_BIN" "$FAKE_API_BIN" "$FAKE_KUBELET_BIN"; do
    [[ -x "$bin" ]] || die "missing $bin (run without --no-build)"
  done
  local tool
  for tool in ip nft curl jq openssl base64; do
    command -v "$tool" >/dev/null || die "missing tool '$tool' (run scripts/setup.sh)"
  done
  [[ -x /bin/busybox ]] || die "missing /bin/busybox (install busybox-static)"
  [[ -x /usr/lib/cni/bridge && -x /usr/lib/cni/host-local ]] ||
    die "missing /usr/lib/cni/{bridge,host-local} (install containernetworking-plugins)"
  # The CNI plugin dir a runtime would use: ours next to Debian's.
  mkdir -p "$WORK/cni-bin"
  cp "$PLUGIN" "$WORK/cni-bin/hostport"
  ok "built: $PLUGIN, $AGENT_BIN, $CTL_BIN, $ADMISSION_BIN"
}

new_netns() {
  ip netns add "$1"
  NAMESPACES+=("$1")
  ip -n "$1" link set lo up
}

make_node() {
  section "a node and the network around it"
  why "A network namespace plays the node, so the demo changes nothing on this machine."
  why "A veth pair links it to an 'outside' namespace, a client on the node's network."
  new_netns "$NODE_NS"
  new_netns "$OUTSIDE_NS"
  ip -n "$NODE_NS" link add hpd0 type veth peer name hpd1 netns "$OUTSIDE_NS"
  ip -n "$NODE_NS" addr add "$NODE_IP/24" dev hpd0
  ip -n "$NODE_NS" link set hpd0 up
  ip -n "$OUTSIDE_NS" addr add "$OUTSIDE_IP/24" dev hpd1
  ip -n "$OUTSIDE_NS" link set hpd1 up
  ok "node netns     $NODE_NS  (node IP $NODE_IP on hpd0)"
  ok "outside netns  $OUTSIDE_NS  (client IP $OUTSIDE_IP on hpd1)"
}

# The tests' FAKE Kubernetes API server, in the node netns: the agent's cluster for this demo.
start_fake_api() {
  section "a FAKE Kubernetes API server"
  why "There is no cluster here, so the agent's cluster is the tests' fake API server: it stores"
  why "the objects it is sent and streams watches over HTTPS as a real one does, and nothing"
  why "more (no scheduler, no kubelet). The agent publishes ports to it and watches its pods."
  mkdir -p "$WORK/api"
  ip netns exec "$NODE_NS" "$FAKE_API_BIN" --dir "$WORK/api" --node "$NODE_NAME" \
    >"$WORK/api.log" 2>&1 &
  FAKE_API_PID=$!
  poll 100 --while "$FAKE_API_PID" test -e "$WORK/api/ready" || {
    indent <"$WORK/api.log" >&2
    die "the fake API server did not start"
  }
  ok "fake API server pid $FAKE_API_PID at $(cat "$WORK/api/url") with Node $NODE_NAME"
}

# api METHOD PATH [BODY [CONTENT_TYPE]]: one request to the fake API server, as kubectl would send
# it (its CA, its token), from the node netns.
api() {
  local args=(-sS --max-time 5 --cacert "$WORK/api/ca.crt"
    -H "Authorization: Bearer $(cat "$WORK/api/token")" -X "$1")
  if (($# > 2)); then
    args+=(-H "Content-Type: ${4:-application/json}" --data-binary "$3")
  fi
  ip netns exec "$NODE_NS" curl "${args[@]}" "$(cat "$WORK/api/url")$2"
}

start_agent() {
  section "hostport-agent on the node"
  why "The agent owns the node's port pool. It checks each port against the node's live"
  why "sockets and its durable leases before handing it out, and serves the plugin and"
  why "hostportctl on a Unix socket. Here: state and socket in a temp dir, pool $POOL_RANGE."
  SOCKET="$WORK/agent.sock"
  mkdir -p "$WORK/state"
  printf '  %s$ ip netns exec %s %s --state-dir %s --socket %s --pod-socket %s --release-spool %s --port-range %s --chain-cni false --kubeconfig %s --node-name %s --csi-driver true --kubelet-dir %s%s\n' \
    "$DIM" "$NODE_NS" "$AGENT_BIN" "$WORK/state" "$SOCKET" "$WORK/pod/pod.sock" "$WORK/released" "$POOL_RANGE" "$WORK/api/kubeconfig" "$NODE_NAME" "$WORK/kubelet" "$RESET"
  # In the node netns, the agent's reserved-ports sysctl and socket checks are the node's. The
  # demo writes its own conflist: the agent must not edit this machine's /etc/cni/net.d.
  ip netns exec "$NODE_NS" "$AGENT_BIN" --state-dir "$WORK/state" --socket "$SOCKET" \
    --pod-socket "$WORK/pod/pod.sock" --release-spool "$WORK/released" --port-range "$POOL_RANGE" --log-level info \
    --chain-cni false --kubeconfig "$WORK/api/kubeconfig" --node-name "$NODE_NAME" \
    --csi-driver true --kubelet-dir "$WORK/kubelet" >"$WORK/agent.log" 2>&1 &
  AGENT_PID=$!
  if ! poll 100 --while "$AGENT_PID" agent_answers; then
    indent <"$WORK/agent.log" >&2
    exited "$AGENT_PID" && die "hostport-agent exited at start (log above)"
    die "hostport-agent did not answer on $SOCKET within 10 s"
  fi
  ok "hostport-agent pid $AGENT_PID answers on $SOCKET"
  say "  its log so far:"
  indent <"$WORK/agent.log"
  say "  the node's ip_local_reserved_ports (ephemeral connections stay out of the pool):"
  printf '    %s\n' "$(ip netns exec "$NODE_NS" cat /proc/sys/net/ipv4/ip_local_reserved_ports)"
}

# hostportctl on our socket; `show` prints the whole command so it can be repeated.
ctl() { "$CTL_BIN" --socket "$SOCKET" "$@"; }

agent_answers() { [[ -S "$SOCKET" ]] && ctl pools >/dev/null 2>&1; }

# cni VERB POD PLUGIN_PATH STDIN: runs one plugin the way a runtime does (env + stdin, in the
# node netns) and prints its stdout; its stderr goes to the pod's log.
cni() {
  local verb="$1" pod="$2" plugin="$3" config="$4"
  printf '%s' "$config" | ip netns exec "$NODE_NS" env -i \
    PATH=/usr/sbin:/usr/bin:/sbin:/bin \
    CNI_COMMAND="$verb" \
    CNI_CONTAINERID="${POD_CID[$pod]}" \
    CNI_NETNS="/run/netns/${POD_NS[$pod]}" \
    CNI_IFNAME=eth0 \
    CNI_PATH="$WORK/cni-bin:/usr/lib/cni" \
    CNI_ARGS="IgnoreUnknown=1;K8S_POD_NAMESPACE=$POD_NAMESPACE;K8S_POD_NAME=$pod;K8S_POD_INFRA_CONTAINER_ID=${POD_CID[$pod]};K8S_POD_UID=${POD_UID[$pod]}" \
    "$plugin" 2>>"$WORK/$pod.cni.log"
}

# The network: Debian's bridge, then hostport asking the agent on our socket, with the
# capabilities through which the runtime passes portMappings and pod annotations.
write_conflist() {
  CONFLIST="$WORK/$NET_NAME.conflist"
  cni_bridge_conflist "$CNI_VERSION" "$NET_NAME" "$BRIDGE" "$POD_SUBNET" "" "$WORK/ipam" \
    "$(jq -n --arg socket "$SOCKET" --arg work "$WORK" '{type: "hostport", agentSocket: $socket,
        stateDir: ($work + "/cni-state"), releaseSpool: ($work + "/released"),
        capabilities: {portMappings: true, "io.kubernetes.cri.pod-annotations": true}}')" \
    >"$CONFLIST"
}

# The bridge's stdin (plugin 0 of the conflist), with PREV_RESULT when given (at DEL).
bridge_config() {
  cni_plugin_config "$CONFLIST" 0 "${1:-}"
}

# What the runtime passes in runtimeConfig for each pod: the arguments of the capabilities
# hostport's conflist entry declares.
runtime_config() {
  case "$1" in
    pod-a) printf '%s' '{"portMappings": [{"hostPort": 8080, "containerPort": 80, "protocol": "tcp"}]}' ;;
    pod-b) printf '%s' '{"io.kubernetes.cri.pod-annotations": {"hostport.io/ports": "web=80"}}' ;;
    pod-c) printf '%s' '{"io.kubernetes.cri.pod-annotations": {"hostport.io/ports": "web=80, dns=53/udp"}}' ;;
    pod-d) printf '%s' '{"portMappings": [{"hostPort": 8080, "containerPort": 8000, "protocol": "tcp"}]}' ;;
    pod-v) printf '%s' '{"io.kubernetes.cri.pod-annotations": {"hostport.io/ports": "web=80"}}' ;;
  esac
}

# hostport's stdin (plugin 1 of the conflist); without PREV_RESULT there is no prevResult (a
# DEL after a failed ADD).
hostport_config() {
  cni_plugin_config "$CONFLIST" 1 "${2:-}" "$(runtime_config "$1")"
}

# The pod's IPv4 address from a CNI result ("address": "10.88.0.2/24"); nothing if it has none.
result_ip() {
  jq -r 'first(.ips[]?.address | select(test("^[0-9.]+/")) | sub("/.*"; "")) // empty' \
    <<<"$1" 2>/dev/null || true
}

# The CNI error code in a plugin's answer; nothing if it has none.
result_code() {
  jq -r '.code // empty' <<<"$1" 2>/dev/null || true
}

# The CNI error a plugin printed, for a message.
cni_failure() {
  local pod="$1" what="$2" out="$3"
  say "  $what failed for $pod. Its answer:"
  indent <<<"$out"
  say "  its stderr:"
  indent <"$WORK/$pod.cni.log"
  die "$what failed for $pod"
}

# A pod up to the end of the bridge plugin: its names, its netns and the bridge ADD, whose
# result goes to BRIDGE_RESULT and its address to POD_IP.
add_pod_network() {
  local pod="$1" out
  POD_NS[$pod]="hpdemo-$pod-$$"
  POD_CID[$pod]="${pod}-$$-demo"
  POD_UID[$pod]="$(cat /proc/sys/kernel/random/uuid)"
  : >"$WORK/$pod.cni.log"
  new_netns "${POD_NS[$pod]}"
  out="$(cni ADD "$pod" /usr/lib/cni/bridge "$(bridge_config)")" ||
    cni_failure "$pod" "bridge ADD" "$out"
  BRIDGE_RESULT[$pod]="$out"
  POD_IP[$pod]="$(result_ip "$out")"
  [[ -n "${POD_IP[$pod]}" ]] || die "bridge ADD for $pod gave no IPv4 address: $out"
}

add_pod() {
  local pod="$1"
  add_pod_network "$pod"
  POD_RESULT[$pod]="$(cni ADD "$pod" "$WORK/cni-bin/hostport" \
    "$(hostport_config "$pod" "${BRIDGE_RESULT[$pod]}")")" ||
    cni_failure "$pod" "hostport ADD" "${POD_RESULT[$pod]}"
  ok "$pod  netns ${POD_NS[$pod]}, IP ${POD_IP[$pod]}, runtimeConfig $(runtime_config "$pod")"
}

start_httpd() {
  local pod="$1"
  local dir="$WORK/www-$pod"
  mkdir -p "$dir"
  printf 'hello from %s/%s (pod IP %s)\n' "$POD_NAMESPACE" "$pod" "${POD_IP[$pod]}" \
    >"$dir/index.html"
  ip netns exec "${POD_NS[$pod]}" /bin/busybox httpd -f -p 80 -h "$dir" &
  HTTPD_PID[$pod]=$!
}

# A process on the node that already listens on the pool's first port: the agent must see
# it (sock_diag) and skip that port.
start_host_process() {
  local port="${POOL_RANGE%%-*}"
  mkdir -p "$WORK/www-host"
  printf 'hello from a process on the node\n' >"$WORK/www-host/index.html"
  ip netns exec "$NODE_NS" /bin/busybox httpd -f -p "$port" -h "$WORK/www-host" &
  HOST_PID=$!
  if poll 50 ip netns exec "$NODE_NS" curl -fsS --max-time 1 "http://127.0.0.1:$port/" >/dev/null 2>&1; then
    ok "a host process (busybox httpd, pid $HOST_PID) listens on the node's port $port"
    return 0
  fi
  die "the host process on port $port did not start"
}

create_pods() {
  section "three pods through the CNI chain bridge -> hostport"
  why "First, something on the node takes the pool's lowest port, as a host service might."
  start_host_process
  printf '\n'
  why "Each pod is a netns. As a runtime does, the script runs Debian's bridge plugin (pod IP"
  why "from host-local, hairpin mode on), then hostport with the bridge's result as prevResult."
  why "hostport asks the agent for ports and installs the DNAT as nftables map elements."
  why "  pod-a: a static hostPort 8080 -> 80 (a claim: checked and recorded, never moved)"
  why "  pod-b: annotation hostport.io/ports=\"web=80\" (a port from the pool)"
  why "  pod-c: annotation hostport.io/ports=\"web=80, dns=53/udp\""
  why "The agent skips ${POOL_RANGE%%-*}: it is bound on the node."
  write_conflist
  local pod
  for pod in "${PODS[@]}"; do
    add_pod "$pod"
  done
  for pod in "${PODS[@]}"; do
    start_httpd "$pod"
  done
  ok "busybox httpd on port 80 in each pod (pids ${HTTPD_PID[pod-a]} ${HTTPD_PID[pod-b]} ${HTTPD_PID[pod-c]})"
}

# The host port that forwards to container port 80/tcp, from `hostportctl get --json`: the
# grant object that holds "containerPort": 80 and "protocol": "tcp".
host_port_of() {
  local pod="$1" json
  json="$(ctl get "$POD_NAMESPACE/$pod" --json)" || return 1
  jq -r 'first(.. | objects | select(.containerPort == 80 and .protocol == "tcp")
           | .hostPort | numbers) // empty' <<<"$json"
}

show_leases() {
  section "what the agent granted"
  why "hostportctl talks to the agent's socket. The leases are durable (journal + fsync)"
  why "and keyed by (containerID, ifname), not by pod name."
  show "$CTL_BIN" --socket "$SOCKET" list
  printf '\n'
  show "$CTL_BIN" --socket "$SOCKET" pools
  local pod
  for pod in "${PODS[@]}"; do
    HOST_PORT[$pod]="$(host_port_of "$pod")" || true
    [[ -n "${HOST_PORT[$pod]}" ]] || die "no host port for $pod/80 in 'hostportctl get $POD_NAMESPACE/$pod --json'"
  done
  printf '\n'
  why "The forwards, as elements of one nftables map in the node (O(1) lookup, fixed rules):"
  show ip netns exec "$NODE_NS" nft list map ip hostport ports
}

# fetch LABEL FROM_NS URL POD: one GET from a namespace; the body must name the pod.
fetch() {
  local label="$1" from="$2" url="$3" pod="$4" body="" try
  for try in $(seq 1 20); do
    if body="$(ip netns exec "$from" curl -fsS --max-time 2 "$url" 2>&1)"; then
      break
    fi
    : "$try"
    sleep 0.25  # httpd may still be starting
  done
  if [[ "$body" == *"$POD_NAMESPACE/$pod "* ]]; then
    ok "$(printf 'from %-8s GET %-28s -> %s' "$label" "$url" "$body")"
  else
    bad "$(printf 'from %-8s GET %-28s -> %s' "$label" "$url" "${body:-<no answer>}") (expected $pod)"
  fi
}

refused_pod() {
  section "a conflict the agent refuses"
  why "pod-d claims static hostPort 8080 as well. portmap would install a second DNAT and the"
  why "last one would win; the agent refuses the claim, and the runtime gets CNI error 101."
  local pod=pod-d out code
  add_pod_network "$pod"
  if out="$(cni ADD "$pod" "$WORK/cni-bin/hostport" \
    "$(hostport_config "$pod" "${BRIDGE_RESULT[$pod]}")")"; then
    bad "hostport ADD for $pod claimed 8080 a second time and succeeded"
  else
    code="$(result_code "$out")"
    say "  hostport ADD for $pod answered:"
    indent <<<"$out"
    if [[ "$code" == "101" ]]; then
      ok "refused with CNI error 101 (port conflict): 8080 stays with pod-a"
    else
      bad "expected CNI error 101 (port conflict), got code '${code:-none}'"
    fi
  fi
  # As after any failed ADD, the runtime cleans up with DEL (here without prevResult).
  out="$(cni DEL "$pod" "$WORK/cni-bin/hostport" "$(hostport_config "$pod")")" ||
    cni_failure "$pod" "hostport DEL" "$out"
  out="$(cni DEL "$pod" /usr/lib/cni/bridge "$(bridge_config)")" ||
    cni_failure "$pod" "bridge DEL" "$out"
  ip netns del "${POD_NS[$pod]}"
  ok "$pod cleaned up (hostport DEL, bridge DEL)"
}

traffic() {
  section "traffic through the host ports"
  why "Each pod's page, fetched through the node's host port: from the node itself (its IP,"
  why "and 127.0.0.1 through route_localnet) and from the outside namespace."
  local pod port
  for pod in "${PODS[@]}"; do
    port="${HOST_PORT[$pod]}"
    say "  $pod (host port $port -> ${POD_IP[$pod]}:80):"
    fetch node "$NODE_NS" "http://$NODE_IP:$port/" "$pod"
    fetch node "$NODE_NS" "http://127.0.0.1:$port/" "$pod"
    fetch outside "$OUTSIDE_NS" "http://$NODE_IP:$port/" "$pod"
  done
}

healing() {
  section "the agent heals a flushed table"
  why "The agent is the one writer of table ip hostport and its leases are the truth: when"
  why "someone flushes the map, it notices at once (nftables change events) and lays the"
  why "forwards out again from the leases. Here we flush it by hand."
  show ip netns exec "$NODE_NS" nft flush map ip hostport ports
  local pod port
  for pod in "${PODS[@]}"; do
    port="${HOST_PORT[$pod]}"
    fetch outside "$OUTSIDE_NS" "http://$NODE_IP:$port/" "$pod"
  done
  say "  what the agent logged:"
  grep -E 'table\.changed|table\.restored|table\.reconciled' "$WORK/agent.log" | indent
}

delete_pods() {
  section "deleting the pods"
  why "As a runtime does: the chain in reverse for each pod (hostport DEL, then bridge DEL),"
  why "with the same config as ADD and the final result as prevResult."
  local i pod out prev
  for ((i = ${#PODS[@]} - 1; i >= 0; i--)); do
    pod="${PODS[$i]}"
    [[ -n "${POD_RESULT[$pod]:-}" ]] || continue
    stop_pid "${HTTPD_PID[$pod]}"
    HTTPD_PID[$pod]=""
    prev="${POD_RESULT[$pod]}"
    out="$(cni DEL "$pod" "$WORK/cni-bin/hostport" "$(hostport_config "$pod" "$prev")")" ||
      cni_failure "$pod" "hostport DEL" "$out"
    out="$(cni DEL "$pod" /usr/lib/cni/bridge "$(bridge_config "$prev")")" ||
      cni_failure "$pod" "bridge DEL" "$out"
    POD_RESULT[$pod]=""
    ok "$pod deleted"
  done
  printf '\n'
  show "$CTL_BIN" --socket "$SOCKET" list
  show "$CTL_BIN" --socket "$SOCKET" pools
  local left
  left="$(ctl list --json)"
  if jq -e '.leases == []' <<<"$left" >/dev/null 2>&1; then
    ok "no lease left: every port is back in the pool"
  else
    bad "leases left after DEL: $left"
  fi
  if ip netns exec "$NODE_NS" nft -j list map ip hostport ports 2>/dev/null |
    jq -e 'any(.nftables[]; .map.elem != null)' >/dev/null 2>&1; then
    bad "map ip hostport ports still has elements after DEL"
  else
    ok "no forward left in the node's nftables map"
  fi
}

# The mount point of a cgroup hierarchy a process may join without settings: cgroup v2, else a
# v1 one other than cpuset (whose cpus and mems must be set before a task joins).
cgroup_hierarchy() {
  awk '{ split($0, halves, " - "); split(halves[2], after, " ") }
       after[1] == "cgroup2" { print $5; found = 1; exit }
       after[1] == "cgroup" && after[3] !~ /cpuset/ && v1 == "" { v1 = $5 }
       END { if (!found && v1 != "") print v1 }' /proc/self/mountinfo
}

# The hostNetwork pod of the fake API server, as long as the agent holds its lease: its lease
# in `hostportctl get` (empty until then).
relay_lease() { ctl get "$POD_NAMESPACE/relay" --json 2>/dev/null || true; }
relay_leased() { [[ -n "$(relay_lease)" ]]; }
relay_released() { [[ -z "$(relay_lease)" ]]; }
relay_published() {
  api GET "/api/v1/namespaces/$POD_NAMESPACE/pods/relay" |
    jq -e '.metadata.annotations["hostport.io/allocated-web"]' >/dev/null 2>&1
}

host_network() {
  section "a hostNetwork pod"
  why "A pod on the node's own network gets no CNI ADD, so the agent learns of it from its"
  why "watch of the node's pods and leases its ports by the pod's UID. Its hostport.io/ports"
  why "names a port without a containerPort: its process binds the host port itself."
  local pod uid lease port=""
  pod="$(jq -cn --arg node "$NODE_NAME" '{apiVersion: "v1", kind: "Pod",
    metadata: {name: "relay", namespace: "demo", annotations: {"hostport.io/ports": "web/tcp"}},
    spec: {nodeName: $node, hostNetwork: true, containers: [{name: "relay", image: "busybox"}]},
    status: {phase: "Running"}}')"
  # What `kubectl create -f -` sends, with the fake's CA and token.
  printf '  %s$ curl --cacert %s -H "Authorization: Bearer ..." -X POST %s/api/v1/namespaces/%s/pods -d %s%s\n' \
    "$DIM" "$WORK/api/ca.crt" "$(cat "$WORK/api/url")" "$POD_NAMESPACE" "'$pod'" "$RESET"
  uid="$(api POST "/api/v1/namespaces/$POD_NAMESPACE/pods" "$pod" | jq -r '.metadata.uid // empty')"
  [[ -n "$uid" ]] || die "the fake API server did not create the pod"
  ok "pod $POD_NAMESPACE/relay created, uid $uid"
  poll 100 relay_leased || die "the agent leased nothing for the hostNetwork pod (log: $WORK/agent.log)"
  lease="$(relay_lease)"
  show "$CTL_BIN" --socket "$SOCKET" get "$POD_NAMESPACE/relay"
  why "Published on the pod, as for any pod (the fake API server's copy):"
  poll 50 relay_published || true
  api GET "/api/v1/namespaces/$POD_NAMESPACE/pods/relay" | jq '.metadata.annotations' | indent
  printf '\n'
  why "The pod's process: in the node's network, and in a cgroup named as the kubelet names the"
  why "pod's (systemd driver), made below a parent of the demo's own. The pod socket knows it by"
  why "that cgroup, answers its port, and the process serves on it."
  local hierarchy cgroup www="$WORK/www-relay"
  hierarchy="$(cgroup_hierarchy)"
  [[ -n "$hierarchy" ]] || die "no cgroup hierarchy is mounted"
  CGROUP_TOP="$hierarchy/hostport-demo-$$"
  cgroup="$CGROUP_TOP/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod${uid//-/_}.slice/cri-containerd-relay.scope"
  mkdir -p "$cgroup" || die "cannot make $cgroup"
  say "    cgroup ${cgroup#"$hierarchy"}"
  mkdir -p "$www"
  printf 'hello from %s/relay (hostNetwork: on the node itself)\n' "$POD_NAMESPACE" >"$www/index.html"
  # Into the cgroup first: `ip netns exec` mounts a sysfs of its own, without the cgroup mounts,
  # and the cgroup stays the process's through the exec.
  # shellcheck disable=SC2016 # expanded by the inner shells
  sh -c 'echo $$ > "$1/cgroup.procs" && shift && exec "$@"' relay "$cgroup" \
    ip netns exec "$NODE_NS" sh -c '
      port=$(curl -sf --unix-socket "$1" "http://hostport/v1/self/ports/web?wait=10s") &&
      echo "$port" > "$2" && exec /bin/busybox httpd -f -p "$port" -h "$3"' \
    relay "$WORK/pod/pod.sock" "$WORK/relay.port" "$www" &
  RELAY_PID=$!
  poll 100 --while "$RELAY_PID" test -s "$WORK/relay.port" || true
  port="$(cat "$WORK/relay.port" 2>/dev/null || true)"
  if [[ -n "$port" && "$port" == "$(jq -r '.. | objects | select(.name == "web") | .hostPort' <<<"$lease" | head -1)" ]]; then
    ok "the pod's process read its port from the pod socket: $port, and serves on it"
  else
    bad "the pod's process did not get its port from the pod socket (got '${port}')"
  fi
  if [[ -n "$port" ]]; then
    fetch outside "$OUTSIDE_NS" "http://$NODE_IP:$port/" relay
  fi
  why "A node process in the same network is in no pod's cgroup: refused."
  local refusal
  refusal="$(ip netns exec "$NODE_NS" curl -s --unix-socket "$WORK/pod/pod.sock" http://hostport/v1/self)"
  if [[ "$(jq -r .code <<<"$refusal" 2>/dev/null)" == "node_network" ]]; then
    ok "node process: $(jq -r .message <<<"$refusal")"
  else
    bad "a node process was not refused: $refusal"
  fi
  printf '\n'
  why "The pod finishes (its phase Succeeded, as the kubelet would report it): the port goes back."
  stop_pid "$RELAY_PID"
  RELAY_PID=""
  api PATCH "/api/v1/namespaces/$POD_NAMESPACE/pods/relay/status" '{"status":{"phase":"Succeeded"}}' \
    application/merge-patch+json >/dev/null || bad "the fake API server refused the status patch"
  if poll 100 relay_released; then
    ok "the hostNetwork pod's lease is released: $(grep -o 'alloc.released.*via=pod_gone' "$WORK/agent.log" | head -1)"
  else
    bad "the hostNetwork pod's lease outlived the pod"
  fi
}

# fake-kubelet-csi on the demo's kubelet dir: the kubelet's calls to the agent's CSI driver.
kubelet_csi() { "$FAKE_KUBELET_BIN" --kubelet-dir "$WORK/kubelet" "$@"; }

csi_volume() {
  section "a pod's ports in a file at its first start: the hostport.io CSI volume"
  why "A dynamic port is decided at the sandbox's ADD, after the kubelet read the pod it starts the"
  why "containers from: an env var of the annotation is empty at the first start. What the kubelet"
  why "does before ADD is mount the pod's volumes; the agent serves a CSI driver, hostport.io, whose"
  why "inline volume holds the pod's ports. Here the tests' fake-kubelet-csi sends the kubelet's"
  why "calls (no kubelet runs on this machine)."
  local pod=pod-v target port out www="$WORK/www-pod-v"
  show "$FAKE_KUBELET_BIN" --kubelet-dir "$WORK/kubelet" register ||
    die "the kubelet's registration of the CSI driver failed (log: $WORK/agent.log)"
  add_pod_network "$pod"
  why "The kubelet mounts the pod's volume before it makes the sandbox (no ADD has run):"
  printf '  %s$ %s --kubelet-dir %s publish %s %s%s\n' "$DIM" "$FAKE_KUBELET_BIN" "$WORK/kubelet" \
    "$POD_NAMESPACE/$pod" "${POD_UID[$pod]}" "$RESET"
  target="$(kubelet_csi publish "$POD_NAMESPACE/$pod" "${POD_UID[$pod]}")" ||
    die "NodePublishVolume failed (log: $WORK/agent.log)"
  say "    $target: $(cd "$target" && echo *)"
  say "    ports.env: '$(cat "$target/ports.env")' (no port yet)"
  why "Then the sandbox's ADD (annotation hostport.io/ports: \"web=80\"): the agent writes the"
  why "port into the volume before it answers, and the runtime starts containers only after that."
  POD_RESULT[$pod]="$(cni ADD "$pod" "$WORK/cni-bin/hostport" \
    "$(hostport_config "$pod" "${BRIDGE_RESULT[$pod]}")")" ||
    cni_failure "$pod" "hostport ADD" "${POD_RESULT[$pod]}"
  say "    ports.env: $(cat "$target/ports.env")"
  port="$(sed -n 's/^HOSTPORT_WEB=//p' "$target/ports.env")"
  [[ -n "$port" ]] || die "ports.env has no HOSTPORT_WEB after ADD"
  ok "$pod's volume holds its port $port once ADD is answered"
  why "The pod's container at its first start: its entrypoint sources the file, as any image with"
  why "a shell can (the volume is mounted at /hostport in a real pod), and serves."
  mkdir -p "$www"
  # shellcheck disable=SC2016 # expanded by the pod's shell
  ip netns exec "${POD_NS[$pod]}" sh -c '. "$1/ports.env" &&
    printf "hello from %s (it read HOSTPORT_WEB=%s at its first start)\n" "$2" "$HOSTPORT_WEB" > "$3/index.html" &&
    exec /bin/busybox httpd -f -p 80 -h "$3"' "$pod" "$target" "$POD_NAMESPACE/$pod" "$www" &
  HTTPD_PID[$pod]=$!
  fetch outside "$OUTSIDE_NS" "http://$NODE_IP:$port/" "$pod"
  why "The volume's own socket, pod.sock, answers this pod alone (no hostPath needed):"
  out="$(cd "$target" && curl -s --unix-socket pod.sock http://hostport/v1/self/env)"
  if [[ "$out" == "$(cat "$target/ports.env")" ]]; then
    ok "GET /v1/self/env on the volume's pod.sock: $out"
  else
    bad "the volume's pod.sock answered '$out'"
  fi
  why "The pod is deleted: hostport and bridge DEL, then the kubelet unmounts the volume."
  stop_pid "${HTTPD_PID[$pod]}"
  HTTPD_PID[$pod]=""
  out="$(cni DEL "$pod" "$WORK/cni-bin/hostport" "$(hostport_config "$pod" "${POD_RESULT[$pod]}")")" ||
    cni_failure "$pod" "hostport DEL" "$out"
  out="$(cni DEL "$pod" /usr/lib/cni/bridge "$(bridge_config "${POD_RESULT[$pod]}")")" ||
    cni_failure "$pod" "bridge DEL" "$out"
  POD_RESULT[$pod]=""
  if kubelet_csi unpublish "$POD_NAMESPACE/$pod" "${POD_UID[$pod]}" && [[ ! -e "$target" ]]; then
    ok "the volume is unpublished: $(grep -o 'csi.unpublished.*' "$WORK/agent.log" | head -1)"
  else
    bad "NodeUnpublishVolume failed or left $target"
  fi
}

# review POD_JSON: an AdmissionReview v1 of a pod CREATE in namespace demo, as the API server
# posts it to a webhook.
review() {
  jq -n --argjson pod "$1" '{apiVersion: "admission.k8s.io/v1", kind: "AdmissionReview",
    request: {uid: "demo-\($pod.metadata.name)", kind: {group: "", version: "v1", kind: "Pod"},
      resource: {group: "", version: "v1", resource: "pods"}, operation: "CREATE",
      namespace: "demo", name: $pod.metadata.name, object: $pod, dryRun: false,
      userInfo: {username: "demo"}}}'
}

# webhook PATH BODY: POSTs BODY to the webhook over HTTPS, trusting only the demo's CA, with the
# Service's name the certificate carries (as the API server calls it).
webhook() {
  ip netns exec "$NODE_NS" curl -sS --max-time 5 --cacert "$WORK/admission/ca.crt" \
    --resolve "$ADMISSION_NAME:8443:127.0.0.1" -H 'Content-Type: application/json' \
    --data-binary "$2" "https://$ADMISSION_NAME:8443$1"
}

webhook_healthy() { webhook /healthz "" >/dev/null 2>&1; }

admission() {
  section "the admission webhook"
  why "hostport-admission sees a pod with a hostport.io/ annotation when it is created, before"
  why "any node does. It refuses what the node would refuse, in the node's words, and asks the"
  why "scheduler for the pool's ports. Its certificate here is made with openssl, as"
  why "cert-manager would give it (in a cluster it can keep its own in a Secret)."
  ADMISSION_NAME="hostport-admission.hostport-system.svc"
  local dir="$WORK/admission"
  mkdir -p "$dir"
  openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 1 \
    -subj "/CN=demo CA" -keyout "$dir/ca.key" -out "$dir/ca.crt" 2>/dev/null ||
    die "openssl could not make the CA"
  openssl req -new -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj "/CN=$ADMISSION_NAME" \
    -keyout "$dir/tls.key" -out "$dir/tls.csr" 2>/dev/null || die "openssl could not make a key"
  openssl x509 -req -in "$dir/tls.csr" -CA "$dir/ca.crt" -CAkey "$dir/ca.key" -CAcreateserial \
    -days 1 -extfile <(printf 'subjectAltName=DNS:%s\nextendedKeyUsage=serverAuth\n' "$ADMISSION_NAME") \
    -out "$dir/tls.crt" 2>/dev/null || die "openssl could not sign the serving certificate"
  # The agents' config file, which the webhook reads for the pools: the demo agent's pool.
  printf 'pools:\n  default:\n    ranges: ["%s"]\n' "$POOL_RANGE" >"$dir/agent.yaml"
  printf '  %s$ ip netns exec %s %s --config %s --tls-cert-file %s --tls-key-file %s --listen 127.0.0.1:8443 --metrics-address ""%s\n' \
    "$DIM" "$NODE_NS" "$ADMISSION_BIN" "$dir/agent.yaml" "$dir/tls.crt" "$dir/tls.key" "$RESET"
  ip netns exec "$NODE_NS" "$ADMISSION_BIN" --config "$dir/agent.yaml" \
    --tls-cert-file "$dir/tls.crt" --tls-key-file "$dir/tls.key" \
    --listen 127.0.0.1:8443 --metrics-address "" >"$WORK/admission.log" 2>&1 &
  ADMISSION_PID=$!
  if ! poll 100 --while "$ADMISSION_PID" webhook_healthy && exited "$ADMISSION_PID"; then
    indent <"$WORK/admission.log" >&2
    die "hostport-admission exited at start (log above)"
  fi
  ok "hostport-admission pid $ADMISSION_PID answers on https://$ADMISSION_NAME:8443"

  local malformed answer message
  malformed='{"metadata":{"name":"pod-e","annotations":{"hostport.io/ports":"rtp=20000-19000/udp"}},
    "spec":{"containers":[{"name":"app","image":"busybox"}]}}'
  say "  POST /validate, a pod with hostport.io/ports: \"rtp=20000-19000/udp\":"
  answer="$(webhook /validate "$(review "$malformed")")" || bad "the webhook did not answer"
  message="$(jq -r '.response.status.message // empty' <<<"$answer")"
  indent <<<"$(jq -c '.response | {uid, allowed, status}' <<<"$answer")"
  if [[ "$(jq -r .response.allowed <<<"$answer")" == "false" && "$message" == "annotation hostport.io/ports: "* ]]; then
    ok "refused at creation, in the plugin's words (kubectl shows: denied the request: $message)"
  else
    bad "expected a refusal naming annotation hostport.io/ports, got: $answer"
  fi

  local asking patch
  asking='{"metadata":{"name":"pod-f","annotations":{"hostport.io/ports":"rtp=7000-7003/udp"}},
    "spec":{"containers":[{"name":"app","image":"busybox","resources":{}}]}}'
  say "  POST /mutate, a pod with hostport.io/ports: \"rtp=7000-7003/udp\" (four ports):"
  answer="$(webhook /mutate "$(review "$asking")")" || bad "the webhook did not answer"
  patch="$(jq -r '.response.patch // empty' <<<"$answer" | base64 -d 2>/dev/null || true)"
  say "    patchType $(jq -r '.response.patchType // "none"' <<<"$answer"), the patch decoded:"
  jq -c '.[]' <<<"${patch:-[]}" | indent | indent
  if [[ "$(jq -r '[.[] | select(.path == "/spec/containers/0/resources/requests") | .value["hostport.io/default"]][0]' <<<"${patch:-[]}")" == "4" ]]; then
    ok "completed: the pod asks the scheduler for hostport.io/default: 4, where the node's free ports are counted"
  else
    bad "expected a patch adding hostport.io/default: 4 to the requests, got: ${patch:-none}"
  fi
}

summary() {
  section "summary"
  local pod
  printf '  %-7s %-16s %-10s %s\n' WHO "IP" "HOST PORT" HOW
  printf '  %-7s %-16s %-10s %s\n' "host" "$NODE_IP" "${POOL_RANGE%%-*}" "a node process: skipped by the agent"
  for pod in "${PODS[@]}"; do
    printf '  %-7s %-16s %-10s %s\n' "$pod" "${POD_IP[$pod]}" "${HOST_PORT[$pod]}" \
      "$(case "$pod" in pod-a) echo "static hostPort" ;; *) echo "hostport.io/ports from pool $POOL_RANGE" ;; esac)"
  done
  say ""
  say "  pod-d's claim of 8080 was refused (CNI error 101)."
  say "  The hostNetwork pod relay got a port from the pool through the agent's watch, read it"
  say "  from the pod socket by its cgroup, served on it, and gave it back when it finished."
  say "  pod-v read its port from its hostport.io CSI volume at its first start, written before its"
  say "  ADD was answered, and served on it."
  say "  The admission webhook refused pod-e's malformed annotation in the plugin's words and"
  say "  completed pod-f with its hostport.io/default request."
  say "  After a flushed map, every pod answered again: the agent restored its forwards."
  say "  Each pod was reached on node IP, 127.0.0.1 and from outside: $((3 * ${#PODS[@]})) requests,"
  say "  $FAILURES failed. Next: docs/design.md for the design, 'sudo scripts/test.sh' for the tests."
}

# --- main --------------------------------------------------------------------------------

main() {
  while (($# > 0)); do
    case "$1" in
      -h | --help) usage; return 0 ;;
      --no-build) DO_BUILD=0 ;;
      *) usage >&2; die "unknown argument: $1" ;;
    esac
    shift
  done
  ((EUID == 0)) || die "needs root (network namespaces, nftables): run 'sudo $0'"
  command -v ip >/dev/null || die "missing 'ip' (install iproute2, or run scripts/setup.sh)"

  trap cleanup EXIT
  trap 'on_signal INT' INT
  trap 'on_signal TERM' TERM
  WORK="$(mktemp -d "${TMPDIR:-/tmp}/hostport-demo.XXXXXX")"
  ((${#WORK} < 80)) || die "temp dir path too long for a Unix socket: $WORK (set TMPDIR)"

  printf '%shostport demo%s: conflict-free host ports for pods, decided on the node.\n' \
    "$BOLD" "$RESET"
  say "Work dir $WORK; everything is removed at exit."
  build
  make_node
  start_fake_api
  start_agent
  create_pods
  show_leases
  refused_pod
  traffic
  healing
  delete_pods
  host_network
  csi_volume
  admission
  summary
  ((FAILURES == 0)) || exit 1
}

main "$@"
