#include "admission/pod_demand.h"

#include "annotations/port_annotations.h"

namespace hostport::admission {

Result<PodDemand> demandOf(const PodView& pod, PodIdentity identity,
                           const agent::core::Allocator& judge) {
  HOSTPORT_TRY(auto annotated, annotations::parsePortAnnotations(pod.annotations));
  PodDemand demand;
  AllocationRequest& request = demand.request;
  request.pod = std::move(identity);
  request.pool = std::move(annotated.pool);
  request.dynamics = std::move(annotated.dynamics);
  request.sticky = annotated.sticky;
  for (const ContainerView& container : pod.containers) {
    for (const ContainerPortView& port : container.ports) {
      if (port.hostPort == 0) continue;
      request.statics.push_back(
          {port.hostPort, port.containerPort, portProtocol(port.protocol), port.hostIp});
    }
  }
  if (request.statics.empty() && request.dynamics.empty()) return demand;
  auto pools = judge.judge(request);
  if (!pools) return std::unexpected(Error(std::move(pools.error())));
  demand.pools = std::move(*pools);
  return demand;
}

}  // namespace hostport::admission
