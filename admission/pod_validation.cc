#include "admission/pod_validation.h"

#include <set>

#include "admission/pod_demand.h"
#include "admission/pod_view.h"
#include "annotations/annotation_names.h"
#include "annotations/port_annotations.h"
#include "common/quote.h"

namespace hostport::admission {
namespace {

using nlohmann::json;

/// The annotations a pod's author writes: hostport.io/ minus what the agent writes back (its
/// publication is an UPDATE too, and must pass without a word).
json requestAnnotations(const json& pod) {
  json out = annotationsWithPrefix(pod, annotations::kPrefix);
  for (auto it = out.begin(); it != out.end();) {
    if (it.key() == annotations::kAssignedAnnotation ||
        it.key().starts_with(annotations::kAllocatedAnnotationPrefix)) {
      it = out.erase(it);
    } else {
      ++it;
    }
  }
  return out;
}

Result<void> checkResourceContainer(const PodView& pod) {
  const auto named = pod.annotations.find(annotations::kResourceContainerAnnotation);
  if (named == pod.annotations.end()) return {};
  const auto& name = named->get_ref<const std::string&>();
  if (pod.containerNamed(name)) return {};
  std::string names;
  for (const ContainerView& container : pod.containers) {
    names += (names.empty() ? "" : ", ") + container.name;
  }
  return fail(ErrorCode::kInvalidArgument,
              "annotation " + std::string(annotations::kResourceContainerAnnotation) + ": " +
                  quoteText(name) + " names no container of the pod (its containers: " + names +
                  ")");
}

AdmissionResponse validateCreate(const AdmissionRequest& review,
                                 const agent::core::Allocator& judge) {
  auto pod = readPod(review.object);
  if (!pod) return AdmissionResponse::refuse(review.uid, 400, pod.error().message);
  if (auto checked = checkResourceContainer(*pod); !checked) {
    return AdmissionResponse::refuse(review.uid, 400, checked.error().message);
  }
  auto demand = demandOf(*pod, {review.namespaceName, review.name, ""}, judge);
  if (!demand) {
    return AdmissionResponse::refuse(review.uid, demand.error());
  }
  return AdmissionResponse::allow(review.uid);
}

AdmissionResponse validateUpdate(const AdmissionRequest& review) {
  auto response = AdmissionResponse::allow(review.uid);
  const json before = requestAnnotations(review.oldObject);
  const json after = requestAnnotations(review.object);
  if (before == after) return response;
  std::set<std::string> keys;  // sorted: the warning reads the same every time
  for (const auto& [key, value] : before.items()) {
    if (!after.contains(key) || after[key] != value) keys.insert(key);
  }
  for (const auto& [key, value] : after.items()) {
    if (!before.contains(key)) keys.insert(key);
  }
  std::string changed;
  for (const std::string& key : keys) changed += (changed.empty() ? "" : ", ") + key;
  response.warnings.push_back(changed +
                              " changed: ports are decided when the pod's sandbox is created, so "
                              "this pod keeps the ones it has; a new pod gets the change");
  return response;
}

}  // namespace

AdmissionResponse validatePod(const AdmissionRequest& review, const agent::core::Allocator& judge) {
  if (!review.isPod()) return AdmissionResponse::allow(review.uid);
  switch (review.operation) {
    case Operation::kCreate:
      return validateCreate(review, judge);
    case Operation::kUpdate:
      return validateUpdate(review);
    case Operation::kDelete:
    case Operation::kConnect:
      break;
  }
  return AdmissionResponse::allow(review.uid);
}

}  // namespace hostport::admission
