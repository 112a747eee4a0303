#pragma once
// AdmissionReview bodies as kube-apiserver posts them (the shape of the Kubernetes docs' example,
// "Dynamic Admission Control"), around a pod the test builds, and the pools the tests judge by.

#include <nlohmann/json.hpp>
#include <string>

#include "agent/core/allocator.h"

namespace hostport::admission::samples {

/// A pod as the API server sends it after defaulting: one container "app" with no ports.
inline nlohmann::json samplePod(nlohmann::json annotations = nlohmann::json::object()) {
  nlohmann::json pod = {{"apiVersion", "v1"},
                        {"kind", "Pod"},
                        {"metadata", {{"name", "game-0"}, {"namespace", "games-eu"}}},
                        {"spec",
                         {{"containers",
                           {{{"name", "app"},
                             {"image", "registry.example/game:1.0"},
                             {"resources", nlohmann::json::object()},
                             {"terminationMessagePolicy", "File"}}}},
                          {"restartPolicy", "Always"},
                          {"dnsPolicy", "ClusterFirst"}}}};
  if (!annotations.empty()) pod["metadata"]["annotations"] = std::move(annotations);
  return pod;
}

/// The review of `operation` on `object` (and `oldObject` for an UPDATE).
inline nlohmann::json podReview(const nlohmann::json& object, std::string operation = "CREATE",
                                nlohmann::json oldObject = nullptr) {
  nlohmann::json request = {
      {"uid", "705ab4f5-6393-11e8-b7cc-42010a800002"},
      {"kind", {{"group", ""}, {"version", "v1"}, {"kind", "Pod"}}},
      {"resource", {{"group", ""}, {"version", "v1"}, {"resource", "pods"}}},
      {"requestKind", {{"group", ""}, {"version", "v1"}, {"kind", "Pod"}}},
      {"requestResource", {{"group", ""}, {"version", "v1"}, {"resource", "pods"}}},
      {"name", "game-0"},
      {"namespace", "games-eu"},
      {"operation", std::move(operation)},
      {"userInfo",
       {{"username", "admin"},
        {"uid", "014fbff9a07c"},
        {"groups", {"system:authenticated", "my-admin-group"}},
        {"extra", {{"some-key", {"some-value1", "some-value2"}}}}}},
      {"object", object},
      {"options", {{"apiVersion", "meta.k8s.io/v1"}, {"kind", "CreateOptions"}}},
      {"dryRun", false}};
  if (!oldObject.is_null()) request["oldObject"] = std::move(oldObject);
  return {{"apiVersion", "admission.k8s.io/v1"}, {"kind", "AdmissionReview"}, {"request", request}};
}

/// "default" 40000-40999 for anyone; "games" 30000-30999, udp only, games-* namespaces, at most
/// 16 ports a pod.
inline agent::core::Allocator samplePools() {
  using namespace agent::core;
  std::vector<PoolSpec> pools{{"default", {{40000, 40999}}, {}, Strategy::kLowest, 0, {}},
                              {"games",
                               {{30000, 30999}},
                               {PortProtocol::kUdp},
                               Strategy::kLowest,
                               0,
                               PoolRules{{"games-*"}, {}, 16}}};
  return std::move(*Allocator::create(std::move(pools), [] { return uint64_t{0}; }));
}

}  // namespace hostport::admission::samples
