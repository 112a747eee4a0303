#pragma once
// The agent's TCP listen addresses (metricsAddress): "host:port" with the host an IP literal,
// IPv6 in brackets ("[::1]:9810"). No names: the agent resolves nothing at start, and a name that
// resolves to several addresses would leave it unclear where the port is open.

#include <cstdint>
#include <string>
#include <string_view>

#include "common/error.h"
#include "common/ip_address.h"

namespace hostport::agent::config {

struct ListenAddress {
  IpAddress address;
  uint16_t port = 0;

  /// "127.0.0.1:9810", "[::1]:9810".
  std::string str() const { return describeEndpoint(address, port); }
  friend bool operator==(const ListenAddress&, const ListenAddress&) = default;
};

/// Parses "127.0.0.1:9810", "0.0.0.0:9810", "[::1]:9810" or "[::]:9810". kInvalidArgument, the
/// text quoted and the rule it breaks, for anything else: a name, a bare IPv6 address, port 0 or a
/// port above 65535.
Result<ListenAddress> parseListenAddress(std::string_view text);

}  // namespace hostport::agent::config
