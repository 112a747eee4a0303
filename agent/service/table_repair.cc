#include "agent/service/table_repair.h"

#include <spdlog/spdlog.h>

#include "nft/nft_ruleset.h"

namespace hostport::agent {

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
  if (!guard_) {
    auto ruleset = nft::NftRuleset::create();
    if (!ruleset) {
      spdlog::warn("table check: {}", ruleset.error().message);
      return;
    }
    guard_ = std::make_unique<nft::LayoutGuard>(std::move(*ruleset));
  }
  auto checked = guard_->check();
  if (!checked) {
    spdlog::warn("table check failed, retrying in {} s: {}", interval_.count(),
                 checked.error().message);
    return;
  }
  switch (*checked) {
    case nft::LayoutCheck::kLaidOut:
      spdlog::info("table ip/ip6 hostport laid out; checked every {} s", interval_.count());
      break;
    case nft::LayoutCheck::kRepaired:
      spdlog::warn("table ip/ip6 hostport had been edited: fixed chains laid out again");
      break;
    case nft::LayoutCheck::kIntact:
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

}  // namespace hostport::agent
