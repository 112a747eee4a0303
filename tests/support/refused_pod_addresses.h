#pragma once
// Pod addresses no pod may have (common/pod_address.h), one or more per class of refusal, with a
// word the refusal must say. The plugin (from prevResult) and the agent (from a request) apply
// the one policy, so their tests walk the one table.

#include <string>
#include <utility>
#include <vector>

namespace hostport::test {

inline const std::vector<std::pair<std::string, std::string>>& refusedPodAddresses() {
  static const std::vector<std::pair<std::string, std::string>> addresses = {
      {"127.0.0.1/8", "loopback"},
      {"0.0.0.0/0", "0.0.0.0/8"},
      {"10.88.0.5/0", "wider than /8"},
      {"169.254.169.254/16", "link-local"},
      {"224.0.0.1/24", "multicast"},
      {"255.255.255.255/32", "broadcast"},
      {"10.88.0.255/24", "broadcast"},
      {"10.88.255.255/16", "broadcast"},
      {"10.88.0.0/24", "network address"},
      {"10.88.0.0/16", "network address"},
      {"::1/128", "loopback"},
      {"::/0", "unspecified"},
      {"fe80::1/64", "link-local"},
      {"fe80::5/64", "link-local"},
      {"ff02::1/64", "multicast"},
      {"::ffff:127.0.0.1/96", "IPv4-mapped"},
      {"fd00::5/8", "wider than /48"},
      {"fd00::5/16", "wider than /48"},
  };
  return addresses;
}

}  // namespace hostport::test
