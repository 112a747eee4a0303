#pragma once
// The agent's side of "repairs what someone broke" for nftables: every interval it checks the
// fixed layout of table ip/ip6 hostport (nft/kernel/layout_guard.h) and lays it out again when
// someone edited it. The plugin's ADD only creates a missing table, so without this an edited chain
// would stay broken until the next node reboot.

#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <memory>

#include "nft/kernel/layout_guard.h"

namespace hostport::agent::service {

class TableRepair {
 public:
  /// Checks once now (laying the layout out, so the first ADD finds it ready), then every
  /// `interval` on `io`. A failed check is logged and retried at the next interval: allocation
  /// does not depend on it, and the plugin creates a missing table on its own.
  static std::unique_ptr<TableRepair> start(boost::asio::io_context& io,
                                            std::chrono::seconds interval);

 private:
  TableRepair(boost::asio::io_context& io, std::chrono::seconds interval);
  void checkNow();
  void schedule();

  boost::asio::steady_timer timer_;
  std::chrono::seconds interval_;
  std::unique_ptr<nft::kernel::LayoutGuard> guard_;
};

}  // namespace hostport::agent::service
