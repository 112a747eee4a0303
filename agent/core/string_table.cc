#include "agent/core/string_table.h"

#include <cassert>

namespace hostport::agent::core {

uint32_t StringTable::intern(std::string_view text) {
  if (text.empty()) return kEmpty;
  const uint64_t hash = hashOfBytes(text);
  const auto found = index_.find(hash, [&](uint32_t id) { return entries_[id - 1].text == text; });
  if (found) {
    ++entries_[*found - 1].refs;
    return *found;
  }
  uint32_t id;
  if (freeIds_.empty()) {
    entries_.emplace_back();
    id = static_cast<uint32_t>(entries_.size());
  } else {
    id = freeIds_.back();
    freeIds_.pop_back();
  }
  entries_[id - 1] = Entry{std::string(text), 1};
  index_.insert(id, hash);
  return id;
}

void StringTable::release(uint32_t id) {
  if (id == kEmpty) return;
  Entry& entry = entries_[id - 1];
  assert(entry.refs > 0 && "released an id more often than interned");
  if (--entry.refs > 0) return;
  index_.erase(hashOfBytes(entry.text), [id](uint32_t other) { return other == id; });
  entry.text = std::string();  // give the memory back now
  freeIds_.push_back(id);
}

std::string_view StringTable::text(uint32_t id) const {
  return id == kEmpty ? std::string_view() : std::string_view(entries_[id - 1].text);
}

}  // namespace hostport::agent::core
