#include "admission/pod_claims.h"

#include "admission/claim_injection.h"
#include "admission/json_patch.h"
#include "admission/pod_demand.h"
#include "admission/pod_view.h"
#include "annotations/annotation_names.h"
#include "annotations/port_annotations.h"
#include "common/quote.h"

namespace hostport::admission {
namespace {

/// Whom the pod's claims name: its name, or the holder an earlier pass of this webhook wrote into
/// the pod (a nameless pod's only), or a new one.
std::string holderOf(const AdmissionRequest& review, const PodView& pod, const HolderToken& token) {
  const std::string prefix = review.namespaceName + "/";
  if (!review.name.empty()) return prefix + review.name;
  const std::string generateName =
      review.object.value("metadata", nlohmann::json::object()).value("generateName", "");
  const std::string nameless = prefix + generateName + "*";
  const auto written = pod.annotations.find(annotations::kClaimHolderAnnotation);
  if (written != pod.annotations.end()) {
    const auto& holder = written->get_ref<const std::string&>();
    if (holder.starts_with(nameless) && holder.size() > nameless.size()) return holder;
  }
  return nameless + token();
}

}  // namespace

AdmissionResponse claimPodPorts(const AdmissionRequest& review, ClusterClaimer& claimer,
                                const agent::core::Allocator& judge, const HolderToken& token) {
  auto response = AdmissionResponse::allow(review.uid);
  if (!review.isPod() || review.operation != Operation::kCreate) return response;
  // What cannot be read is the validating webhook's to refuse, in the node's words.
  const auto pod = readPod(review.object);
  if (!pod) return response;
  const auto network =
      pod->hostNetwork ? annotations::PodNetwork::kHost : annotations::PodNetwork::kOwn;
  const auto asked = annotations::parsePortAnnotations(pod->annotations, network);
  if (!asked || !claimer.isClusterPool(asked->pool) || asked->dynamics.empty()) return response;
  const auto refuse = [&](const Error& error) {
    return AdmissionResponse::refuse(review.uid, error);
  };
  if (auto demand = demandOf(*pod, {review.namespaceName, review.name, ""}, judge); !demand) {
    return refuse(demand.error());
  }
  std::size_t target = 0;
  if (const auto named = pod->annotations.find(annotations::kResourceContainerAnnotation);
      named != pod->annotations.end()) {
    target = pod->containerNamed(named->get_ref<const std::string&>()).value_or(0);
  }
  if (pod->containers.empty()) return response;
  if (review.dryRun) {
    response.warnings.push_back("dry run: no port of cluster pool " + quoteText(asked->pool) +
                                " was claimed");
    return response;
  }
  const std::string holder = holderOf(review, *pod, token);
  JsonPatch patch;
  const auto claimed = claimer.claim(
      holder, asked->pool, asked->dynamics, [&](const std::vector<ClaimedEntry>& entries) {
        return injectClaims(*pod, target, asked->dynamics, entries, holder, patch);
      });
  if (!claimed) return refuse(claimed.error());
  response.patch = patch.operations();
  return response;
}

}  // namespace hostport::admission
