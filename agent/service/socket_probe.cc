#include "agent/service/socket_probe.h"

#include <linux/netlink.h>

#include <algorithm>

#include "hostnet/socket_owner.h"

namespace hostport::agent::service {
namespace {

void addProtocols(PortProtocol protocol, std::vector<Protocol>& out) {
  for (const Protocol kernel : kernelProtocols(protocol)) {
    if (std::ranges::find(out, kernel) == out.end()) out.push_back(kernel);
  }
}

}  // namespace

ProbeScope scopeOf(const AllocationRequest& request, std::span<const hostnet::PortSpan> poolPorts) {
  ProbeScope scope;
  std::vector<hostnet::PortSpan> ports(poolPorts.begin(), poolPorts.end());
  for (const auto& claim : request.statics) {
    addProtocols(claim.protocol, scope.protocols);
    ports.push_back({claim.hostPort, claim.hostPort});
  }
  for (const auto& row : request.dynamics) addProtocols(row.protocol, scope.protocols);
  std::ranges::sort(scope.protocols);
  scope.ports = hostnet::normalizedSpans(std::move(ports));
  return scope;
}

std::vector<hostnet::PortSpan> poolSpans(const std::vector<core::PoolSpec>& pools) {
  std::vector<hostnet::PortSpan> spans;
  for (const auto& pool : pools) {
    for (const auto& range : pool.ranges) spans.push_back({range.first, range.last});
  }
  return hostnet::normalizedSpans(std::move(spans));
}

Result<std::unique_ptr<core::PortProbe>> SocketTableProbe::snapshot(
    netlink::NetlinkSocketPool& sockets, const ProbeScope& scope) {
  std::unique_ptr<SocketTableProbe> probe(new SocketTableProbe(sockets));
  if (scope.protocols.empty()) return probe;  // a request without ports asks nothing
  auto table =
      hostnet::SocketTable::snapshot(sockets, {.protocols = scope.protocols, .ports = scope.ports});
  if (!table) return withContext(table.error(), "reading the host's sockets");
  probe->tables_.push_back(std::move(*table));
  return probe;
}

const hostnet::SocketTable* SocketTableProbe::tableFor(Protocol protocol, uint16_t port) {
  for (const auto& table : tables_) {
    if (table.covers(protocol, port)) return &table;
  }
  auto table = hostnet::SocketTable::snapshot(sockets_, {.protocols = {protocol}, .ports = {}});
  if (!table) return nullptr;
  tables_.push_back(std::move(*table));
  return &tables_.back();
}

bool SocketTableProbe::isBound(Protocol protocol, uint16_t port) {
  const hostnet::SocketTable* table = tableFor(protocol, port);
  return table == nullptr || table->isBound(protocol, port);
}

core::PortHolder SocketTableProbe::holderOf(Protocol protocol, uint16_t port) {
  core::PortHolder holder;
  const hostnet::SocketTable* table = tableFor(protocol, port);
  if (table == nullptr) return holder;
  if (const auto inode = table->inodeOf(protocol, port)) {
    auto owner = hostnet::findSocketOwner(*inode);
    if (owner && *owner) {
      holder.pid = (*owner)->pid;
      holder.command = (*owner)->command;
    }
  }
  return holder;
}

Result<SocketProbeFactory> SocketProbeFactory::create(const std::vector<core::PoolSpec>& pools) {
  HOSTPORT_TRY(auto sockets, netlink::NetlinkSocketPool::create(NETLINK_SOCK_DIAG));
  return SocketProbeFactory(std::make_shared<netlink::NetlinkSocketPool>(std::move(sockets)),
                            poolSpans(pools));
}

Result<std::unique_ptr<core::PortProbe>> SocketProbeFactory::operator()(
    const AllocationRequest& request) const {
  return SocketTableProbe::snapshot(*sockets_, scopeOf(request, poolPorts_));
}

}  // namespace hostport::agent::service
