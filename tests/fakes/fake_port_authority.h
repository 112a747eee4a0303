#pragma once
// A PortAuthority (cni-plugin/port_authority.h) in memory, for tests of the plugin's verbs
// without a hostport-agent.

#include <algorithm>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "cni-plugin/port_authority.h"
#include "common/error.h"
#include "forwards/lease_forwards.h"
#include "nft/ruleset.h"

namespace hostport::cni {

/// Stands in for hostport-agent: grants what is asked, dynamic ports from 30000 up. Like the
/// agent, it installs a request's forwards into `table` (when given and the request carries
/// them) and takes the grant back when that fails; it removes them at release.
class FakePortAuthority : public PortAuthority {
 public:
  explicit FakePortAuthority(nft::Ruleset* table = nullptr) : table_(table) {}

  Result<Lease> allocate(const AllocationRequest& request) override {
    requests.push_back(request);
    if (down) return fail(ErrorCode::kUnavailable, "hostport-agent is not reachable at /x.sock");
    if (exhausted) return fail(ErrorCode::kExhausted, "pool \"default\" has no free port");
    Lease lease{request.key, request.pod, request.netns, request.pool, {}, request.forwarding, {}};
    uint16_t next = 30000;
    for (const auto& claim : request.statics) {
      lease.ports.push_back(
          {"", claim.protocol, claim.hostPort, claim.containerPort, 1, claim.hostIp, true});
    }
    for (const auto& dynamic : request.dynamics) {
      lease.ports.push_back({dynamic.name, dynamic.protocol, next, dynamic.containerPort,
                             dynamic.count, std::nullopt, false});
      next = static_cast<uint16_t>(next + dynamic.count);
    }
    if (table_ != nullptr && lease.forwarding) {
      HOSTPORT_TRY(const auto plan, forwards::planOf(lease));
      HOSTPORT_TRY_VOID(table_->install(plan.rules));
    }
    leases[request.key.str()] = lease;
    return lease;
  }
  Result<std::optional<Lease>> get(const AttachmentKey& key) override {
    if (down) return fail(ErrorCode::kUnavailable, "hostport-agent is not reachable");
    auto found = leases.find(key.str());
    return found == leases.end() ? std::nullopt : std::optional(found->second);
  }
  Result<std::optional<Lease>> release(const AttachmentKey& key) override {
    released.push_back(key.str());
    if (down) return fail(ErrorCode::kUnavailable, "hostport-agent is not reachable");
    const auto found = leases.find(key.str());
    if (found == leases.end()) return std::nullopt;
    Lease lease = found->second;
    leases.erase(found);
    if (table_ != nullptr && lease.forwarding) {
      HOSTPORT_TRY(const auto plan, forwards::planOf(lease));
      HOSTPORT_TRY_VOID(table_->removeExact(plan.rules));
    }
    return lease;
  }
  Result<void> ready() override {
    if (down) return fail(ErrorCode::kUnavailable, "hostport-agent is not reachable");
    return {};
  }
  /// Releases the leases of `network` (by their forwarding) missing from `valid`.
  Result<std::vector<Lease>> collectGarbage(const std::string& network,
                                            const std::vector<AttachmentKey>& valid) override {
    gcRequests.push_back({network, valid});
    if (down) return fail(ErrorCode::kUnavailable, "hostport-agent is not reachable");
    std::vector<Lease> collected;
    for (auto it = leases.begin(); it != leases.end();) {
      const auto& lease = it->second;
      const bool onNetwork = lease.forwarding && lease.forwarding->network == network;
      if (onNetwork && std::ranges::find(valid, lease.key) == valid.end()) {
        collected.push_back(lease);
        it = leases.erase(it);
      } else {
        ++it;
      }
    }
    return collected;
  }

  std::vector<AllocationRequest> requests;
  std::map<std::string, Lease> leases;
  std::vector<std::string> released;
  std::vector<std::pair<std::string, std::vector<AttachmentKey>>> gcRequests;
  bool down = false;
  bool exhausted = false;

 private:
  nft::Ruleset* table_;
};

}  // namespace hostport::cni
