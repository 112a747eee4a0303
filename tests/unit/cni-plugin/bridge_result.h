#pragma once
// The previous result a chained plugin gets from bridge + host-local, as test data.

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

namespace hostport::cni::testing {

/// The host bridge and the host side of the veth (no sandbox), the container's eth0 (index 2, in
/// its sandbox) with one address of each family, routes and DNS: in `cniVersion`'s 1.x shape.
inline nlohmann::json bridgeResult(std::string_view cniVersion = "1.1.0") {
  auto result = nlohmann::json::parse(R"({
    "interfaces": [
      {"name": "cni0", "mac": "aa:bb:cc:dd:ee:01"},
      {"name": "veth1234", "mac": "aa:bb:cc:dd:ee:02"},
      {"name": "eth0", "mac": "aa:bb:cc:dd:ee:03", "sandbox": "/var/run/netns/cni-1"}
    ],
    "ips": [
      {"interface": 2, "address": "10.88.0.5/16", "gateway": "10.88.0.1"},
      {"interface": 2, "address": "fd00:88::5/64", "gateway": "fd00:88::1"}
    ],
    "routes": [{"dst": "0.0.0.0/0"}, {"dst": "::/0", "gw": "fd00:88::1"}],
    "dns": {"nameservers": ["10.88.0.1"], "search": ["cluster.local"]}
  })");
  result["cniVersion"] = std::string(cniVersion);
  return result;
}

}  // namespace hostport::cni::testing
