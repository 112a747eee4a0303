#pragma once
// Keeps the fixed layout of our tables (table_layout.h) as we laid it out. ADD only creates a
// missing table; an edited one (a chain flushed, a rule deleted or added by hand or by another
// tool) would stay broken, so the long-lived agent checks the layout now and then.
//
// The check needs no understanding of nft expressions: after laying the layout out, the guard
// records the fixed chains' rules exactly as the kernel dumps them (their expression bytes, in
// order) and later compares a fresh dump with that record. The dump reads only the fixed chains,
// never the elements, so it costs the same at any number of pods.

#include <memory>

#include "nft/element_messages.h"
#include "nft/ruleset.h"

namespace hostport::nft::kernel {

/// The fixed chains' rules of both families as the kernel holds them. A missing table or chain
/// reads as a distinct value, never as an error.
Result<ByteString> layoutFingerprint();

enum class LayoutCheck {
  kLaidOut,   // the first check: laid out unconditionally
  kIntact,    // as this guard last laid it out; nothing done
  kRepaired,  // it had changed and was laid out again
};

class LayoutGuard {
 public:
  explicit LayoutGuard(std::unique_ptr<Ruleset> ruleset) : ruleset_(std::move(ruleset)) {}

  /// Lays the layout out (again) unless it is what this guard last laid out. The first call
  /// always lays it out: the guard cannot know what an earlier process left. Elements and
  /// conditional rules are never touched.
  Result<LayoutCheck> check();

 private:
  std::unique_ptr<Ruleset> ruleset_;
  ByteString expected_;
};

}  // namespace hostport::nft::kernel
