#pragma once
// A hash set of 32-bit ids whose keys live elsewhere (the caller's slot table), so a key is kept
// once. Open addressing with linear probing and backward-shift deletion (no tombstones): 8 bytes
// a bucket, against ~40 for a node of std::unordered_set with its bucket pointer. Each bucket
// keeps 32 bits of the key's hash, so a probe skips foreign buckets without touching their keys,
// and growing never needs a key again.

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string_view>
#include <vector>

namespace hostport {

/// The hash that IdIndex users key their bytes by (packed lease keys, interned text, pod keys).
inline uint64_t hashOfBytes(std::string_view bytes) { return std::hash<std::string_view>{}(bytes); }

class IdIndex {
 public:
  /// The id whose key `matches(id)` says is the one hashing to `hash`; nullopt when none.
  template <typename Matches>
  std::optional<uint32_t> find(uint64_t hash, Matches&& matches) const {
    if (buckets_.empty()) return std::nullopt;
    const auto tag = static_cast<uint32_t>(hash);
    for (std::size_t at = tag & mask(); buckets_[at].id != kEmpty; at = (at + 1) & mask()) {
      if (buckets_[at].hash == tag && matches(buckets_[at].id)) return buckets_[at].id;
    }
    return std::nullopt;
  }

  /// Adds `id` under `hash`. The caller has checked that its key is not present.
  void insert(uint32_t id, uint64_t hash) {
    if ((size_ + 1) * 5 > buckets_.size() * 4) grow(size_ + 1);  // load at most 0.8
    place({id, static_cast<uint32_t>(hash)});
    ++size_;
  }

  /// Removes the id that `matches` under `hash`; false when there is none.
  template <typename Matches>
  bool erase(uint64_t hash, Matches&& matches) {
    if (buckets_.empty()) return false;
    const auto tag = static_cast<uint32_t>(hash);
    std::size_t hole = tag & mask();
    while (buckets_[hole].id == kEmpty || buckets_[hole].hash != tag ||
           !matches(buckets_[hole].id)) {
      if (buckets_[hole].id == kEmpty) return false;
      hole = (hole + 1) & mask();
    }
    // Pull back every later bucket of the run that may sit at the hole, so a lookup never meets
    // an empty bucket before its id.
    for (std::size_t next = (hole + 1) & mask(); buckets_[next].id != kEmpty;
         next = (next + 1) & mask()) {
      const std::size_t home = buckets_[next].hash & mask();
      if (((next - home) & mask()) >= ((next - hole) & mask())) {
        buckets_[hole] = buckets_[next];
        hole = next;
      }
    }
    buckets_[hole] = Bucket{};
    --size_;
    return true;
  }

  /// Makes room for `count` ids without growing again.
  void reserve(std::size_t count) {
    if (count * 5 > buckets_.size() * 4) grow(count);
  }

  std::size_t size() const { return size_; }

 private:
  static constexpr uint32_t kEmpty = UINT32_MAX;
  struct Bucket {
    uint32_t id = kEmpty;
    uint32_t hash = 0;
  };

  std::size_t mask() const { return buckets_.size() - 1; }

  void place(Bucket bucket) {
    std::size_t at = bucket.hash & mask();
    while (buckets_[at].id != kEmpty) at = (at + 1) & mask();
    buckets_[at] = bucket;
  }

  // A power of two with room for `count` at a load of 0.8 at most.
  void grow(std::size_t count) {
    std::size_t capacity = 16;
    while (count * 5 > capacity * 4) capacity *= 2;
    std::vector<Bucket> old(capacity);
    old.swap(buckets_);
    for (const Bucket& bucket : old) {
      if (bucket.id != kEmpty) place(bucket);
    }
  }

  std::vector<Bucket> buckets_;
  std::size_t size_ = 0;
};

}  // namespace hostport
