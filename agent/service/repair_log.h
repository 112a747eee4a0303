#pragma once
// The reconciler's repair lines, bounded per pass.

#include <cstddef>
#include <initializer_list>
#include <string_view>

#include "agent/log/event_log.h"

namespace hostport::agent::service {

/// One line per repair, up to a bound per pass, then one line for the rest: a flushed map at
/// 50,000 leases must not write 50,000 lines, nor a kernel refusing every restore 50,000 errors.
class RepairLog {
 public:
  static constexpr std::size_t kLoggedPerPass = 20;

  RepairLog(std::string_view done, std::string_view failed) : done_(done), failed_(failed) {}
  /// One repair: `done` (warn) when `ok`, else `failed` (error), with `fields`.
  void record(bool ok, std::initializer_list<log::Field> fields);
  /// "table.restored_unlogged count=N": the repairs past the bound, and as many failures.
  void finish() const;

 private:
  std::string_view done_;
  std::string_view failed_;
  std::size_t doneCount_ = 0;
  std::size_t failedCount_ = 0;
};

}  // namespace hostport::agent::service
