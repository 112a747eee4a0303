#pragma once
// Network configurations as the primaries write them, for the editor's and the chainer's tests.

#include <string_view>

namespace hostport::agent::cni_config::test {

/// Calico's install-cni (10-calico.conflist): nested ipam/policy/kubernetes, portmap with snat,
/// bandwidth after it. Numbers of every kind, to see them survive.
inline constexpr std::string_view kCalico = R"({
  "name": "k8s-pod-network",
  "cniVersion": "0.3.1",
  "plugins": [
    {
      "type": "calico",
      "log_level": "info",
      "log_file_path": "/var/log/calico/cni/cni.log",
      "datastore_type": "kubernetes",
      "nodename": "node-1",
      "mtu": 0,
      "ipam": {"type": "calico-ipam", "assign_ipv4": "true", "ipv4_pools": ["10.244.0.0/16"]},
      "policy": {"type": "k8s"},
      "kubernetes": {"kubeconfig": "/etc/cni/net.d/calico-kubeconfig"},
      "weights": [1.0, 1, 0.1, 1.5e-7, 18446744073709551615, -9223372036854775808]
    },
    {"type": "portmap", "snat": true, "capabilities": {"portMappings": true}},
    {"type": "bandwidth", "capabilities": {"bandwidth": true}}
  ]
})";

/// flannel (10-flannel.conflist): a delegate object, portmap.
inline constexpr std::string_view kFlannel = R"({
  "name": "cbr0",
  "cniVersion": "0.3.1",
  "plugins": [
    {"type": "flannel", "delegate": {"hairpinMode": true, "isDefaultGateway": true}},
    {"type": "portmap", "capabilities": {"portMappings": true}}
  ]
})";

/// containerd's bridge (10-containerd-net.conflist) with v4 and v6 ranges.
inline constexpr std::string_view kContainerdBridge = R"({
  "cniVersion": "1.0.0",
  "name": "containerd-net",
  "plugins": [
    {
      "type": "bridge",
      "bridge": "cni0",
      "isGateway": true,
      "ipMasq": true,
      "promiscMode": true,
      "ipam": {
        "type": "host-local",
        "ranges": [[{"subnet": "10.88.0.0/16"}], [{"subnet": "2001:4860:4860::/64"}]],
        "routes": [{"dst": "0.0.0.0/0"}, {"dst": "::/0"}]
      }
    },
    {"type": "portmap", "capabilities": {"portMappings": true}}
  ]
})";

/// A single-plugin .conf (as kubenet-era setups and many guides write it).
inline constexpr std::string_view kSingleConf = R"({
  "cniVersion": "0.4.0",
  "name": "mynet",
  "type": "bridge",
  "bridge": "cni0",
  "isGateway": true,
  "ipMasq": true,
  "ipam": {"type": "host-local", "subnet": "10.22.0.0/16", "routes": [{"dst": "0.0.0.0/0"}]}
})";

/// Cilium (05-cilium.conflist): no portmap (Cilium does hostPort itself when asked).
inline constexpr std::string_view kCilium = R"({
  "cniVersion": "0.3.1",
  "name": "cilium",
  "plugins": [
    {"type": "cilium-cni", "enable-debug": false, "log-file": "/var/run/cilium/cilium-cni.log"}
  ]
})";

}  // namespace hostport::agent::cni_config::test
