#include "agent/service/table_repair.h"

#include "agent/log/event_log.h"
#include "nft/kernel/nft_ruleset.h"

namespace hostport::agent::service {

std::unique_ptr<TableRepair> TableRepair::start(boost::asio::io_context& io,
                                                std::chrono::seconds interval) {
  std::unique_ptr<TableRepair> repair(new TableRepair(io, interval));
  repair->checkNow();
  repair->schedule();
  return repair;
}

TableRepair::TableRepair(boost::asio::io_context& io, std::chrono::seconds interval)
    : timer_(io), interval_(interval) {}

void TableRepair::checkNow() {
  const auto failed = [this](const Error& error) {
    log::event(log::Component::kTable, log::Level::kWarn, "table.check_failed",
               {{"cause", error.message}, {"retry_in_s", interval_.count()}});
  };
  if (!guard_) {
    auto ruleset = nft::kernel::NftRuleset::create();
    if (!ruleset) return failed(ruleset.error());
    guard_ = std::make_unique<nft::kernel::LayoutGuard>(std::move(*ruleset));
  }
  auto checked = guard_->check();
  if (!checked) return failed(checked.error());
  switch (*checked) {
    case nft::kernel::LayoutCheck::kLaidOut:
      log::event(log::Component::kTable, log::Level::kInfo, "table.laid_out",
                 {{"tables", "ip/hostport,ip6/hostport"}, {"check_every_s", interval_.count()}});
      break;
    case nft::kernel::LayoutCheck::kRepaired:
      // Someone edited our fixed chains: they are laid out again.
      log::event(log::Component::kTable, log::Level::kWarn, "table.repaired",
                 {{"tables", "ip/hostport,ip6/hostport"}});
      break;
    case nft::kernel::LayoutCheck::kIntact:
      break;
  }
}

void TableRepair::schedule() {
  timer_.expires_after(interval_);
  timer_.async_wait([this](const boost::system::error_code& error) {
    if (error) return;  // cancelled: the agent is stopping
    checkNow();
    schedule();
  });
}

}  // namespace hostport::agent::service
