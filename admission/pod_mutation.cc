#include "admission/pod_mutation.h"

#include <array>
#include <charconv>
#include <map>

#include "admission/json_patch.h"
#include "admission/operator_compat.h"
#include "admission/pod_demand.h"
#include "admission/pod_view.h"
#include "annotations/annotation_names.h"
#include "common/quote.h"

namespace hostport::admission {
namespace {

using nlohmann::json;

/// hostport.io/<pool> -> the ports the pod should ask for, for every node pool: 0 for a pool it
/// takes nothing from (a request for it is removed). A cluster pool has no resource: its ports
/// are claimed for the whole cluster, and the hostPorts the claim injects are what the scheduler
/// counts (its NodePorts filter).
using WantedResources = std::map<std::string, uint64_t, std::less<>>;

WantedResources wantedResources(const agent::core::Allocator& judge, const PodDemand& demand) {
  WantedResources wanted;
  for (const auto& pool : judge.pools()) {
    if (pool.scope == agent::core::PoolScope::kNode) {
      wanted[std::string(annotations::kResourcePrefix) + pool.name] = 0;
    }
  }
  for (const auto& pool : demand.pools) {
    const auto known = wanted.find(std::string(annotations::kResourcePrefix) + pool.pool);
    if (known != wanted.end()) known->second = pool.ports;
  }
  return wanted;
}

/// The quantity text `container` has for `resource` in `list`, or nullopt.
std::optional<std::string_view> quantityOf(
    const std::map<std::string, std::string, std::less<>>& list, std::string_view resource) {
  const auto found = list.find(resource);
  if (found == list.end()) return std::nullopt;
  return found->second;
}

/// Adds the patch operations that make the pod's containers ask for `wanted`, on `target` alone.
void patchResources(const PodView& pod, std::size_t target, const WantedResources& wanted,
                    JsonPatch& patch, std::vector<std::string>& warnings) {
  // What each container should end up with for each resource (nullopt: none), and the
  // resources and limits objects a container needs added whole.
  for (std::size_t index = 0; index < pod.containers.size(); ++index) {
    const ContainerView& container = pod.containers[index];
    const std::string position = std::to_string(index);
    json addRequests = json::object();
    json addLimits = json::object();
    for (const auto& [resource, ports] : wanted) {
      const bool carries = index == target && ports > 0;
      const std::string want = std::to_string(ports);
      for (const auto& [list, key, additions] :
           {std::tuple{&container.requests, "requests", &addRequests},
            std::tuple{&container.limits, "limits", &addLimits}}) {
        const auto have = quantityOf(*list, resource);
        if (carries && have && parseWholeQuantity(*have) == ports) continue;
        if (!carries && !have) continue;
        if (have) {
          warnings.push_back("container " + quoteText(container.name) + " " + key + " " + resource +
                             ": " + quoteText(*have) + " corrected to " +
                             (carries ? want : "none") + ", the ports the pod takes from the pool");
        }
        if (carries) {
          (*additions)[resource] = want;
        } else {
          patch.remove(jsonPointer({"spec", "containers", position, "resources", key, resource}));
        }
      }
    }
    if (addRequests.empty() && addLimits.empty()) continue;
    if (!container.hasResources) {
      patch.add(jsonPointer({"spec", "containers", position, "resources"}),
                {{"requests", addRequests}, {"limits", addLimits}});
      continue;
    }
    for (const auto& [key, additions, present] :
         {std::tuple{"requests", &addRequests, container.hasRequests},
          std::tuple{"limits", &addLimits, container.hasLimits}}) {
      if (additions->empty()) continue;
      if (!present) {
        patch.add(jsonPointer({"spec", "containers", position, "resources", key}), *additions);
        continue;
      }
      for (const auto& [resource, quantity] : additions->items()) {
        patch.add(jsonPointer({"spec", "containers", position, "resources", key, resource}),
                  quantity);
      }
    }
  }
}

}  // namespace

std::optional<uint64_t> parseWholeQuantity(std::string_view quantity) {
  constexpr std::array kSuffixes = {std::pair{std::string_view(""), uint64_t{1}},
                                    std::pair{std::string_view("k"), uint64_t{1000}},
                                    std::pair{std::string_view("M"), uint64_t{1000'000}},
                                    std::pair{std::string_view("Ki"), uint64_t{1} << 10},
                                    std::pair{std::string_view("Mi"), uint64_t{1} << 20}};
  uint64_t number = 0;
  const auto [end, error] =
      std::from_chars(quantity.data(), quantity.data() + quantity.size(), number);
  if (error != std::errc() || end == quantity.data()) return std::nullopt;
  const std::string_view suffix(end, quantity.data() + quantity.size() - end);
  for (const auto& [name, factor] : kSuffixes) {
    if (suffix == name && number <= UINT32_MAX) return number * factor;
  }
  return std::nullopt;
}

AdmissionResponse mutatePod(const AdmissionRequest& review, const agent::core::Allocator& judge,
                            const MutationOptions& options) {
  auto response = AdmissionResponse::allow(review.uid);
  if (!review.isPod() || review.operation != Operation::kCreate) return response;
  auto pod = readPod(review.object);
  if (!pod) return response;

  JsonPatch patch;
  auto translated = translateOperatorStyle(*pod);
  response.warnings = std::move(translated.warnings);
  if (translated.portsAnnotation) {
    const std::string key(annotations::kPortsAnnotation);
    if (pod->hasAnnotations) {
      patch.add(jsonPointer({"metadata", "annotations", key}), *translated.portsAnnotation);
    } else {
      patch.add(jsonPointer({"metadata", "annotations"}), {{key, *translated.portsAnnotation}});
    }
    pod->annotations[key] = *translated.portsAnnotation;
  }

  if (options.resourceRequests && !pod->containers.empty()) {
    std::optional<std::size_t> target = 0;
    const auto named = pod->annotations.find(annotations::kResourceContainerAnnotation);
    if (named != pod->annotations.end()) {
      target = pod->containerNamed(named->get_ref<const std::string&>());
    }
    if (auto demand = demandOf(*pod, {review.namespaceName, review.name, ""}, judge);
        demand && target) {
      patchResources(*pod, *target, wantedResources(judge, *demand), patch, response.warnings);
    }
  }
  response.patch = patch.operations();
  return response;
}

}  // namespace hostport::admission
