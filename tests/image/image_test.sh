#!/usr/bin/env bash
# Image test: the DaemonSet's pod template, run by podman from the image that
# scripts/build-image.sh builds, against a node whose CNI dirs are temp dirs.
#
# The manifests are rendered with `kubectl kustomize daemonset/`; the init container and the
# agent run with the command, args, capabilities and volume mounts read from the rendered
# DaemonSet (hostNetwork: --network host; hostPID: --pid host). Each hostPath is a temp dir, the
# ConfigMap is its agent.yaml with `chainCni: true` added (there is no KUBERNETES_SERVICE_HOST
# here). It checks, with real processes and traffic:
#   1. the init container installs the plugin into the temp CNI bin dir, and it answers VERSION;
#   2. the agent becomes ready (the readiness probe's command, run in its container);
#   3. it chains hostport into the temp bridge + portmap conflist, in portmap's place;
#   4. a container that podman starts through that conflist gets its port from the agent, and
#      the port carries traffic. podman 4.3 gives CNI plugins only the portMappings and aliases
#      capabilities, not pod annotations, so the port is a static `-p` one: hostport.io/ports
#      cannot be tested under podman;
#   5. after the agent's container is removed the conflist still chains hostport.
#
# Isolation: the script re-runs itself in a private network namespace and a private mount
# namespace in which a tmpfs covers /run. The agent's nftables table, sysctls (its
# /proc/sys/net mount shows the private netns) and bridge are the private netns's; the plugin,
# which podman runs on the "host", finds the agent's socket at /run/hostport/agent.sock, which is
# a temp dir there, and /var/lib/cni is one too. Nothing under /etc, /opt, /var/lib/cni or
# /var/lib/hostport of the machine is touched.
#
# Usage: image_test.sh BUILD_DIR
# Environment: HOSTPORT_IMAGE_KEEP=1 keeps the temp dir.
# Exit codes: 0 pass, 1 fail, 77 skipped (not root).
set -euo pipefail

readonly PROG="image_test.sh"
readonly SKIP=77
REPO_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
readonly REPO_ROOT
# One id for the names of both runs (outer and inside the namespaces).
readonly ID="${HOSTPORT_IMAGE_ID:-$$}"
readonly TOKEN="hostport-image-${ID}"
# shellcheck source=scripts/lib/cni.sh
source "${REPO_ROOT}/scripts/lib/cni.sh"
# shellcheck source=scripts/lib/podman.sh
source "${REPO_ROOT}/scripts/lib/podman.sh"

WORK=""
BUILD_DIR=""
NET="hpimg-${ID}"
BRIDGE="hpimg${ID}"
IMAGE="localhost/hostport-image-test:${ID}"
BUSYBOX="localhost/hostport-image-busybox:${ID}"
AGENT="hpimg-agent-${ID}"
WEB="hpimg-web-${ID}"
SUBNET="" GATEWAY="" HOST_PORT=""
DS_JSON="" CONFLIST=""
PODMAN=()
NETNS=""
# Set in the run inside the private namespaces: the outer run's work dir.
INNER="${HOSTPORT_IMAGE_WORK:-}"
FAILURES=0
CLEANED=0

log() { printf '%s: %s\n' "$PROG" "$*"; }
pass() { printf '%s: PASS: %s\n' "$PROG" "$*"; }
fail() { printf '%s: FAIL: %s\n' "$PROG" "$*"; FAILURES=$((FAILURES + 1)); }
fatal() { fail "$*"; exit 1; }


# --- setup -----------------------------------------------------------------------------

require_tools() {
  local tool
  for tool in podman runc conmon curl kubectl yq jq ip nsenter unshare mmdebstrap timeout; do
    command -v "$tool" >/dev/null || fatal "missing tool '$tool' (run scripts/setup.sh)"
  done
  [[ -x /bin/busybox ]] || fatal "missing /bin/busybox (install busybox-static)"
  [[ -x /usr/lib/cni/bridge && -x /usr/lib/cni/host-local && -x /usr/lib/cni/portmap ]] ||
    fatal "missing /usr/lib/cni/{bridge,host-local,portmap} (containernetworking-plugins)"
}

make_dirs() {
  WORK="$(mktemp -d "${TMPDIR:-/tmp}/hostport-image.XXXXXX")"
  mkdir -p "$WORK"/{ipam,config,host}
}

# The node's paths for this test: a hostPath of the manifest maps to $WORK/host/<path>, except
# /run/netns (the private tmpfs's, where podman puts the pods' netns files) and /proc/sys/net
# (whoever opens it sees its own netns: the private one).
host_path() {
  case "$1" in
    /run/netns | /proc/sys/net) printf '%s\n' "$1" ;;
    *) printf '%s\n' "$WORK/host$1" ;;
  esac
}

# In the private mount namespace: a tmpfs on /run, /run/hostport the temp run dir (for the
# plugin on the host), /run/netns a shared mount (the agent's mount of it is HostToContainer),
# and /var/lib/cni the temp dir's: the chained plugin's default stateDir (its attachment records,
# the netlink keeper's lock) and podman's CNI results are under it, and the machine's must not
# change.
private_run() {
  mount -t tmpfs -o mode=0755 hostport-image-run /run || fatal "cannot mount a tmpfs on /run"
  mkdir -p /run/netns /run/hostport "$(host_path /run/hostport)"
  mount --bind "$(host_path /run/hostport)" /run/hostport
  mount --bind /run/netns /run/netns
  mount --make-shared /run/netns
  mkdir -p /var/lib/cni "$(host_path /var/lib/cni)"
  mount --bind "$(host_path /var/lib/cni)" /var/lib/cni || fatal "cannot cover /var/lib/cni"
}

build_images() {
  local started=$SECONDS
  "${REPO_ROOT}/scripts/build-image.sh" --build-dir "$BUILD_DIR" --tag "$IMAGE" ||
    fatal "scripts/build-image.sh failed"
  log "image $IMAGE built in $((SECONDS - started)) s"
  # The workload: busybox httpd.
  podman_import_busybox "$WORK" "$BUSYBOX" "$TOKEN" || fatal "podman import busybox"
}

# Renders daemonset/ and keeps the DaemonSet as JSON; the ConfigMap's agent.yaml becomes the
# mounted config, with chainCni: true (auto is off outside a cluster).
render_manifests() {
  local rendered="$WORK/rendered.yaml"
  kubectl kustomize "${REPO_ROOT}/daemonset" >"$rendered" || fatal "kubectl kustomize daemonset/"
  DS_JSON="$(yq -c 'select(.kind == "DaemonSet")' "$rendered")"
  [[ -n "$DS_JSON" ]] || fatal "no DaemonSet in the rendered manifests"
  yq -r 'select(.kind == "ConfigMap") | .data["agent.yaml"]' "$rendered" >"$WORK/config/agent.yaml"
  grep -q '^stateDir:' "$WORK/config/agent.yaml" || fatal "the ConfigMap has no agent.yaml"
  printf 'chainCni: true\n' >>"$WORK/config/agent.yaml"
}

# pod_spec JQ: evaluates JQ on the DaemonSet's pod spec.
pod_spec() { jq -c "$1" <<<"$DS_JSON" | sed 's/^null$//'; }

# podman_args KIND NAME: prints, one a line, the podman run options of container NAME
# (KIND: containers or initContainers) from the manifest: namespaces, capabilities, mounts.
podman_args() {
  local c=".spec.template.spec.$1[] | select(.name == \"$2\")"
  [[ "$(pod_spec '.spec.template.spec.hostNetwork')" == "true" ]] && printf -- '--network=host\n'
  [[ "$(pod_spec '.spec.template.spec.hostPID')" == "true" ]] && printf -- '--pid=host\n'
  local cap
  if [[ "$(pod_spec "$c | .securityContext.capabilities.drop | index(\"ALL\") != null")" == "true" ]]; then
    printf -- '--cap-drop=all\n'
  fi
  while read -r cap; do
    [[ -n "$cap" ]] && printf -- '--cap-add=%s\n' "$cap"
  done < <(pod_spec "$c | .securityContext.capabilities.add // [] | .[]" | tr -d '"')
  if [[ "$(pod_spec "$c | .securityContext.allowPrivilegeEscalation")" == "false" ]]; then
    printf -- '--security-opt=no-new-privileges\n'
  fi
  local mount name path ro prop volume source opts
  while read -r mount; do
    name="$(jq -r .name <<<"$mount")"
    path="$(jq -r .mountPath <<<"$mount")"
    ro="$(jq -r '.readOnly // false' <<<"$mount")"
    prop="$(jq -r '.mountPropagation // ""' <<<"$mount")"
    volume="$(pod_spec ".spec.template.spec.volumes[] | select(.name == \"$name\")")"
    if [[ "$(jq -r '.configMap != null' <<<"$volume")" == "true" ]]; then
      source="$WORK/config"
    elif [[ "$(jq -r '.hostPath != null' <<<"$volume")" == "true" ]]; then
      source="$(host_path "$(jq -r .hostPath.path <<<"$volume")")"
      mkdir -p "$source"
    elif [[ "$(jq -r '.projected.sources[0].serviceAccountToken != null' <<<"$volume")" == "true" ]]; then
      # The API token: there is no API server here, so none is mounted and the agent logs
      # kube.publication_off (the fake API server tests cover publication).
      continue
    else
      fatal "volume $name of $2 is neither a configMap nor a hostPath"
    fi
    opts="rw"
    [[ "$ro" == "true" ]] && opts="ro"
    [[ "$prop" == "HostToContainer" ]] && opts+=",rslave"
    printf -- '--volume=%s:%s:%s\n' "$source" "$path" "$opts"
  done < <(pod_spec "$c | .volumeMounts // [] | .[]")
}

# Prints the manifest's image, to check the image we run is the one it names.
manifest_image() { pod_spec '.spec.template.spec.containers[0].image' | tr -d '"'; }

# A bridge + portmap conflist in the temp conf dir, as a node with a primary CNI has.
write_conflist() {
  local a=$((100 + RANDOM % 150)) b=$((RANDOM % 256))
  SUBNET="10.${a}.${b}.0/24"
  GATEWAY="10.${a}.${b}.1"
  HOST_PORT=$((8000 + RANDOM % 1000))  # a static port, outside the agent's pools
  CONFLIST="$(host_path /etc/cni/net.d)/10-$NET.conflist"
  mkdir -p "$(dirname "$CONFLIST")"
  cni_bridge_conflist 1.0.0 "$NET" "$BRIDGE" "$SUBNET" "$GATEWAY" "$WORK/ipam" \
    '{"type": "portmap", "capabilities": {"portMappings": true}, "snat": true}' >"$CONFLIST" ||
    fatal "cannot write $CONFLIST"
  log "conflist $CONFLIST: bridge $BRIDGE $SUBNET, then portmap"
}

# --- the checks ----------------------------------------------------------------------

run_init_container() {
  local -a args cmd
  mapfile -t args < <(podman_args initContainers install-plugin)
  mapfile -t cmd < <(pod_spec '.spec.template.spec.initContainers[] |
    select(.name == "install-plugin") | (.command // []) + (.args // []) | .[]' | jq -r .)
  log "init container: ${cmd[*]}"
  local out
  if out="$(podman_ run --rm --pull never --name "hpimg-init-${ID}" "${args[@]}" \
    --entrypoint "${cmd[0]}" "$IMAGE" "${cmd[@]:1}" 2>&1)"; then
    pass "init container install-plugin exited 0: ${out//$'\n'/ }"
  else
    fatal "init container install-plugin failed: $out"
  fi
  local plugin version
  plugin="$(host_path /opt/cni/bin)/hostport"
  [[ -x "$plugin" ]] || fatal "the init container left no executable $plugin"
  version="$(CNI_COMMAND=VERSION timeout 10 "$plugin" </dev/null 2>&1)" ||
    fatal "the installed plugin's VERSION failed: $version"
  [[ "$version" == *cniVersion* ]] || fatal "the installed plugin's VERSION printed '$version'"
  pass "the plugin is in the temp CNI bin dir and answers VERSION: $version"
}

probe() {
  local which="$1" cmd
  mapfile -t cmd < <(pod_spec ".spec.template.spec.containers[] | select(.name == \"agent\") |
    .${which}.exec.command[]" | jq -r .)
  podman_ exec "$AGENT" "${cmd[@]}"
}

run_agent() {
  local -a args cargs
  mapfile -t args < <(podman_args containers agent)
  mapfile -t cargs < <(pod_spec '.spec.template.spec.containers[] | select(.name == "agent") |
    .args // [] | .[]' | jq -r .)
  log "agent: ${cargs[*]} (${args[*]})"
  podman_ run -d --pull never --name "$AGENT" "${args[@]}" "$IMAGE" "${cargs[@]}" >/dev/null ||
    fatal "podman run of the agent failed"
  local deadline=$((SECONDS + 60))
  until probe readinessProbe >/dev/null 2>&1; do
    if [[ "$(podman_ inspect -f '{{.State.Running}}' "$AGENT" 2>/dev/null)" != "true" ]]; then
      fatal "the agent exited: $(podman_ logs "$AGENT" 2>&1 | tail -n 20)"
    fi
    ((SECONDS < deadline)) ||
      fatal "the agent was not ready in 60 s: $(probe readinessProbe 2>&1); log: $(podman_ logs "$AGENT" 2>&1 | tail -n 20)"
    sleep 0.2
  done
  pass "the agent is ready (readinessProbe: $(pod_spec '.spec.template.spec.containers[] |
    select(.name == "agent") | .readinessProbe.exec.command | join(" ")' | tr -d '"'))"
  if probe startupProbe && probe livenessProbe; then
    pass "startupProbe and livenessProbe succeed"
  else
    fail "startupProbe or livenessProbe fails"
  fi
  # hostPID: the agent's pid 1 is the host's init; read its environment from the host.
  local pid env
  pid="$(podman_ inspect -f '{{.State.Pid}}' "$AGENT")"
  env="$(tr '\0' '\n' <"/proc/${pid}/environ" | grep '^GLIBC_TUNABLES=' || true)"
  if [[ -n "$env" ]]; then
    pass "the agent (pid $pid) runs with the image's $env"
  else
    fail "the agent (pid $pid) runs without GLIBC_TUNABLES"
  fi
  # The hostport.io CSI driver (agent.yaml's csiDriver) on the DaemonSet's kubelet mounts: both
  # gRPC sockets are there on the node, where the kubelet looks for them.
  local socket
  for socket in plugins/hostport.io/csi.sock plugins_registry/hostport.io-reg.sock; do
    if [[ -S "$(host_path /var/lib/kubelet)/$socket" ]]; then
      pass "the CSI driver serves the node's /var/lib/kubelet/$socket"
    else
      fail "no socket /var/lib/kubelet/$socket on the node: $(podman_ logs "$AGENT" 2>&1 |
        grep 'csi\.' | tail -n 5)"
    fi
  done
}

# The conflist's plugin types, comma-separated.
conflist_types() { jq -r '[.plugins[].type] | join(",")' "$CONFLIST"; }

chained() { [[ "$(conflist_types)" == "bridge,hostport" ]]; }

check_chained() {
  local deadline=$((SECONDS + 30))
  until chained; do
    ((SECONDS < deadline)) || {
      fail "the conflist was not chained in 30 s: plugins $(conflist_types)"
      return 0
    }
    sleep 0.2
  done
  pass "the agent chained hostport in portmap's place: plugins $(conflist_types)"
}

check_traffic() {
  local url body
  for url in "http://${GATEWAY}:${HOST_PORT}/" "http://127.0.0.1:${HOST_PORT}/"; do
    if body="$(http_body "$url")" && [[ "$body" == "$TOKEN" ]]; then
      pass "GET $url reached the container through the agent's forward ($1)"
    else
      fail "GET $url ($1): expected '$TOKEN', got '${body:-<no response>}'"
    fi
  done
}

run_workload() {
  log "container $WEB on $NET: host port $HOST_PORT -> 80 (static: podman passes no annotations)"
  podman_ run -d --pull never --name "$WEB" --network "$NET" -p "${HOST_PORT}:80" "$BUSYBOX" \
    /bin/httpd -f -p 80 -h /www >/dev/null || fatal "podman run of $WEB through $CONFLIST failed"
  local leases
  leases="$(podman_ exec "$AGENT" hostportctl list --json 2>&1)" ||
    fail "hostportctl list failed: $leases"
  if grep -q "$HOST_PORT" <<<"$leases"; then
    pass "the agent holds a lease of port $HOST_PORT"
  else
    fail "the agent has no lease of port $HOST_PORT: $leases"
  fi
  # Read whole, then searched (`nft ... | grep -q` under pipefail fails when grep stops reading
  # first); retried for a few seconds, since a listing can fail while the agent commits.
  local listing="" try
  for ((try = 0; try < 25; try++)); do
    listing="$(nft list map ip hostport ports 2>&1)" && grep -q "tcp \. $HOST_PORT " <<<"$listing" &&
      break
    sleep 0.2
  done
  if grep -q "tcp \. $HOST_PORT " <<<"$listing"; then
    pass "map ip hostport ports has tcp . $HOST_PORT (in the private netns)"
  else
    fail "map ip hostport ports lacks tcp . $HOST_PORT after 5 s: $listing"
  fi
  check_traffic "agent running"
}

check_agent_removed() {
  podman_ rm -f -t 10 "$AGENT" >/dev/null || fail "podman rm -f $AGENT failed"
  if chained; then
    pass "after the agent's container is gone the conflist still chains hostport: $(conflist_types)"
  else
    fail "after the agent's container is gone the conflist is $(conflist_types)"
  fi
  check_traffic "agent removed"
}

# --- isolation and cleanup -------------------------------------------------------------

# Runs the checks in a private network and mount namespace; the outer run keeps the netns, the
# work dir and the images (built before: mmdebstrap needs the network), and removes them at exit.
run_isolated() {
  local ns="hpimg-$$-${RANDOM}" rc=0
  ip netns add "$ns" || fatal "ip netns add $ns failed"
  NETNS="$ns"
  ip -n "$ns" link set lo up || fatal "cannot bring lo up in $ns"
  log "running the checks in private netns $ns and a private mount namespace"
  HOSTPORT_IMAGE_WORK="$WORK" HOSTPORT_IMAGE_ID="$ID" nsenter --net="/run/netns/$ns" \
    unshare --mount --propagation private "$BASH" "${BASH_SOURCE[0]}" "$@" || rc=$?
  exit "$rc"
}

cleanup() {
  local rc=$?
  ((CLEANED == 0)) || return 0
  CLEANED=1
  trap - EXIT INT TERM
  set +e
  if [[ -n "$INNER" ]]; then
    # The plugins' DELs run here, in the private netns.
    ((${#PODMAN[@]} > 0)) && podman_ rm -f -t 0 -a >/dev/null 2>&1
  else
    ((${#PODMAN[@]} > 0)) && podman_ rmi -f -a >/dev/null 2>&1
    [[ -n "$NETNS" ]] && ip netns del "$NETNS" 2>/dev/null
  fi
  if [[ -z "$INNER" && -n "$WORK" && -d "$WORK" ]]; then
    podman_unmount_under "$WORK"
    if [[ "${HOSTPORT_IMAGE_KEEP:-0}" == "1" ]]; then
      log "cleanup: kept $WORK"
    else
      rm -rf "$WORK"
    fi
  fi
  ((rc == 0 && FAILURES > 0)) && rc=1
  if [[ -n "$INNER" ]]; then
    exit "$rc"
  elif ((rc == 0)); then
    log "PASS: the DaemonSet's pod template under podman, in $SECONDS s"
  elif ((rc != SKIP)); then
    log "FAIL: exit $rc after $SECONDS s (the failed checks are above)"
  fi
  exit "$rc"
}

main() {
  case "${1:-}" in
    -h | --help) sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed -e '$d' -e 's/^# \{0,1\}//'; return 0 ;;
  esac
  if ((EUID != 0)); then
    log "SKIP: needs root (podman, a private network and mount namespace)"
    exit "$SKIP"
  fi
  [[ -n "${1:-}" ]] || { log "usage: $PROG BUILD_DIR"; exit 2; }
  BUILD_DIR="$(cd "$1" && pwd)"
  trap cleanup EXIT
  trap 'log "interrupted"; exit 130' INT TERM

  if [[ -z "$INNER" ]]; then
    require_tools
    make_dirs
    log "work dir $WORK"
    podman_private_root "$WORK" "$(host_path /opt/cni/bin)" "$(host_path /etc/cni/net.d)"
    build_images
    run_isolated "$@"
  fi
  WORK="$INNER"
  podman_private_root "$WORK" "$(host_path /opt/cni/bin)" "$(host_path /etc/cni/net.d)"
  private_run
  render_manifests
  log "the manifest runs $(manifest_image); the test runs the same build as $IMAGE"
  write_conflist
  run_init_container
  run_agent
  check_chained
  run_workload
  check_agent_removed
  ((FAILURES == 0)) || exit 1
}

main "$@"
