#pragma once
// Who may take ports from a pool, and how many: the pool's namespace allow list and its quotas.
// Pure: the allocator keeps the counts and asks checkRules() before it picks anything, so a
// refused request leaves no trace (nothing leased, journaled or installed).
//
// What counts: the ports a request takes from the pool, each row as many ports as it spans (a
// range of count N counts N): every dynamic row, and a static claim whose port lies in the pool's
// ranges. A static claim outside every range takes nothing from the pool and is not judged.
// The pod of a quota is the attachment's pod identity (namespace, name and UID): every attachment
// and sandbox of one pod object counts together, and a pod re-created under the same name (a new
// UID) is not held back by its predecessor's lease while that is still being released.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/error.h"
#include "common/identifiers.h"
#include "lease/lease.h"

namespace hostport::agent::core {

struct PoolRules {
  /// Namespace names or globs ('*' matches any run of characters, "games-*"); empty: every
  /// namespace may use the pool.
  std::vector<std::string> namespaces;
  std::optional<uint32_t> maxPortsPerNamespace;  // none: no quota
  std::optional<uint32_t> maxPortsPerPod;
  bool empty() const { return namespaces.empty() && !maxPortsPerNamespace && !maxPortsPerPod; }
  friend bool operator==(const PoolRules&, const PoolRules&) = default;
};

/// Why a pool's rules refused a request: the label of hostport_allocation_refusals_total.
enum class Refusal : uint8_t { kNamespace, kNamespaceQuota, kPodQuota };
std::string_view refusalName(Refusal refusal);  // "namespace", "namespace_quota", "pod_quota"

/// `pattern` matches all of `text`; '*' matches any run of characters, including none.
bool globMatches(std::string_view pattern, std::string_view text);

/// Why `pattern` cannot be a namespaces entry: a DNS label (a namespace name) in which '*' may
/// stand for any run of characters; at most 63 characters. std::nullopt when it can.
Problem namespacePatternProblem(std::string_view pattern);

/// kInvalidArgument naming `pool` and the first namespaces entry that is not a pattern: what the
/// allocator checks of rules at start and at a reload.
Result<void> validatePoolRules(std::string_view pool, const PoolRules& rules);

/// True when the pool's allow list admits `namespaceName` (an empty list admits every one).
bool allowsNamespace(const PoolRules& rules, std::string_view namespaceName);

/// What the pool's users hold now, as the allocator counts it.
struct RuleUsage {
  uint32_t namespaceHeld = 0;  // ports of the pool held by the request's namespace
  uint32_t podHeld = 0;        // ... and by its pod
};

/// A request refused by a pool's rules: the reason and the error that names the pool, the
/// namespace and the rule (kNotAllowed or kQuotaExceeded).
struct RuleRefusal {
  Refusal reason;
  Error error;
};

/// Judges a request that would take `asked` ports from pool `pool` (rules checked in this order:
/// namespace, pod quota, namespace quota). `asked` 0 takes nothing from the pool and passes.
std::optional<RuleRefusal> checkRules(const PoolRules& rules, std::string_view pool,
                                      const PodIdentity& pod, uint32_t asked,
                                      const RuleUsage& usage);

/// The key under which the allocator counts a pod's ports: empty for an attachment without a pod
/// identity, whose request is then judged alone.
std::string podQuotaKey(const PodIdentity& pod);

}  // namespace hostport::agent::core
