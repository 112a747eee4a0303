#!/usr/bin/env bash
# Checks the "never" arrows of docs/design.md's code map: includes that must not exist between the
# project's folders. A ctest (LayersAreKept, label unit) runs it, so a change that makes an arrow
# point back up fails the suite, naming the file, the line and the rule.
set -euo pipefail

readonly PROG="check-layers.sh"
REPO_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
readonly REPO_ROOT

usage() {
  cat <<EOF
Usage: scripts/check-layers.sh

Reads every #include "..." of the production sources (common/ netlink/ hostnet/ nft/ lease/
forwards/ annotations/ kube/ tls/ settings/ agent/ admission/ cni-plugin/) and fails on one
the code map forbids. Each rule is a folder, the include prefixes it may not use, and the ones
allowed among those, with the reason:

$(print_rules)
EOF
}

# folder | forbidden include prefixes | allowed exceptions | why
readonly RULES=(
  "common/|netlink/ hostnet/ nft/ lease/ forwards/ annotations/ kube/ tls/ settings/ agent/ cni-plugin/ admission/||the ground floor"
  "lease/|netlink/ hostnet/ nft/ forwards/ annotations/ kube/ agent/ cni-plugin/ admission/||the vocabulary is the floor above common"
  "netlink/|hostnet/ nft/ lease/ forwards/ annotations/ kube/ agent/ cni-plugin/ admission/||the transport knows no tables or leases"
  "hostnet/|nft/ lease/ forwards/ annotations/ kube/ agent/ cni-plugin/ admission/||host networking knows no leases"
  "nft/|hostnet/ lease/ forwards/ annotations/ kube/ agent/ cni-plugin/ admission/||the table model knows no leases"
  "forwards/|annotations/ kube/ agent/ cni-plugin/ admission/||forwards serve the agent and the plugin alike"
  "kube/|netlink/ hostnet/ nft/ lease/ forwards/ annotations/ agent/ cni-plugin/ admission/||the API client knows HTTP and credentials, not what is sent"
  "tls/|netlink/ hostnet/ nft/ lease/ forwards/ annotations/ kube/ settings/ agent/ cni-plugin/ admission/||certificates know nothing of who serves them"
  "settings/|netlink/ hostnet/ nft/ lease/ forwards/ annotations/ kube/ tls/ agent/ cni-plugin/ admission/||a table of settings knows nothing of what they set"
  "annotations/|netlink/ hostnet/ nft/ forwards/ kube/ agent/ cni-plugin/ admission/||the grammar of what a pod asks knows nothing of how it is served"
  "admission/|netlink/ hostnet/ nft/ forwards/ agent/ cni-plugin/|agent/core/ agent/config/ agent/server/ agent/log/|the webhook judges with the agent's engine, reads the agents' file, serves and logs as the agent does, and touches no node"
  "cni-plugin/|agent/ kube/ admission/|agent/api/|the plugin is a client of the agent"
  "agent/core/|agent/store/ agent/api/ agent/server/ agent/service/ agent/config/ agent/publish/ agent/log/ agent/cni_config/ agent/daemon/ nft/ netlink/ hostnet/ forwards/ admission/ agent/csi/||the allocation core is pure"
  "agent/store/|agent/core/ agent/api/ agent/server/ agent/service/ agent/config/ agent/publish/ agent/daemon/ admission/ agent/csi/||durability needs the vocabulary, never the engine"
  "agent/config/|agent/service/ agent/server/ agent/publish/ agent/cni_config/ agent/daemon/ admission/ agent/csi/||configuration comes before what it configures"
  "agent/api/|agent/core/ agent/store/ agent/server/ agent/service/ agent/config/ agent/publish/ agent/log/ agent/cni_config/ agent/daemon/ admission/ agent/csi/||the contract is what both ends share, and nothing more"
  "agent/log/|agent/core/ agent/store/ agent/api/ agent/server/ agent/service/ agent/config/ agent/publish/ agent/cni_config/ agent/daemon/ admission/ agent/csi/||every layer logs, so the log knows none of them"
  "agent/server/|agent/core/ agent/store/ agent/service/ agent/config/ agent/publish/ agent/cni_config/ agent/daemon/ admission/ agent/csi/||transports carry requests, they do not decide them"
  "agent/publish/|agent/core/ agent/store/ agent/api/ agent/server/ agent/service/ agent/config/ agent/cni_config/ agent/daemon/ admission/ agent/csi/||the publisher is given what to publish"
  "agent/pods/|agent/core/ agent/store/ agent/api/ agent/server/ agent/service/ agent/config/ agent/publish/ agent/cni_config/ agent/daemon/ kube/ admission/ agent/csi/||the pods' records know no API client and decide nothing"
  "agent/cni_config/|agent/core/ agent/store/ agent/api/ agent/server/ agent/service/ agent/config/ agent/publish/ agent/daemon/ admission/ agent/csi/||chaining knows files, not ports"
  "agent/csi/|agent/core/ agent/store/ agent/service/ agent/config/ agent/publish/ agent/cni_config/ agent/daemon/ admission/||the driver is handed the pods' leases and a server for their sockets; it decides no port"
  "agent/service/|agent/config/ agent/daemon/ agent/csi/ admission/||the daemon wires the service, not the reverse"
  "agent/daemon/|admission/||a node runs without the webhook"
)

print_rules() {
  local rule folder forbidden allowed why
  for rule in "${RULES[@]}"; do
    IFS='|' read -r folder forbidden allowed why <<<"$rule"
    printf '  %-14s never %s%s (%s)\n' "$folder" "$forbidden" "${allowed:+, but $allowed}" "$why"
  done
}

case "${1:-}" in
  -h | --help)
    usage
    exit 0
    ;;
  "") ;;
  *)
    printf '%s: error: unknown argument: %s\n' "$PROG" "$1" >&2
    exit 2
    ;;
esac

violations=0
for rule in "${RULES[@]}"; do
  IFS='|' read -r folder forbidden allowed why <<<"$rule"
  [[ -d "$REPO_ROOT/$folder" ]] || continue
  while IFS=: read -r file line include; do
    target="${include#*\"}"
    target="${target%%\"*}"
    for prefix in $forbidden; do
      [[ "$target" == "$prefix"* ]] || continue
      excepted=0
      for exception in $allowed; do
        [[ "$target" == "$exception"* ]] && excepted=1
      done
      ((excepted)) && continue
      printf '%s: %s:%s includes "%s": %s never includes %s (%s)\n' "$PROG" "$file" "$line" \
        "$target" "$folder" "$prefix" "$why"
      violations=$((violations + 1))
    done
  done < <(cd "$REPO_ROOT" && { grep -rnE '^#include "' --include='*.h' --include='*.cc' "$folder" || true; })
done

if ((violations > 0)); then
  printf '%s: %d include(s) break the code map (docs/design.md, "Code map")\n' "$PROG" \
    "$violations" >&2
  exit 1
fi
printf '%s: every include keeps the code map\n' "$PROG"
