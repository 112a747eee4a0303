#include "agent/service/repair_backoff.h"

#include <algorithm>

namespace hostport::agent::service {
namespace {

std::chrono::milliseconds waitAfter(int stuck) {
  auto wait = RepairBackoff::kFirstWait;
  for (int i = 1; i < stuck && wait < RepairBackoff::kLongestWait; ++i) wait *= 2;
  return std::min(wait, RepairBackoff::kLongestWait);
}

}  // namespace

RepairBackoff::Verdict RepairBackoff::judge(const std::vector<std::string>& found, bool quiet,
                                            Clock::time_point now) {
  Verdict verdict;
  std::unordered_map<std::string, Entry> next;
  for (const std::string& id : found) {
    Entry entry;
    if (const auto known = entries_.find(id); known != entries_.end()) entry = known->second;
    if (entry.repairedLast && quiet) {
      const auto wait = waitAfter(++entry.stuck);
      entry.retryAt = now + wait;
      if (entry.stuck == 1) {
        verdict.newlyStuck.push_back(id);
        verdict.longestWait = std::max(verdict.longestWait, wait);
      }
    }
    entry.repairedLast = false;
    verdict.carryOut.push_back(now >= entry.retryAt);
    next.insert_or_assign(id, entry);
  }
  for (const auto& [id, entry] : entries_) {
    if (entry.stuck > 0 && !next.contains(id)) verdict.recovered.push_back(id);
  }
  std::ranges::sort(verdict.recovered);  // the map's order is no order
  entries_ = std::move(next);
  return verdict;
}

void RepairBackoff::carriedOut(const std::string& id) {
  if (const auto known = entries_.find(id); known != entries_.end()) {
    known->second.repairedLast = true;
  }
}

}  // namespace hostport::agent::service
