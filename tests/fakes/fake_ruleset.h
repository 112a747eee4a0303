#pragma once
// A Ruleset (nft/ruleset.h) in memory, for tests of the plugin's verbs without a kernel.

#include <algorithm>
#include <map>
#include <optional>
#include <string>

#include "common/error.h"
#include "nft/ruleset.h"

namespace hostport::nft {

/// In-memory Ruleset: owners' rules by owner; a key held by another owner is a conflict.
class FakeRuleset : public Ruleset {
 public:
  Result<void> ensureTables() override {
    ++ensureCalls;
    return {};
  }
  Result<void> install(const AttachmentRules& rules) override {
    if (conflict)
      return fail(ErrorCode::kConflict, "host port is already forwarded for other/eth0");
    auto& held = installed[rules.owner];
    held.owner = rules.owner;
    for (const auto& forward : rules.forwards) held.forwards.push_back(forward);
    for (const auto& masquerade : rules.masquerades) held.masquerades.push_back(masquerade);
    for (const auto& subnet : rules.podSubnets) {
      if (std::ranges::find(podSubnets, subnet) == podSubnets.end()) podSubnets.push_back(subnet);
    }
    return {};
  }
  Result<void> installMany(const std::vector<const AttachmentRules*>& attachments) override {
    ++installManyCalls;
    if (conflict) return fail(ErrorCode::kKernel, "adding set elements: File exists");
    for (const AttachmentRules* rules : attachments) HOSTPORT_TRY_VOID(install(*rules));
    return {};
  }
  Result<AttachmentRules> remove(const std::string& owner) override {
    ++removeCalls;
    if (removeFails) return fail(ErrorCode::kKernel, "nft: " + *removeFails);
    auto found = installed.find(owner);
    if (found == installed.end()) return AttachmentRules{owner, {}, {}};
    auto removed = found->second;
    removed.podSubnets.clear();
    installed.erase(found);
    return removed;
  }
  Result<void> removeExact(const AttachmentRules& rules) override {
    ++removeExactCalls;
    HOSTPORT_TRY_VOID(remove(rules.owner));
    return {};
  }
  /// Removes the owner's forwards and masquerades that `planned` names; another owner's stay.
  Result<AttachmentRules> removeIfOwned(const AttachmentRules& planned) override {
    ++removeIfOwnedCalls;
    if (removeFails) return fail(ErrorCode::kKernel, "nft: " + *removeFails);
    AttachmentRules removed{planned.owner, {}, {}};
    auto found = installed.find(planned.owner);
    if (found == installed.end()) return removed;
    auto& held = found->second;
    for (const auto& forward : planned.forwards) {
      if (std::erase(held.forwards, forward) > 0) removed.forwards.push_back(forward);
    }
    for (const auto& masquerade : planned.masquerades) {
      if (std::erase(held.masquerades, masquerade) > 0) removed.masquerades.push_back(masquerade);
    }
    if (held.forwards.empty() && held.masquerades.empty()) installed.erase(found);
    return removed;
  }
  Result<void> scanElements(TableScan& scan) override {
    for (const auto& [owner, rules] : installed) {
      for (const auto& forward : rules.forwards) {
        // A rule of the conditional chain reads as its owner and handle alone, as the kernel's.
        if (forward.conditions.empty()) {
          scan.forward(owner, forward, std::nullopt);
        } else {
          scan.forward(owner, unidentifiedRule(forward.family()), 1);
        }
      }
      for (const auto& masquerade : rules.masquerades) scan.masquerade(owner, masquerade);
    }
    for (const auto& subnet : podSubnets) scan.podSubnet(subnet);
    return {};
  }
  /// Unknown, so a reconciler over this fake compares at every pass.
  Result<std::optional<uint32_t>> generation() override { return std::optional<uint32_t>(); }
  Result<AttachmentRules> listOwned(const std::string& owner) override {
    auto found = installed.find(owner);
    AttachmentRules rules =
        found == installed.end() ? AttachmentRules{owner, {}, {}} : found->second;
    rules.podSubnets = podSubnets;
    return rules;
  }
  Result<void> removePodSubnets(const std::vector<IpPrefix>& subnets) override {
    std::erase_if(podSubnets, [&](const IpPrefix& subnet) {
      return std::ranges::find(subnets, subnet) != subnets.end();
    });
    return {};
  }

  std::map<std::string, AttachmentRules> installed;  // what each owner holds, without subnets
  std::vector<IpPrefix> podSubnets;                  // shared, as the kernel's podnets set
  int ensureCalls = 0;
  int removeExactCalls = 0;
  int removeCalls = 0;  // each one a listing of every element in the kernel
  int installManyCalls = 0;
  int removeIfOwnedCalls = 0;
  bool conflict = false;
  std::optional<std::string> removeFails;  // set: every removal fails with this kernel error
};

}  // namespace hostport::nft
