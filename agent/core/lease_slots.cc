#include "agent/core/lease_slots.h"

#include <algorithm>
#include <string>
#include <utility>

namespace hostport::agent::core {
namespace {

uint64_t hashOf(const NetnsId& netns) {
  return hashOfBytes(std::string_view(reinterpret_cast<const char*>(&netns.inode), 8)) ^
         netns.device * 0x9E3779B97F4A7C15ULL;
}

/// The UID a lease is found by: the hostNetwork pod its key names, else its pod's. (A hostNetwork
/// lease's key is made from its pod's UID.)
std::string_view podUidOf(const Lease& lease) {
  const std::string_view keyed = lease.key.hostNetworkPodUid();
  return keyed.empty() ? std::string_view(lease.pod.uid) : keyed;
}

}  // namespace

PackedLease LeaseSlots::pack(const Lease& lease, std::string_view pool) {
  return PackedLease::pack(lease, pool, strings_);
}

uint32_t LeaseSlots::insert(PackedLease packed, const Lease& lease) {
  uint32_t slot;
  if (freeSlots_.empty()) {
    slot = static_cast<uint32_t>(slots_.size());
    slots_.emplace_back();
  } else {
    slot = freeSlots_.back();
    freeSlots_.pop_back();
  }
  slots_[slot] = std::move(packed);
  index_.insert(slot, hashOfBytes(slots_[slot].keyBytes()));
  if (lease.netnsId.known()) byNetns_.add(slot, hashOf(lease.netnsId));
  if (const std::string_view uid = podUidOf(lease); !uid.empty())
    byPod_.add(slot, hashOfBytes(uid));
  return slot;
}

Lease LeaseSlots::remove(uint32_t slot) {
  PackedLease& packed = slots_[slot];
  Lease lease = packed.unpack(strings_);
  // While the packed key, which the index hashes, is still there.
  index_.erase(hashOfBytes(packed.keyBytes()), [&](uint32_t at) { return at == slot; });
  if (lease.netnsId.known()) byNetns_.remove(slot);
  if (!podUidOf(lease).empty()) byPod_.remove(slot);
  packed.release(strings_);
  freeSlots_.push_back(slot);
  return lease;
}

std::optional<uint32_t> LeaseSlots::find(std::string_view keyBytes) const {
  return index_.find(hashOfBytes(keyBytes),
                     [&](uint32_t slot) { return slots_[slot].keyBytes() == keyBytes; });
}

std::optional<uint32_t> LeaseSlots::find(const AttachmentKey& key) const {
  std::string bytes;
  PackedLease::packKey(key, bytes);
  return find(bytes);
}

std::vector<uint32_t> LeaseSlots::inNetns(const NetnsId& netns) const {
  std::vector<uint32_t> found;
  if (!netns.known()) return found;
  byNetns_.forEach(hashOf(netns), [&](uint32_t slot) {
    if (leaseAt(slot).netnsId == netns) found.push_back(slot);
  });
  return found;
}

std::vector<uint32_t> LeaseSlots::ofPod(std::string_view uid) const {
  std::vector<uint32_t> found;
  if (uid.empty()) return found;
  byPod_.forEach(hashOfBytes(uid), [&](uint32_t slot) {
    if (podUidOf(leaseAt(slot)) == uid) found.push_back(slot);
  });
  return found;
}

// The keys are unpacked into one buffer and compared there, so sorting allocates nothing per
// comparison.
std::vector<uint32_t> LeaseSlots::keyOrder() const {
  struct Entry {
    std::size_t at;  // in `text`: the container ID, then the ifname
    uint32_t idLength;
    uint32_t ifnameLength;
    uint32_t slot;
  };
  std::vector<Entry> entries;
  entries.reserve(index_.size());
  std::string text;
  for (uint32_t slot = 0; slot < slots_.size(); ++slot) {
    if (slots_[slot].empty()) continue;
    const AttachmentKey key = slots_[slot].key();
    entries.push_back({text.size(), static_cast<uint32_t>(key.containerId.size()),
                       static_cast<uint32_t>(key.ifname.size()), slot});
    text += key.containerId;
    text += key.ifname;
  }
  const std::string_view all(text);
  const auto keyOf = [&](const Entry& entry) {
    return std::pair(all.substr(entry.at, entry.idLength),
                     all.substr(entry.at + entry.idLength, entry.ifnameLength));
  };
  std::ranges::sort(entries, [&](const Entry& a, const Entry& b) { return keyOf(a) < keyOf(b); });
  std::vector<uint32_t> order;
  order.reserve(entries.size());
  for (const Entry& entry : entries) order.push_back(entry.slot);
  return order;
}

void LeaseSlots::reserve(std::size_t leases) {
  slots_.reserve(leases);
  index_.reserve(leases);
}

}  // namespace hostport::agent::core
