# shellcheck shell=bash
# The CNI network that scripts/demo.sh and tests/e2e/podman_test.sh both chain a port plugin
# into, in one place. Sourced, not run; needs jq.

# cni_bridge_conflist CNI_VERSION NAME BRIDGE SUBNET GATEWAY DATA_DIR CHAINED_PLUGIN
# Prints a conflist: Debian's bridge plugin (host-local IPAM in DATA_DIR, a default route, the
# bridge as the pods' gateway, hairpin mode so a pod reaches itself through its own host port,
# no masquerade), then CHAINED_PLUGIN, a JSON object such as {"type": "hostport", ...}.
# An empty GATEWAY leaves the choice to host-local (the subnet's first address).
cni_bridge_conflist() {
  (($# == 7)) || {
    printf 'cni_bridge_conflist: expected 7 arguments, got %d\n' "$#" >&2
    return 2
  }
  jq -n --arg cniVersion "$1" --arg name "$2" --arg bridge "$3" --arg subnet "$4" \
    --arg gateway "$5" --arg dataDir "$6" --argjson chained "$7" '{
      cniVersion: $cniVersion,
      name: $name,
      plugins: [
        {
          type: "bridge",
          bridge: $bridge,
          isGateway: true,
          ipMasq: false,
          hairpinMode: true,
          ipam: {
            type: "host-local",
            ranges: [[{subnet: $subnet} + (if $gateway == "" then {} else {gateway: $gateway} end)]],
            routes: [{dst: "0.0.0.0/0"}],
            dataDir: $dataDir
          }
        },
        $chained
      ]
    }'
}

# cni_plugin_config CONFLIST_FILE INDEX [PREV_RESULT] [RUNTIME_CONFIG]
# Prints what a runtime gives plugin INDEX of the conflist on stdin: the list's cniVersion and
# name, the plugin's own keys, then runtimeConfig and prevResult when given (JSON; "" for none).
cni_plugin_config() {
  jq -c --argjson index "$2" --arg prev "${3:-}" --arg runtime "${4:-}" '
    {cniVersion, name} + .plugins[$index]
    + (if $runtime == "" then {} else {runtimeConfig: ($runtime | fromjson)} end)
    + (if $prev == "" then {} else {prevResult: ($prev | fromjson)} end)' "$1"
}
