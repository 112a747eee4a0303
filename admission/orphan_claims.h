#pragma once
// Which claims the repair loop releases (claim_repair.h): a claim whose holder no pod names is
// released only after it has been seen so in `passes` passes spanning at least `grace`, as
// kube-apiserver frees a NodePort it finds leaked only on repeated detection. A pod is slow to
// appear after its admission (the claim comes first), and a StatefulSet pod is gone for a moment
// between its deletion and its re-creation; neither may lose its port. A holder a StatefulSet
// still owns by name (`<set>-<ordinal>`, the ordinal below its replicas) is never an orphan.
// Pure: the loop lists, this decides.

#include <chrono>
#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "admission/port_claim.h"

namespace hostport::admission {

/// What the cluster has that can hold a claim.
struct ClaimHolders {
  std::set<std::string, std::less<>> pods;  // "ns/name", and each pod's hostport.io/claim-holder
  std::map<std::string, int64_t, std::less<>> statefulSets;  // "ns/name" -> spec.replicas
};

/// True when `holder` ("ns/<set>-<ordinal>") names an ordinal a StatefulSet of `holders` keeps.
bool keptByStatefulSet(std::string_view holder, const ClaimHolders& holders);

class OrphanClaims {
 public:
  using Clock = std::chrono::steady_clock;
  OrphanClaims(std::chrono::seconds grace, uint32_t passes) : grace_(grace), passes_(passes) {}

  /// One pass over every claim: the ones to release now. A claim whose holder is back is
  /// forgotten; a claim of another holder under a known name starts over.
  std::vector<PortClaim> pass(const std::vector<PortClaim>& claims, const ClaimHolders& holders,
                              Clock::time_point now);
  /// Leadership lost: a new leader counts from nothing, so a failover never releases sooner.
  void forget() { missing_.clear(); }
  std::size_t missing() const { return missing_.size(); }

 private:
  struct Missing {
    Clock::time_point first;
    uint32_t passes = 0;
  };
  std::chrono::seconds grace_;
  uint32_t passes_;
  std::map<std::string, Missing> missing_;  // by lease name '\n' holder
};

}  // namespace hostport::admission
