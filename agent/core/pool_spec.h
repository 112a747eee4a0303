#pragma once
// A pool as the configuration describes it, and the checks that a list of pools passes before the
// allocator builds its live state from it: names present and unique, ranges valid and disjoint
// across every pool (each port number belongs to one pool at most), a bounded reuse delay, rules
// that parse. The owner of each port number comes out of the same walk, so it is computed once.

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "agent/core/pool_rules.h"
#include "agent/core/port_picker.h"  // kPortSpace
#include "common/error.h"
#include "lease/lease.h"

namespace hostport::agent::core {

enum class Strategy : uint8_t { kLowest, kRandom, kRoundRobin };
std::string_view strategyName(Strategy strategy);
Result<Strategy> parseStrategy(std::string_view text);  // "lowest", "random", "round-robin"

/// Who hands out a pool's ports. A node pool's are picked by each node's agent at sandbox creation
/// and are unique on that node; a cluster pool's are claimed by hostport-admission when the pod
/// is created (a coordination.k8s.io Lease per port, admission/cluster_claims.h) and are unique in
/// the cluster: the agent only takes the port the claim names (cluster_claims.h here).
enum class PoolScope : uint8_t { kNode, kCluster };
std::string_view scopeName(PoolScope scope);
Result<PoolScope> parseScope(std::string_view text);  // "node", "cluster"

/// How long a released dynamic port waits before the strategy may pick it again (quarantine.h).
inline constexpr uint32_t kDefaultReuseDelaySeconds = 30;
inline constexpr uint32_t kMaxReuseDelaySeconds = 3600;

struct PoolSpec {
  std::string name;
  std::vector<PortRange> ranges;        // disjoint; across pools too
  std::vector<PortProtocol> protocols;  // allowed; empty: all
  Strategy strategy = Strategy::kLowest;
  uint32_t reuseDelaySeconds = kDefaultReuseDelaySeconds;  // 0: no quarantine
  PoolRules rules =
      {};  // who may use the pool, and how much (pool_rules.h); a reload may change them
  PoolScope scope = PoolScope::kNode;
};

/// The picker of `strategy` over `layout`; `random` feeds the random strategy alone.
std::unique_ptr<PortPicker> makePicker(Strategy strategy, PoolLayout layout,
                                       std::function<uint64_t()> random);

inline constexpr uint16_t kNoPool = UINT16_MAX;

/// The index (in the list of specs) of the pool whose ranges hold each port number, kPortSpace
/// entries; kNoPool for a number outside every pool.
using PoolOfPort = std::vector<uint16_t>;

/// Checks `pools`, in order, and returns the pool of each port number. kInvalidArgument for too
/// many pools, a pool without a name or with the name of an earlier one, without ranges, with an
/// empty or invalid range or one overlapping a range of its own or of an earlier pool (naming
/// both), with a reuse delay above kMaxReuseDelaySeconds, or with rules that validatePoolRules()
/// refuses; the first problem found is the one reported.
Result<PoolOfPort> validatePoolSpecs(const std::vector<PoolSpec>& pools);

}  // namespace hostport::agent::core
