#pragma once
// A HostNetwork (hostnet/host_network.h) in memory, for tests of the plugin's verbs without a
// kernel.

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "common/error.h"
#include "hostnet/host_network.h"

namespace hostport::hostnet {

/// In-memory HostNetwork: records the pods and ports it was asked about; can refuse route_localnet;
/// holds the addresses it calls local.
class FakeHostNetwork : public HostNetwork {
 public:
  using HostNetwork::enableRouteLocalnet;
  Result<void> enableRouteLocalnet(std::span<const IpAddress> podIps) override {
    ++localnetCalls;
    for (const IpAddress& podIp : podIps) {
      if (std::ranges::find(refuseLocalnetFor, podIp.str()) != refuseLocalnetFor.end()) {
        return fail(ErrorCode::kKernel, "cannot write route_localnet for " + podIp.str());
      }
    }
    for (const IpAddress& podIp : podIps) localnetFor.push_back(podIp.str());
    if (failLocalnet) return fail(ErrorCode::kKernel, "cannot write route_localnet");
    return {};
  }
  Result<int> flushUdpConntrack(const std::vector<uint16_t>& ports) override {
    flushedPorts.insert(flushedPorts.end(), ports.begin(), ports.end());
    if (failFlush) return fail(ErrorCode::kKernel, "cannot flush conntrack");
    return 0;
  }
  Result<bool> isLocalAddress(const IpAddress& address) override {
    if (failLocalLookup) return fail(ErrorCode::kKernel, "cannot look the route up");
    return std::ranges::find(localAddresses, address.str()) != localAddresses.end();
  }
  std::vector<std::string> localAddresses;  // what isLocalAddress() says is the node's
  bool failLocalLookup = false;
  std::vector<std::string> localnetFor;
  int localnetCalls = 0;
  std::vector<std::string> refuseLocalnetFor;  // a call naming one of these fails whole
  std::vector<uint16_t> flushedPorts;
  bool failLocalnet = false;
  bool failFlush = false;
};

}  // namespace hostport::hostnet
