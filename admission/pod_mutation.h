#pragma once
// The mutating webhook's answer for a pod (POST /mutate), at CREATE only:
//  - a pod written for the hostport-operator gets its hostport.io/ports (operator_compat.h);
//  - the container that carries them (hostport.io/resource-container, else the first) asks the
//    scheduler for hostport.io/<pool>: as many ports as the pod takes from each pool, in requests
//    and limits alike (extended resources need both equal). The right amount already there is
//    left alone; a wrong one, or one on another container, is corrected with a warning.
// It never refuses: a pod it cannot read or judge is passed on unchanged, and the validating
// webhook (pod_validation.h) refuses it in the node's words.

#include "admission/admission_review.h"
#include "agent/core/allocator.h"

namespace hostport::admission {

struct MutationOptions {
  /// Add the hostport.io/<pool> requests. Off when the agents publish no capacity on their Node
  /// (no API access, capacitySeconds 0): a pod asking for a resource no node has never schedules.
  bool resourceRequests = true;
};

AdmissionResponse mutatePod(const AdmissionRequest& review, const agent::core::Allocator& judge,
                            const MutationOptions& options = {});

/// A whole-number quantity as the API server writes one ("3", "2k", "1Ki"); nullopt for anything
/// else (a fraction, "500m", an exponent), which the webhook then corrects.
std::optional<uint64_t> parseWholeQuantity(std::string_view quantity);

}  // namespace hostport::admission
