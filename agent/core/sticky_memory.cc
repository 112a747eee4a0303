#include "agent/core/sticky_memory.h"

#include "agent/core/packed_text.h"

namespace hostport::agent::core {

std::string_view StickyMemory::keyOf(const Entry& entry) {
  return packed::ByteReader(reinterpret_cast<const uint8_t*>(entry.packed.data())).bytes();
}

std::optional<uint32_t> StickyMemory::find(std::string_view key, uint64_t hash) const {
  return index_.find(hash, [&](uint32_t at) { return keyOf(entries_[at]) == key; });
}

void StickyMemory::unlink(uint32_t at) {
  Entry& entry = entries_[at];
  (entry.newer == kNone ? newest_ : entries_[entry.newer].older) = entry.older;
  (entry.older == kNone ? oldest_ : entries_[entry.older].newer) = entry.newer;
  entry.newer = entry.older = kNone;
}

void StickyMemory::makeNewest(uint32_t at) {
  entries_[at].older = newest_;
  if (newest_ != kNone) entries_[newest_].newer = at;
  newest_ = at;
  if (oldest_ == kNone) oldest_ = at;
}

void StickyMemory::remember(const PodIdentity& pod, std::string_view pool,
                            const std::vector<PortGrant>& ports) {
  remember(pod.namespaceName, pod.name, pool, ports);
}

void StickyMemory::remember(std::string_view namespaceName, std::string_view name,
                            std::string_view pool, const std::vector<PortGrant>& ports) {
  if (namespaceName.empty() || name.empty() || capacity_ == 0) return;
  uint64_t rows = 0;
  for (const auto& grant : ports) rows += grant.isStatic ? 0 : 1;
  if (rows == 0) return;

  const std::string key = podKey(namespaceName, name);
  const uint64_t hash = hashOfBytes(key);
  uint32_t at;
  if (const auto found = find(key, hash)) {
    at = *found;
    unlink(at);
  } else {
    if (index_.size() >= capacity_) {
      at = oldest_;  // forgotten; its slot and string buffer take the new pod
      index_.erase(hashOfBytes(keyOf(entries_[at])), [at](uint32_t other) { return other == at; });
      unlink(at);
    } else if (!freeSlots_.empty()) {
      at = freeSlots_.back();
      freeSlots_.pop_back();
    } else {
      at = static_cast<uint32_t>(entries_.size());
      entries_.emplace_back();
    }
    index_.insert(at, hash);
  }
  std::string& out = entries_[at].packed;
  out.clear();
  packed::putBytes(out, key);
  packed::putBytes(out, pool);
  packed::putVarint(out, rows);
  for (const auto& grant : ports) {
    if (grant.isStatic) continue;
    packed::putBytes(out, grant.name);
    out.push_back(static_cast<char>(grant.protocol));
    packed::putU16(out, grant.count);
    packed::putU16(out, grant.hostPort);
  }
  makeNewest(at);
}

void StickyMemory::forget(const PodIdentity& pod) {
  if (pod.namespaceName.empty() || pod.name.empty()) return;
  forget(podKey(pod.namespaceName, pod.name));
}

void StickyMemory::forget(std::string_view key) {
  const uint64_t hash = hashOfBytes(key);
  const auto found = find(key, hash);
  if (!found) return;
  const uint32_t at = *found;
  index_.erase(hash, [at](uint32_t other) { return other == at; });
  unlink(at);
  entries_[at].packed.clear();
  freeSlots_.push_back(at);
}

void StickyMemory::record(const Lease& lease) {
  if (lease.sticky) {
    remember(lease.pod, lease.pool, lease.ports);
  } else {
    forget(lease.pod);
  }
}

void StickyMemory::apply(const StickyEntry& entry) {
  if (entry.forget) {
    if (!entry.namespaceName.empty() && !entry.name.empty()) {
      forget(podKey(entry.namespaceName, entry.name));
    }
    return;
  }
  remember(entry.namespaceName, entry.name, entry.pool, entry.ports);
}

std::vector<StickyEntry> StickyMemory::entries() const {
  std::vector<StickyEntry> out;
  out.reserve(index_.size());
  for (uint32_t at = oldest_; at != kNone; at = entries_[at].newer) {
    packed::ByteReader in(reinterpret_cast<const uint8_t*>(entries_[at].packed.data()));
    const std::string_view key = in.bytes();
    const std::size_t slash = key.find('/');  // neither a namespace nor a pod name holds one
    StickyEntry entry{std::string(key.substr(0, slash)),
                      std::string(key.substr(slash + 1)),
                      std::string(in.bytes()),
                      {},
                      false};
    for (uint64_t rows = in.varint(); rows > 0; --rows) {
      PortGrant grant;
      grant.name = std::string(in.bytes());
      grant.protocol = static_cast<PortProtocol>(in.u8());
      grant.count = in.u16();
      grant.hostPort = in.u16();
      entry.ports.push_back(std::move(grant));
    }
    out.push_back(std::move(entry));
  }
  return out;
}

std::optional<uint16_t> StickyMemory::previous(const PodIdentity& pod, std::string_view pool,
                                               const DynamicPortRequest& request) const {
  if (pod.namespaceName.empty() || pod.name.empty()) return std::nullopt;
  const std::string key = podKey(pod.namespaceName, pod.name);
  const auto found = find(key, hashOfBytes(key));
  if (!found) return std::nullopt;
  packed::ByteReader in(reinterpret_cast<const uint8_t*>(entries_[*found].packed.data()));
  in.bytes();  // the key
  if (in.bytes() != pool) return std::nullopt;
  for (uint64_t rows = in.varint(); rows > 0; --rows) {
    const std::string_view name = in.bytes();
    const auto protocol = static_cast<PortProtocol>(in.u8());
    const uint16_t count = in.u16();
    const uint16_t hostPort = in.u16();
    if (name == request.name && protocol == request.protocol && count == request.count) {
      return hostPort;
    }
  }
  return std::nullopt;
}

}  // namespace hostport::agent::core
