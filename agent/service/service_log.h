#pragma once
// The service's log events: the fields every event of an attachment carries, and the events of
// a refused allocation, built while the service's lock is held (they read the allocator) and
// logged once it is released, so logging never holds up the allocator.

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "agent/core/allocator.h"
#include "agent/log/event_log.h"
#include "lease/lease.h"

namespace hostport::agent::service {

log::Field keyField(const AttachmentKey& key);
/// "namespace/name", or empty for a lease without a pod.
std::string podName(const PodIdentity& pod);
log::Field podField(const PodIdentity& pod);
/// The grants as `PortGrant::str()` writes them, comma-separated.
std::string portsText(const std::vector<PortGrant>& ports);

/// An event built under the service's lock and logged once it is released.
struct PendingEvent {
  log::Component component = log::Component::kAlloc;
  log::Level level = log::Level::kInfo;
  std::string_view name;
  std::vector<log::Field> fields;

  void emit() const { log::event(component, level, name, fields); }
};

/// The request's probe, passed through; remembers the ports it found bound, for socket.busy
/// (debug), logged once the lock is released.
class BusyRecordingProbe final : public core::PortProbe {
 public:
  BusyRecordingProbe(core::PortProbe& probe, const AttachmentKey& key);

  bool isBound(Protocol protocol, uint16_t port) override;
  core::PortHolder holderOf(Protocol protocol, uint16_t port) override {
    return probe_.holderOf(protocol, port);
  }
  /// socket.busy for each bound port found; call without the service's lock.
  void logBusy() const;

 private:
  core::PortProbe& probe_;
  const AttachmentKey& key_;
  const bool recording_;
  std::vector<std::pair<Protocol, uint16_t>> busy_;
};

/// Why the allocator refused `request`: alloc.conflict (the port and who holds it),
/// alloc.exhausted (the pool's size and use), alloc.rule_refused or alloc.refused.
PendingEvent refusalEvent(const core::Allocator& allocator, const AllocationRequest& request,
                          const core::AllocationError& error);

/// alloc.restore_failed: a lease whose release did not reach the disk could not be put back (its
/// ports were granted again meanwhile). Memory and journal now disagree until the agent restarts
/// and recovers from the journal, which it must: the failed write made it unhealthy.
void logRestoreFailed(const Lease& lease, const Error& error);

/// agent.unhealthy, with the first failure's cause.
void logUnhealthy(const Error& error);

/// store.write_failed: the record whose outcome is now unknown (it may reappear after restart).
void logWriteFailed(std::string_view record, const Lease& lease, const Error& error);

}  // namespace hostport::agent::service
