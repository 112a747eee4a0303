#pragma once
// What our tables hold, read back from nft's JSON listing, and how that compares with what
// was planned (matchesInstalled, diff). The text listing prints comments unescaped, so JSON is the
// only faithful way to learn each element's owner.

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "nft/forward.h"

namespace hostport::nft {

struct InstalledForward {
  std::string owner;
  Forward forward;
  std::optional<uint64_t> ruleHandle;  // set for forwards in the conditional chain
};

struct InstalledMasquerade {
  std::string owner;
  Masquerade masquerade;
};

struct TableState {
  std::vector<InstalledForward> forwards;
  std::vector<InstalledMasquerade> masquerades;
  std::vector<IpPrefix> podSubnets;  // shared, owned by nobody (AttachmentRules::podSubnets)

  /// The owner's elements, and every pod subnet (they are shared).
  TableState ownedBy(const std::string& owner) const;
  /// The owner's elements alone.
  AttachmentRules rulesOf(const std::string& owner) const;
  bool empty() const { return forwards.empty() && masquerades.empty(); }
};

/// Receives what our tables hold one element at a time, as a dump reads it (Ruleset::scanElements),
/// so a reader keeps only what it needs: a compare at 65,535 leases does not hold a copy of every
/// element. `owner` is the element's comment, a view valid for the call. A rule of the
/// conditional chain comes as a forward with its `ruleHandle`.
class TableScan {
 public:
  virtual ~TableScan() = default;
  virtual void forward(std::string_view owner, const Forward& forward,
                       std::optional<uint64_t> ruleHandle) = 0;
  virtual void masquerade(std::string_view owner, const Masquerade& masquerade) = 0;
  virtual void podSubnet(const IpPrefix& subnet) = 0;
};

/// A scan that keeps everything it is given.
class TableStateCollector final : public TableScan {
 public:
  void forward(std::string_view owner, const Forward& forward,
               std::optional<uint64_t> ruleHandle) override {
    state_.forwards.push_back({std::string(owner), forward, ruleHandle});
  }
  void masquerade(std::string_view owner, const Masquerade& masquerade) override {
    state_.masquerades.push_back({std::string(owner), masquerade});
  }
  void podSubnet(const IpPrefix& subnet) override { state_.podSubnets.push_back(subnet); }
  TableState take() { return std::move(state_); }

 private:
  TableState state_;
};

/// Adds what one family's `list table` JSON output holds to `state`. Elements without a comment
/// belong to nobody we know and are kept with an empty owner. Every rule of the conditional chain
/// is kept with its comment and handle; its forward is read from our own part at the rule's end
/// alone (commands.cc), and a rule that does not end that way is an unidentified rule
/// (kUnidentifiedRuleMarker), whatever the user's conditions before it hold. kKernel for a
/// listing whose shape we do not understand.
Result<void> parseTableListing(const nlohmann::json& listing, TableState& state);

/// True when `installed` is what installing `expected` produces. Conditions are compared by
/// presence only (see kInstalledConditionsMarker); an unidentified rule matches nothing.
bool matchesInstalled(const Forward& expected, const Forward& installed);

/// How what is installed for one owner differs from what is planned for it. Each list keeps the
/// order of the input it comes from, so the first difference (the one CHECK reports) is the same
/// on every run.
struct RulesDiff {
  std::vector<Forward> missingForwards;           // planned, matched by nothing installed
  std::vector<Forward> unexpectedForwards;        // installed, matching nothing planned
  std::vector<Masquerade> missingMasquerades;     // planned, not installed
  std::vector<Masquerade> unexpectedMasquerades;  // installed, not planned
  std::vector<IpPrefix> missingPodSubnets;        // planned, overlapping no installed one

  bool empty() const {
    return missingForwards.empty() && unexpectedForwards.empty() && missingMasquerades.empty() &&
           unexpectedMasquerades.empty() && missingPodSubnets.empty();
  }
  std::size_t missing() const {
    return missingForwards.size() + missingMasquerades.size() + missingPodSubnets.size();
  }
  /// The first missing piece, for logs and CHECK's error.
  std::string describeFirstMissing() const;
};

/// Compares forwards with matchesInstalled() and masquerades exactly, by membership: one installed
/// copy stands for every planned one. Owners are not compared: `installed` is what listing
/// `planned.owner` gave back. A planned pod subnet counts as there when an installed one overlaps
/// it: the kernel refuses a subnet nested in another (another network's), and the one there
/// serves it.
RulesDiff diff(const AttachmentRules& planned, const AttachmentRules& installed);

}  // namespace hostport::nft
