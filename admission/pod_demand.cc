#include "admission/pod_demand.h"

#include <span>

#include "annotations/port_annotations.h"

namespace hostport::admission {

Result<PodDemand> demandOf(const PodView& pod, PodIdentity identity,
                           const agent::core::Allocator& judge) {
  const auto network =
      pod.hostNetwork ? annotations::PodNetwork::kHost : annotations::PodNetwork::kOwn;
  HOSTPORT_TRY(auto annotated, annotations::parsePortAnnotations(pod.annotations, network));
  PodDemand demand;
  AllocationRequest& request = demand.request;
  request.pod = std::move(identity);
  request.pool = std::move(annotated.pool);
  request.dynamics = std::move(annotated.dynamics);
  request.sticky = annotated.sticky;
  // A hostNetwork pod's hostPorts are its own sockets' ports (the kubelet requires them equal to
  // the containerPorts): no CNI ADD claims them, so neither does this demand.
  const std::span<const ContainerView> claiming =
      pod.hostNetwork ? std::span<const ContainerView>() : std::span(pod.containers);
  for (const ContainerView& container : claiming) {
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
