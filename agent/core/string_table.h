#pragma once
// Interned text that many leases share: pool names, pod namespaces, netns directories. A packed
// lease keeps a small id instead of the text. Entries are counted and dropped when the last
// lease using them goes, so the table is bounded by the live leases whatever pods come and go.

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "common/id_index.h"

namespace hostport::agent::core {

class StringTable {
 public:
  /// The id of "", which is never stored nor counted.
  static constexpr uint32_t kEmpty = 0;

  /// The id of `text`, adding one reference.
  uint32_t intern(std::string_view text);
  /// Drops one reference taken by intern(); the entry goes with its last one.
  void release(uint32_t id);
  std::string_view text(uint32_t id) const;
  /// Entries held, "" not counted.
  std::size_t size() const { return index_.size(); }

 private:
  struct Entry {
    std::string text;
    uint32_t refs = 0;  // 0: a free id
  };

  std::vector<Entry> entries_;  // entries_[id - 1]
  std::vector<uint32_t> freeIds_;
  IdIndex index_;
};

}  // namespace hostport::agent::core
