#include "agent/service/service_log.h"

#include "agent/api/http_errors.h"

namespace hostport::agent::service {

using log::Component;
using log::Level;

log::Field keyField(const AttachmentKey& key) { return log::untrusted("key", key.str()); }

std::string podName(const PodIdentity& pod) {
  return pod.empty() ? std::string() : pod.namespaceName + "/" + pod.name;
}

log::Field podField(const PodIdentity& pod) { return log::untrusted("pod", podName(pod)); }

std::string portsText(const std::vector<PortGrant>& ports) {
  std::string out;
  for (const auto& grant : ports) {
    if (!out.empty()) out += ',';
    out += grant.str();
  }
  return out;
}

BusyRecordingProbe::BusyRecordingProbe(core::PortProbe& probe, const AttachmentKey& key)
    : probe_(probe), key_(key), recording_(log::enabled(Component::kSocket, Level::kDebug)) {}

bool BusyRecordingProbe::isBound(Protocol protocol, uint16_t port) {
  const bool bound = probe_.isBound(protocol, port);
  if (bound && recording_) busy_.emplace_back(protocol, port);
  return bound;
}

void BusyRecordingProbe::logBusy() const {
  for (const auto& [protocol, port] : busy_) {
    log::event(Component::kSocket, Level::kDebug, "socket.busy",
               {keyField(key_), {"port", describePort(protocol, port)}});
  }
}

namespace {

/// alloc.conflict: the claimed port and who holds it (the allocator's Conflict), a host process
/// or another lease.
PendingEvent conflictEvent(const AllocationRequest& request, const core::AllocationError& error) {
  PendingEvent event{Component::kAlloc,
                     Level::kWarn,
                     "alloc.conflict",
                     {keyField(request.key), podField(request.pod)}};
  auto& fields = event.fields;
  if (const auto& conflict = error.conflict) {
    fields.emplace_back("port", describePort(conflict->protocol, conflict->port));
    if (conflict->lease) {
      fields.emplace_back("holder", "lease");
      fields.push_back(log::untrusted("holder_key", conflict->lease->key.str()));
      fields.push_back(log::untrusted("holder_pod", podName(conflict->lease->pod)));
    } else {
      fields.emplace_back("holder", "host");
      if (conflict->host.pid != 0) fields.emplace_back("pid", conflict->host.pid);
      if (!conflict->host.command.empty()) {
        fields.push_back(log::untrusted("command", conflict->host.command));
      }
    }
  }
  fields.emplace_back("cause", error.message);
  return event;
}

/// alloc.exhausted: the pool, its size and how much of it leases hold.
PendingEvent exhaustedEvent(const core::Allocator& allocator, const AllocationRequest& request,
                            const Error& error) {
  const std::string pool(request.poolName());
  PendingEvent event{Component::kAlloc,
                     Level::kWarn,
                     "alloc.exhausted",
                     {keyField(request.key), podField(request.pod), {"pool", pool}}};
  for (const auto& usage : allocator.usage()) {
    if (usage.name != pool) continue;
    event.fields.emplace_back("size", usage.size);
    event.fields.emplace_back("in_use", usage.used);
  }
  event.fields.emplace_back("cause", error.message);
  return event;
}

}  // namespace

PendingEvent refusalEvent(const core::Allocator& allocator, const AllocationRequest& request,
                          const core::AllocationError& error) {
  switch (error.code) {
    case ErrorCode::kConflict:
      return conflictEvent(request, error);
    case ErrorCode::kExhausted:
      return exhaustedEvent(allocator, request, error);
    case ErrorCode::kNotAllowed:
    case ErrorCode::kQuotaExceeded:
      return {Component::kAlloc,
              Level::kInfo,
              "alloc.rule_refused",
              {keyField(request.key),
               podField(request.pod),
               {"pool", std::string(request.poolName())},
               {"reason", error.refusal ? core::refusalName(*error.refusal) : "unknown"},
               {"cause", error.message}}};
    default:
      return {Component::kAlloc,
              Level::kInfo,
              "alloc.refused",
              {keyField(request.key),
               podField(request.pod),
               {"code", api::machineCode(error.code)},
               {"cause", error.message}}};
  }
}

void logRestoreFailed(const Lease& lease, const Error& error) {
  log::event(Component::kAlloc, Level::kError, "alloc.restore_failed",
             {keyField(lease.key),
              podField(lease.pod),
              {"pool", lease.pool},
              {"ports", portsText(lease.ports)},
              {"cause", error.message}});
}

void logUnhealthy(const Error& error) {
  log::event(Component::kAgent, Level::kError, "agent.unhealthy", {{"cause", error.message}});
}

void logWriteFailed(std::string_view record, const Lease& lease, const Error& error) {
  log::event(Component::kStore, Level::kError, "store.write_failed",
             {{"record", record}, keyField(lease.key), {"cause", error.message}});
}

}  // namespace hostport::agent::service
