#include "agent/service/repair_log.h"

#include <string>
#include <tuple>

namespace hostport::agent::service {

using log::Component;
using log::Level;

void RepairLog::record(bool ok, std::initializer_list<log::Field> fields) {
  std::size_t& count = ok ? doneCount_ : failedCount_;
  if (++count > kLoggedPerPass) return;
  log::event(Component::kTable, ok ? Level::kWarn : Level::kError, ok ? done_ : failed_, fields);
}

void RepairLog::finish() const {
  for (const auto& [name, count, level] : {std::tuple{done_, doneCount_, Level::kWarn},
                                           std::tuple{failed_, failedCount_, Level::kError}}) {
    if (count <= kLoggedPerPass) continue;
    log::event(Component::kTable, level, std::string(name) + "_unlogged",
               {{"count", count - kLoggedPerPass}, {"logged", kLoggedPerPass}});
  }
}

}  // namespace hostport::agent::service
