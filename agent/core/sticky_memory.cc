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
  if (pod.namespaceName.empty() || pod.name.empty() || capacity_ == 0) return;
  uint64_t rows = 0;
  for (const auto& grant : ports) rows += grant.isStatic ? 0 : 1;
  if (rows == 0) return;

  const std::string key = podKey(pod);
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

std::optional<uint16_t> StickyMemory::previous(const PodIdentity& pod, std::string_view pool,
                                               const DynamicPortRequest& request) const {
  if (pod.namespaceName.empty() || pod.name.empty()) return std::nullopt;
  const std::string key = podKey(pod);
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
