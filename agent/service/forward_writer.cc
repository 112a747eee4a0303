#include "agent/service/forward_writer.h"

#include "agent/forwards/lease_forwards.h"
#include "agent/log/event_log.h"

namespace hostport::agent::service {
namespace {

using log::Component;
using log::Level;

log::Field keyField(const AttachmentKey& key) { return log::untrusted("key", key.str()); }

}  // namespace

ForwardWriter::ForwardWriter(std::unique_ptr<nft::Ruleset> ruleset,
                             std::unique_ptr<hostnet::HostNetwork> network)
    : ruleset_(std::move(ruleset)), network_(std::move(network)) {}

Result<void> ForwardWriter::install(const Lease& lease) {
  std::lock_guard guard(mutex_);
  return installLocked(lease);
}

Result<void> ForwardWriter::remove(const Lease& lease) {
  std::lock_guard guard(mutex_);
  return removeLocked(lease);
}

Result<void> ForwardWriter::installLocked(const Lease& lease) {
  if (!lease.forwarding) return {};
  HOSTPORT_TRY(const nft::AttachmentPlan plan, forwards::planOf(lease));
  HOSTPORT_TRY_VOID(ruleset_->install(plan.rules));
  if (plan.routeLocalnetFor) {
    if (auto enabled = network_->enableRouteLocalnet(*plan.routeLocalnetFor); !enabled) {
      if (auto undone = ruleset_->removeExact(plan.rules); !undone) {
        log::event(Component::kTable, Level::kError, "table.rollback_failed",
                   {keyField(lease.key), {"cause", undone.error().message}});
      }
      return withContext(enabled.error(), "enabling route_localnet");
    }
  }
  flushUdpConntrack(lease, plan.udpHostPorts);
  return {};
}

Result<void> ForwardWriter::removeLocked(const Lease& lease) {
  if (!lease.forwarding) {
    HOSTPORT_TRY(const std::string owner, forwards::ownerOf(lease.key));
    HOSTPORT_TRY(const auto removed, ruleset_->remove(owner));
    flushUdpConntrack(lease, nft::udpHostPorts(removed.forwards));
    return {};
  }
  HOSTPORT_TRY(const nft::AttachmentPlan plan, forwards::planOf(lease));
  HOSTPORT_TRY_VOID(ruleset_->removeExact(plan.rules));
  flushUdpConntrack(lease, plan.udpHostPorts);
  return {};
}

void ForwardWriter::flushUdpConntrack(const Lease& lease, const std::vector<uint16_t>& ports) {
  for (const uint16_t port : ports) {
    if (auto flushed = network_->flushUdpConntrack(port); !flushed) {
      log::event(Component::kTable, Level::kWarn, "table.conntrack_flush_failed",
                 {keyField(lease.key), {"port", port}, {"cause", flushed.error().message}});
    }
  }
}

}  // namespace hostport::agent::service
