#include "admission/orphan_claims.h"

#include <charconv>

namespace hostport::admission {

bool keptByStatefulSet(std::string_view holder, const ClaimHolders& holders) {
  const auto dash = holder.rfind('-');
  if (dash == std::string_view::npos || dash + 1 == holder.size()) return false;
  const std::string_view digits = holder.substr(dash + 1);
  int64_t ordinal = 0;
  const auto [end, error] = std::from_chars(digits.data(), digits.data() + digits.size(), ordinal);
  if (error != std::errc() || end != digits.data() + digits.size()) return false;
  const auto set = holders.statefulSets.find(holder.substr(0, dash));
  return set != holders.statefulSets.end() && ordinal < set->second;
}

std::vector<PortClaim> OrphanClaims::pass(const std::vector<PortClaim>& claims,
                                          const ClaimHolders& holders, Clock::time_point now) {
  std::map<std::string, Missing> stillMissing;
  std::vector<PortClaim> release;
  for (const auto& claim : claims) {
    if (holders.pods.contains(claim.holder) || keptByStatefulSet(claim.holder, holders)) continue;
    const std::string key = claim.leaseName() + "\n" + claim.holder;
    const auto known = missing_.find(key);
    Missing seen = known == missing_.end() ? Missing{now, 0} : known->second;
    ++seen.passes;
    if (seen.passes >= passes_ && now - seen.first >= grace_) {
      release.push_back(claim);
      continue;
    }
    stillMissing.emplace(key, seen);
  }
  missing_ = std::move(stillMissing);
  return release;
}

}  // namespace hostport::admission
