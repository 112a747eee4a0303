#pragma once
// The damages no crash can do to a live journal (agent/store/journal_file.h): emptied, cut below
// its 16-byte header, or removed, after acknowledged records. The store's unit tests and the
// agent's netns test both hold the start to refusing each of them; one table keeps the two tiers
// on the same cases.

#include <cstddef>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace hostport::test {

struct LiveJournalDamage {
  std::string name;
  bool compacted;                   // journal.1 after a compaction, else journal.0 of a store
                                    // that never compacted
  std::optional<std::size_t> keep;  // bytes left of it; nullopt: removed

  /// The live journal's file name.
  std::string journal() const { return compacted ? "journal.1" : "journal.0"; }

  /// Does the damage to `live`.
  void applyTo(const std::filesystem::path& live) const {
    if (keep) {
      std::filesystem::resize_file(live, *keep);
    } else {
      std::filesystem::remove(live);
    }
  }
};

inline const std::vector<LiveJournalDamage>& liveJournalDamages() {
  static const std::vector<LiveJournalDamage> damages = {
      {"journal.1 emptied after a compaction", true, 0},
      {"journal.1 cut to 7 bytes after a compaction", true, 7},
      {"journal.1 cut to 15 bytes after a compaction", true, 15},
      {"journal.1 removed after a compaction", true, std::nullopt},
      {"journal.0 emptied", false, 0},
      {"journal.0 cut to 10 bytes", false, 10},
      {"journal.0 removed", false, std::nullopt},
  };
  return damages;
}

}  // namespace hostport::test
