#include "agent/daemon/pool_reservation.h"

#include "agent/log/event_log.h"

namespace hostport::agent::daemon {

Result<void> reservePoolPorts(const std::vector<core::PoolSpec>& pools,
                              const std::string& procPath) {
  std::vector<hostnet::PortRange> ranges;
  for (const auto& pool : pools) {
    for (const auto& range : pool.ranges) ranges.emplace_back(range.first, range.last);
  }
  ranges = hostnet::normalizePortRanges(std::move(ranges));
  HOSTPORT_TRY_VOID(hostnet::reserveLocalPorts(ranges, procPath));
  log::event(log::Component::kSocket, log::Level::kInfo, "socket.ports_reserved",
             {{"ranges", hostnet::formatReservedPorts(ranges)}, {"path", procPath}});
  return {};
}

}  // namespace hostport::agent::daemon
