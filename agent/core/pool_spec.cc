#include "agent/core/pool_spec.h"

#include <algorithm>

#include "common/quote.h"

namespace hostport::agent::core {

std::string_view strategyName(Strategy strategy) {
  switch (strategy) {
    case Strategy::kLowest:
      return "lowest";
    case Strategy::kRandom:
      return "random";
    case Strategy::kRoundRobin:
      return "round-robin";
  }
  return "lowest";
}

Result<Strategy> parseStrategy(std::string_view text) {
  for (const auto strategy : {Strategy::kLowest, Strategy::kRandom, Strategy::kRoundRobin}) {
    if (text == strategyName(strategy)) return strategy;
  }
  return fail(ErrorCode::kInvalidArgument,
              "unknown strategy " + quoteText(text) + " (want lowest, random or round-robin)");
}

std::string_view scopeName(PoolScope scope) {
  return scope == PoolScope::kCluster ? "cluster" : "node";
}

Result<PoolScope> parseScope(std::string_view text) {
  for (const auto scope : {PoolScope::kNode, PoolScope::kCluster}) {
    if (text == scopeName(scope)) return scope;
  }
  return fail(ErrorCode::kInvalidArgument, quoteText(text) + " is not node or cluster");
}

Result<PoolOfPort> validatePoolSpecs(const std::vector<PoolSpec>& pools) {
  if (pools.size() >= kNoPool) return fail(ErrorCode::kInvalidArgument, "too many pools");
  PoolOfPort poolOf(kPortSpace, kNoPool);
  for (std::size_t index = 0; index < pools.size(); ++index) {
    const PoolSpec& spec = pools[index];
    const std::string name = quoteText(spec.name);
    if (spec.name.empty()) return fail(ErrorCode::kInvalidArgument, "a pool needs a name");
    const auto earlier = pools.begin() + static_cast<std::ptrdiff_t>(index);
    if (std::any_of(pools.begin(), earlier,
                    [&](const PoolSpec& other) { return other.name == spec.name; })) {
      return fail(ErrorCode::kInvalidArgument, "duplicate pool name " + name);
    }
    if (spec.ranges.empty()) {
      return fail(ErrorCode::kInvalidArgument, "pool " + name + " has no port range");
    }
    if (spec.reuseDelaySeconds > kMaxReuseDelaySeconds) {
      return fail(ErrorCode::kInvalidArgument, "pool " + name + " has a reuse delay of " +
                                                   std::to_string(spec.reuseDelaySeconds) +
                                                   " seconds (at most " +
                                                   std::to_string(kMaxReuseDelaySeconds) + ")");
    }
    for (const auto& range : spec.ranges) {
      if (range.first == 0 || range.first > range.last) {
        return fail(ErrorCode::kInvalidArgument,
                    "pool " + name + " has an empty or invalid range " +
                        std::to_string(range.first) + "-" + std::to_string(range.last));
      }
      for (uint32_t port = range.first; port <= range.last; ++port) {
        const uint16_t owner = poolOf[port];
        if (owner == kNoPool) {
          poolOf[port] = static_cast<uint16_t>(index);
          continue;
        }
        const auto& other = pools[owner];
        const auto otherRange = std::ranges::find_if(
            other.ranges, [&](const PortRange& r) { return r.contains(port) && &r != &range; });
        return fail(ErrorCode::kInvalidArgument,
                    "pool " + name + " range " + range.str() + " overlaps pool " +
                        quoteText(other.name) + " range " +
                        (otherRange != other.ranges.end() ? otherRange->str() : range.str()));
      }
    }
    HOSTPORT_TRY_VOID(validatePoolRules(spec.name, spec.rules));
  }
  return poolOf;
}

std::unique_ptr<PortPicker> makePicker(Strategy strategy, PoolLayout layout,
                                       std::function<uint64_t()> random) {
  switch (strategy) {
    case Strategy::kLowest:
      return std::make_unique<LowestFreePicker>(std::move(layout));
    case Strategy::kRandom:
      return std::make_unique<RandomPicker>(std::move(layout), std::move(random));
    case Strategy::kRoundRobin:
      return std::make_unique<RoundRobinPicker>(std::move(layout));
  }
  return std::make_unique<LowestFreePicker>(std::move(layout));
}

}  // namespace hostport::agent::core
