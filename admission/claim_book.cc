#include "admission/claim_book.h"

#include <algorithm>

namespace hostport::admission {

using agent::core::FreeView;
using agent::core::PortBitmap;

struct ClaimBook::Pool {
  std::string name;
  std::unique_ptr<agent::core::PortPicker> picker;
  std::unique_ptr<agent::core::PortPicker> scatter;  // random, over the same ranges
  PortBitmap claimed;  // held by a claim known (or a create that got 201 or 409)
  PortBitmap pending;  // being created by this replica
  uint32_t claimedCount = 0;
  std::map<uint16_t, PortClaim> claims;  // what the list and watch said, by port
  /// A holder's block for one entry: how many ports it has, and how many of them are claimed.
  struct Block {
    uint16_t count = 0;
    uint16_t present = 0;
  };
  /// holder '\n' entry -> its blocks by first port, for stickiness. A holder may have two for
  /// one entry (its earlier incarnation asked another width, or a replica's cache lagged).
  std::map<std::string, std::map<uint16_t, Block>, std::less<>> byHolder;

  static std::string holderKey(std::string_view holder, std::string_view entry) {
    std::string key(holder);
    key += '\n';
    key += entry;
    return key;
  }
  void mark(uint16_t port) {
    if (claimed.test(port)) return;
    claimed.set(port);
    ++claimedCount;
    picker->taken(port);
  }
  void unmark(uint16_t port) {
    if (!claimed.test(port)) return;
    claimed.reset(port);
    --claimedCount;
    picker->released(port);
  }
};

ClaimBook::ClaimBook(const std::vector<agent::core::PoolSpec>& pools,
                     std::function<uint64_t()> random) {
  for (const auto& spec : pools) {
    if (spec.scope != agent::core::PoolScope::kCluster) continue;
    auto pool = std::make_unique<Pool>();
    pool->name = spec.name;
    pool->picker =
        agent::core::makePicker(spec.strategy, agent::core::PoolLayout(spec.ranges), random);
    pool->scatter = agent::core::makePicker(agent::core::Strategy::kRandom,
                                            agent::core::PoolLayout(spec.ranges), random);
    pools_.push_back(std::move(pool));
  }
}

ClaimBook::~ClaimBook() = default;

ClaimBook::Pool* ClaimBook::find(std::string_view pool) const {
  for (const auto& known : pools_) {
    if (known->name == pool) return known.get();
  }
  return nullptr;
}

bool ClaimBook::hasPool(std::string_view pool) const { return find(pool) != nullptr; }

void ClaimBook::replace(const std::vector<PortClaim>& claims) {
  std::lock_guard lock(mutex_);
  for (const auto& pool : pools_) {
    for (const auto& range : pool->picker->layout().ranges()) {
      for (uint32_t port = range.first; port <= range.last; ++port) {
        pool->unmark(static_cast<uint16_t>(port));
      }
    }
    pool->claims.clear();
    pool->byHolder.clear();
  }
  for (const auto& claim : claims) addLocked(claim);
  synced_ = true;
}

void ClaimBook::add(const PortClaim& claim) {
  std::lock_guard lock(mutex_);
  addLocked(claim);
}

void ClaimBook::addLocked(const PortClaim& claim) {
  Pool* pool = find(claim.pool);
  if (pool == nullptr || pool->picker->layout().rangeOf(claim.port) == nullptr) return;
  removeLocked(*pool, claim.port);  // a MODIFIED claim may name another holder
  pool->mark(claim.port);
  Pool::Block& block = pool->byHolder[Pool::holderKey(claim.holder, claim.entry)][claim.first];
  block.count = claim.count;
  ++block.present;
  pool->claims[claim.port] = claim;
}

void ClaimBook::remove(const PortClaim& claim) {
  std::lock_guard lock(mutex_);
  if (Pool* pool = find(claim.pool)) removeLocked(*pool, claim.port);
}

void ClaimBook::removeLocked(Pool& pool, uint16_t port) {
  const auto found = pool.claims.find(port);
  if (found != pool.claims.end()) {
    const PortClaim& claim = found->second;
    const auto held = pool.byHolder.find(Pool::holderKey(claim.holder, claim.entry));
    if (held != pool.byHolder.end()) {
      const auto block = held->second.find(claim.first);
      if (block != held->second.end() && --block->second.present == 0) held->second.erase(block);
      if (held->second.empty()) pool.byHolder.erase(held);
    }
    pool.claims.erase(found);
  }
  pool.unmark(port);
}

bool ClaimBook::synced() const {
  std::lock_guard lock(mutex_);
  return synced_;
}

std::optional<uint16_t> ClaimBook::heldBy(std::string_view holder, std::string_view pool,
                                          std::string_view entry, uint16_t count) const {
  std::lock_guard lock(mutex_);
  const Pool* known = find(pool);
  if (known == nullptr) return std::nullopt;
  const auto held = known->byHolder.find(Pool::holderKey(holder, entry));
  if (held == known->byHolder.end()) return std::nullopt;
  for (const auto& [first, block] : held->second) {
    if (block.count == count && block.present == count) return first;
  }
  return std::nullopt;
}

std::optional<uint16_t> ClaimBook::reserve(std::string_view pool, uint16_t count, bool scatter) {
  std::lock_guard lock(mutex_);
  Pool* known = find(pool);
  if (known == nullptr) return std::nullopt;
  const FreeView view(known->claimed, known->pending);
  const auto first = (scatter ? known->scatter : known->picker)->candidates(view, count)->next();
  if (!first) return std::nullopt;
  for (uint32_t port = *first; port < *first + uint32_t{count}; ++port) {
    known->pending.set(static_cast<uint16_t>(port));
  }
  return first;
}

void ClaimBook::settle(std::string_view pool, uint16_t first, uint16_t count, bool claimed) {
  std::lock_guard lock(mutex_);
  Pool* known = find(pool);
  if (known == nullptr) return;
  for (uint32_t number = first; number < first + uint32_t{count}; ++number) {
    const auto port = static_cast<uint16_t>(number);
    known->pending.reset(port);
    if (claimed) known->mark(port);
  }
}

std::vector<ClusterPoolCount> ClaimBook::counts() const {
  std::lock_guard lock(mutex_);
  std::vector<ClusterPoolCount> counts;
  for (const auto& pool : pools_) {
    uint32_t pending = 0;
    for (const auto& range : pool->picker->layout().ranges()) {
      for (uint32_t port = range.first; port <= range.last; ++port) {
        pending += pool->pending.test(static_cast<uint16_t>(port)) &&
                           !pool->claimed.test(static_cast<uint16_t>(port))
                       ? 1
                       : 0;
      }
    }
    counts.push_back({pool->name, pool->picker->layout().size(), pool->claimedCount + pending});
  }
  return counts;
}

}  // namespace hostport::admission
