#pragma once
// The claim webhook's answer for a pod (POST /claim, a second mutating webhook whose
// matchConditions send it only pods that name a cluster pool, failurePolicy Fail): at CREATE, a
// pod whose hostport.io/ports asks a cluster pool gets its ports claimed (cluster_claimer.h) and
// written into it (claim_injection.h). Unlike /mutate it refuses: a pod it cannot claim for would
// start without its ports, so it waits instead, saying why (the pool exhausted, the API server
// unreachable). Every other pod passes untouched.
//
// Whom the claims name: "ns/name", so a pod re-created under its name gets its ports back; a pod
// created with generateName has no name yet at mutation (the API server names it after the
// mutating webhooks), so it is "ns/<generateName>*<token>", kept in hostport.io/claim-holder so
// that a reinvoked webhook finds the same claims.

#include <functional>

#include "admission/admission_review.h"
#include "admission/cluster_claimer.h"
#include "agent/core/allocator.h"

namespace hostport::admission {

/// A fresh token for a holder without a name: 16 hex digits.
using HolderToken = std::function<std::string()>;

AdmissionResponse claimPodPorts(const AdmissionRequest& review, ClusterClaimer& claimer,
                                const agent::core::Allocator& judge, const HolderToken& token);

}  // namespace hostport::admission
