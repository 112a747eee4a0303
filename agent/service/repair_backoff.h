#pragma once
// Repairs that do not hold. A repair the kernel accepted leaves nothing for the next compare to
// find. When the next compare finds the very same repair again and nothing but that repair
// changed the ruleset in between (its generation is where the repair left it), the repair did
// not converge: a forward we cannot read back as we wrote it, say, which would be written again
// at every pass, and since each write of the `nft` command wakes the reconciler, ten times a
// second (the first cut of rules with conditions did exactly that). Such a repair waits before it
// is carried out again, twice as long each time it comes back, from kFirstWait up to kLongestWait,
// and is reported once per episode. A foreign change in between (someone flushing in a loop)
// proves nothing about our repair, and delays nothing.
//
// Pure: the reconciler says what it found, whether the ruleset stayed quiet, and what it carried
// out; time is passed in.

#include <chrono>
#include <string>
#include <unordered_map>
#include <vector>

namespace hostport::agent::service {

class RepairBackoff {
 public:
  using Clock = std::chrono::steady_clock;
  static constexpr std::chrono::milliseconds kFirstWait{1'000};
  static constexpr std::chrono::milliseconds kLongestWait{3'600'000};

  struct Verdict {
    std::vector<bool> carryOut;  // one per repair found: now, or not before its wait is over
    std::vector<std::string> newlyStuck;       // found again after a repair that held nothing back
    std::vector<std::string> recovered;        // stuck before, found no more
    std::chrono::milliseconds longestWait{0};  // of the newly stuck
  };

  /// Judges the repairs one compare found, each by an identity that names what it repairs
  /// ("restore <key>"). `quiet`: the ruleset generation is where the last repair left it.
  /// Repairs not found any more are forgotten.
  Verdict judge(const std::vector<std::string>& found, bool quiet, Clock::time_point now);
  /// Records that the repair `id` of the last judge() was carried out and its write succeeded (a
  /// failed write changed nothing: finding it again proves nothing).
  void carriedOut(const std::string& id);

 private:
  struct Entry {
    int stuck = 0;  // times found again after a repair, with nothing else changed
    Clock::time_point retryAt{};
    bool repairedLast = false;
  };
  std::unordered_map<std::string, Entry> entries_;
};

}  // namespace hostport::agent::service
