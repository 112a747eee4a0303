#!/usr/bin/env bash
# End-to-end test: podman (CNI backend, runc) publishes a container port through the
# `bridge` + `hostport` conflist, and traffic reaches the container through the DNAT.
#
# Everything podman touches is private to one temp dir: storage root, runroot, tmpdir,
# containers.conf, storage.conf, CNI config dir, CNI plugin dir and host-local dataDir.
# Nothing under /etc changes. podman runs the CNI plugins in its own network namespace, so
# the script first re-runs itself in a private one (nsenter --net, which keeps the mounts
# podman and runc need, such as /sys/fs/cgroup): the bridge, the `hostport` nft table and
# conntrack entries never touch the machine's. Names, bridge, subnet and host port derive
# from $$ or are random, so parallel runs do not collide.
#
# Usage: podman_test.sh PLUGIN_BINARY
# Environment (for debugging the harness):
#   HOSTPORT_E2E_PLUGIN=portmap  chain Debian's /usr/lib/cni/portmap instead of hostport
#                                (the nft checks become iptables checks)
#   HOSTPORT_E2E_HOST_IP=ADDR    a node address to curl as well (default: only the
#                                bridge gateway, which is a local address of the node)
#   HOSTPORT_E2E_KEEP=1          keep the temp dir (the network and container are removed)
# Exit codes: 0 pass, 1 fail, 77 skipped (not root).
set -euo pipefail

readonly PROG="podman_test.sh"
readonly SKIP=77
readonly PLUGIN_TYPE="${HOSTPORT_E2E_PLUGIN:-hostport}"
readonly CNI_VERSION="1.0.0"
readonly TOKEN="hostport-e2e-$$-${RANDOM}${RANDOM}"
# The bridge conflist, shared with scripts/demo.sh.
# shellcheck source=scripts/lib/cni.sh
source "$(dirname "${BASH_SOURCE[0]}")/../../scripts/lib/cni.sh"
# shellcheck source=scripts/lib/podman.sh
source "$(dirname "${BASH_SOURCE[0]}")/../../scripts/lib/podman.sh"

# Filled in by setup steps; read by cleanup, which must cope with any of them unset.
WORK=""
NET="hpe2e-$$"
BRIDGE="hpe2e$$"  # at most 5 + 7 digits: within IFNAMSIZ (15)
CTR="hpe2e-ctr-$$"
IMAGE="localhost/hostport-e2e:$$"
SUBNET="" GATEWAY="" HOST_PORT="" CONTAINER_IP=""
PODMAN=()
FAILURES=0
CLEANED=0

log() { printf '%s: %s\n' "$PROG" "$*"; }
pass() { printf '%s: PASS: %s\n' "$PROG" "$*"; }
fail() { printf '%s: FAIL: %s\n' "$PROG" "$*"; FAILURES=$((FAILURES + 1)); }
# A failure after which the test cannot go on.
fatal() { fail "$*"; exit 1; }

usage() {
  sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed -e '$d' -e 's/^# \{0,1\}//'
}

# --- setup -----------------------------------------------------------------------------

require_tools() {
  local tool
  for tool in podman runc conmon curl nft ip ss tar timeout nsenter jq; do
    command -v "$tool" >/dev/null || fatal "missing tool '$tool' (run scripts/setup.sh)"
  done
  [[ -x /bin/busybox ]] || fatal "missing /bin/busybox (install busybox-static)"
  [[ -x /usr/lib/cni/bridge && -x /usr/lib/cni/host-local ]] ||
    fatal "missing /usr/lib/cni/{bridge,host-local} (install containernetworking-plugins)"
}

# Picks 10.A.B.0/24 with no route inside or around it (the default route aside).
pick_subnet() {
  local try a b
  for try in $(seq 1 50); do
    a=$((100 + RANDOM % 150))
    b=$((RANDOM % 256))
    if [[ -z "$(ip -4 route show root "10.${a}.${b}.0/24")" &&
      -z "$(ip -4 route show match "10.${a}.${b}.0/24" | grep -v '^default' || true)" &&
      -z "$(ip -4 -o addr show to "10.${a}.${b}.0/24")" ]]; then
      SUBNET="10.${a}.${b}.0/24"
      GATEWAY="10.${a}.${b}.1"
      return 0
    fi
    : "$try"
  done
  fatal "no free 10.x.y.0/24 subnet found in 50 tries"
}

# Is key `tcp . $1` in our map? (The map only exists in hostport mode.)
map_has_port() {
  nft -j list map ip hostport ports 2>/dev/null |
    grep -Eq "\"concat\": \[\"tcp\", $1\]"
}

# Picks a host port in 40000-49999 that no socket listens on and no map element uses.
pick_host_port() {
  local try p
  for try in $(seq 1 50); do
    p=$((40000 + RANDOM % 10000))
    if [[ -z "$(ss -Htuln "sport = :${p}")" ]] && ! map_has_port "$p"; then
      HOST_PORT="$p"
      return 0
    fi
    : "$try"
  done
  fatal "no free host port found in 50 tries"
}

make_dirs() {
  WORK="$(mktemp -d "${TMPDIR:-/tmp}/hostport-e2e.XXXXXX")"
  mkdir -p "$WORK"/{cni-conf,cni-bin,ipam}
}

install_plugin() {
  local binary="$1"
  if [[ "$PLUGIN_TYPE" == "hostport" ]]; then
    [[ -n "$binary" ]] || fatal "no hostport binary given (usage: $PROG PLUGIN_BINARY)"
    [[ -x "$binary" ]] || fatal "hostport binary '$binary' is missing or not executable"
    # A copy, so a rebuild during the run cannot change the binary under podman.
    cp "$binary" "$WORK/cni-bin/hostport"
    log "plugin: hostport from $binary"
    # podman rejects a conflist whose plugins do not answer VERSION: say so plainly.
    local version
    version="$(CNI_COMMAND=VERSION timeout 10 "$WORK/cni-bin/hostport" </dev/null 2>&1)" ||
      fatal "hostport VERSION failed: ${version:-<no output>}"
    [[ "$version" == *cniVersion* ]] ||
      fatal "hostport VERSION printed no CNI version info: '${version}'"
    log "plugin VERSION: $version"
  else
    [[ -x "/usr/lib/cni/$PLUGIN_TYPE" ]] || fatal "no plugin /usr/lib/cni/$PLUGIN_TYPE"
    log "plugin: /usr/lib/cni/$PLUGIN_TYPE (HOSTPORT_E2E_PLUGIN)"
  fi
}

build_image() {
  podman_import_busybox "$WORK" "$IMAGE" "$TOKEN" || fatal "podman import failed"
  log "image $IMAGE imported"
}

write_network() {
  # Standalone hostport (no agent): static hostPorts only, as portmap does.
  local chained
  # Its state dir (the netlink keeper's socket) is the test's own, never the node's.
  chained="$(jq -n --arg type "$PLUGIN_TYPE" --arg state "$WORK/cni-state" '{type: $type}
    + (if $type == "hostport" then {agentSocket: "", stateDir: $state} else {} end)
    + {capabilities: {portMappings: true}}')"
  cni_bridge_conflist "$CNI_VERSION" "$NET" "$BRIDGE" "$SUBNET" "$GATEWAY" "$WORK/ipam" \
    "$chained" >"$WORK/cni-conf/$NET.conflist" || fatal "cannot write the conflist"
  podman_ network exists "$NET" || fatal "podman does not see network $NET"
  log "network $NET: bridge $BRIDGE, subnet $SUBNET, host port $HOST_PORT"
}

# --- checks ----------------------------------------------------------------------------

check_curl() {
  local url="$1" body
  if body="$(http_body "$url")" && [[ "$body" == "$TOKEN" ]]; then
    pass "GET $url returned the container's index.html"
  else
    fail "GET $url: expected body '$TOKEN', got '${body:-<no response>}'"
  fi
}

# The container fetches its own page through the node's host port (needs hairpin mode).
# busybox nc, not wget: wget segfaults under `podman exec` here (it works under `run`).
check_hairpin() {
  local url="http://${GATEWAY}:${HOST_PORT}/" out
  out="$(podman_ exec "$CTR" sh -c \
    "printf 'GET / HTTP/1.0\r\n\r\n' | nc -w 5 '${GATEWAY}' '${HOST_PORT}'" 2>&1 | tr -d '\r' || true)"
  if grep -qx -- "$TOKEN" <<<"$out"; then
    pass "hairpin: the container reached itself at $url"
  else
    fail "hairpin: container GET $url: expected body '$TOKEN', got '${out:-<no response>}'"
  fi
}

check_mapping_present() {
  if [[ "$PLUGIN_TYPE" == "hostport" ]]; then
    local json
    json="$(nft -j list map ip hostport ports 2>&1 || true)"
    if grep -Eq "\"concat\": \[\"tcp\", ${HOST_PORT}\][^[]*\{\"concat\": \[\"${CONTAINER_IP//./\\.}\", 80\]\}" <<<"$json"; then
      pass "map ip hostport ports has tcp . $HOST_PORT : $CONTAINER_IP . 80"
    else
      fail "map ip hostport ports lacks tcp . $HOST_PORT : $CONTAINER_IP . 80; it holds: $json"
    fi
  else
    if iptables -t nat -S | grep -Eq -- "--dport ${HOST_PORT} .*--to-destination ${CONTAINER_IP}:80"; then
      pass "iptables nat has the DNAT for $HOST_PORT -> $CONTAINER_IP:80"
    else
      fail "iptables nat lacks the DNAT for $HOST_PORT -> $CONTAINER_IP:80"
    fi
  fi
}

check_mapping_gone() {
  if [[ "$PLUGIN_TYPE" == "hostport" ]]; then
    if map_has_port "$HOST_PORT"; then
      fail "map ip hostport ports still has tcp . $HOST_PORT after podman rm"
    elif ! nft list map ip hostport ports >/dev/null 2>&1; then
      fail "map ip hostport ports is gone altogether after podman rm (expected only our element to go)"
    else
      pass "the element for tcp . $HOST_PORT is gone after podman rm"
    fi
  else
    if iptables -t nat -S | grep -Eq -- "--dport ${HOST_PORT} "; then
      fail "iptables nat still has a rule for $HOST_PORT after podman rm"
    else
      pass "the iptables DNAT for $HOST_PORT is gone after podman rm"
    fi
  fi
}

# --- cleanup ---------------------------------------------------------------------------

# Takes a shared lock for the whole run: other runs may go on, but a run that wants to
# delete the tables at its end must be alone.
# podman runs the plugins in the netns it runs in: give it a private one, deleted at exit.
run_in_private_netns() {
  local ns="hpe2e-$$-${RANDOM}" rc=0
  ip netns add "$ns" || fatal "ip netns add $ns failed"
  trap 'ip netns del "'"$ns"'" 2>/dev/null' EXIT
  trap 'exit 130' INT
  trap 'exit 143' TERM
  ip -n "$ns" link set lo up || fatal "cannot bring lo up in $ns"
  log "running in private netns $ns"
  HOSTPORT_E2E_NETNS="$ns" nsenter --net="/run/netns/$ns" "$BASH" "${BASH_SOURCE[0]}" "$@" ||
    rc=$?
  exit "$rc"
}

cleanup() {
  local rc=$?
  ((CLEANED == 0)) || return 0
  CLEANED=1
  trap - EXIT INT TERM
  set +e
  if ((${#PODMAN[@]} > 0)) && [[ -n "$WORK" ]]; then
    # The plugin's DEL runs here and removes our map elements.
    podman_ rm -f -t 0 -a >/dev/null 2>&1
    podman_ rmi -f -a >/dev/null 2>&1
    podman_ network rm -f "$NET" >/dev/null 2>&1
  fi
  if [[ "$PLUGIN_TYPE" == "hostport" && -n "$HOST_PORT" ]] && map_has_port "$HOST_PORT"; then
    # Only when DEL failed to: the key was free when we picked it, so it is ours.
    log "cleanup: removing our leftover element tcp . $HOST_PORT"
    nft delete element ip hostport ports "{ tcp . $HOST_PORT }"
  fi
  if ip link show "$BRIDGE" >/dev/null 2>&1; then
    ip link del "$BRIDGE"
  fi
  # libcni's result cache for our network (podman's CNI backend uses the default dir).
  rm -f /var/lib/cni/results/"$NET"-* 2>/dev/null
  if [[ -n "$WORK" && -d "$WORK" ]]; then
    podman_unmount_under "$WORK"
    if [[ "${HOSTPORT_E2E_KEEP:-0}" == "1" ]]; then
      log "cleanup: kept $WORK"
    else
      rm -rf "$WORK"
    fi
  fi
  if ((rc == 0 && FAILURES > 0)); then
    rc=1
  fi
  if ((rc == 0)); then
    log "PASS: podman end-to-end with $PLUGIN_TYPE"
  elif ((rc != SKIP)); then
    log "FAIL: podman end-to-end with $PLUGIN_TYPE ($FAILURES failed checks, exit $rc)"
  fi
  exit "$rc"
}

on_signal() {
  log "interrupted by $1"
  exit 130
}

# --- main ------------------------------------------------------------------------------

main() {
  case "${1:-}" in
    -h | --help) usage; return 0 ;;
  esac
  if ((EUID != 0)); then
    log "SKIP: needs root (podman with CNI networking, a private network namespace)"
    exit "$SKIP"
  fi
  [[ -n "${HOSTPORT_E2E_NETNS:-}" ]] || run_in_private_netns "$@"
  trap cleanup EXIT
  trap 'on_signal INT' INT
  trap 'on_signal TERM' TERM

  require_tools
  pick_subnet
  pick_host_port
  make_dirs
  log "work dir $WORK"
  podman_private_root "$WORK" "$WORK/cni-bin" "$WORK/cni-conf"
  install_plugin "${1:-}"
  build_image
  write_network

  log "starting httpd: host port $HOST_PORT -> container port 80"
  podman_ run -d --pull never --name "$CTR" --network "$NET" \
    -p "${HOST_PORT}:80" "$IMAGE" /bin/httpd -f -p 80 -h /www >/dev/null ||
    fatal "podman run failed"
  CONTAINER_IP="$(podman_ inspect -f "{{(index .NetworkSettings.Networks \"$NET\").IPAddress}}" "$CTR")"
  [[ -n "$CONTAINER_IP" ]] || fatal "container $CTR has no IP on $NET"
  log "container $CTR has IP $CONTAINER_IP"

  check_curl "http://${GATEWAY}:${HOST_PORT}/"
  check_curl "http://127.0.0.1:${HOST_PORT}/"
  if [[ -n "${HOSTPORT_E2E_HOST_IP:-}" ]]; then
    check_curl "http://${HOSTPORT_E2E_HOST_IP}:${HOST_PORT}/"
  fi
  check_hairpin
  check_mapping_present

  log "removing container $CTR"
  podman_ rm -f -t 0 "$CTR" >/dev/null || fail "podman rm -f $CTR failed"
  check_mapping_gone

  ((FAILURES == 0)) || exit 1
}

main "$@"
