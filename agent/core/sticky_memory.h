#pragma once
// Sticky ports: a pod that comes back under the same namespace/name (a StatefulSet ordinal, a
// restarted sandbox) is offered the host ports it had last time. Only the most recent pods are
// remembered (least recently granted are forgotten first), so memory stays bounded however
// many pods churn through the node.

#include <cstddef>
#include <cstdint>
#include <list>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "agent/core/lease.h"

namespace hostport::agent {

class StickyMemory {
 public:
  static constexpr std::size_t kDefaultCapacity = 4096;  // pods

  explicit StickyMemory(std::size_t capacity = kDefaultCapacity) : capacity_(capacity) {}

  /// Records the dynamic grants of `pod` in `pool`, replacing what was known of it. A pod
  /// without a namespace/name or without dynamic grants is not recorded.
  void remember(const PodIdentity& pod, std::string_view pool, const std::vector<PortGrant>& ports);
  /// The host port `pod` last got in `pool` for a request of the same name, protocol and count.
  std::optional<uint16_t> previous(const PodIdentity& pod, std::string_view pool,
                                   const DynamicPortRequest& request) const;
  std::size_t size() const { return entries_.size(); }

 private:
  struct Row {
    std::string name;
    PortProtocol protocol;
    uint16_t count;
    uint16_t hostPort;
  };
  struct Entry {
    std::string pod;  // "namespace/name"
    std::string pool;
    std::vector<Row> rows;
  };

  static std::string podKey(const PodIdentity& pod) { return pod.namespaceName + "/" + pod.name; }

  std::size_t capacity_;
  std::list<Entry> entries_;  // most recently granted first
  std::unordered_map<std::string, std::list<Entry>::iterator> byPod_;
};

}  // namespace hostport::agent
