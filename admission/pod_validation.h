#pragma once
// The validating webhook's decision for a pod (POST /validate). At CREATE it refuses what the
// node would refuse of the pod alone, in the node's words (pod_demand.h); at UPDATE it allows a
// changed hostport annotation with a warning, since ports are decided when the sandbox is created.
// Everything else is allowed untouched: the webhook never refuses on a guess.

#include "admission/admission_review.h"
#include "agent/core/allocator.h"

namespace hostport::admission {

AdmissionResponse validatePod(const AdmissionRequest& review, const agent::core::Allocator& judge);

}  // namespace hostport::admission
