#pragma once
// How a run of the agent ends. SIGINT or SIGTERM stops it at once (exit 0). A failed lease store
// stops it after a short grace (exit 1): memory may be ahead of disk, so the agent must not go on
// serving (lease_store.h, failure policy), but the requests in flight still get their error
// answers first; the DaemonSet then restarts it, and recovery reads what truly reached the disk.
// Meanwhile /healthz fails and every mutation is refused (AgentService::healthy()).

#include <atomic>
#include <boost/asio/io_context.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <functional>

#include "common/error.h"

namespace hostport::agent::daemon {

/// The exit codes of a run that started serving.
inline constexpr int kExitStopped = 0;
inline constexpr int kExitStoreFailed = 1;

/// Stops the agent's io_context on a signal or a store failure, and says with which exit code.
class Lifecycle {
 public:
  Lifecycle(boost::asio::io_context& io, std::chrono::milliseconds storeFailureGrace);
  Lifecycle(const Lifecycle&) = delete;
  Lifecycle& operator=(const Lifecycle&) = delete;

  /// From now on SIGINT and SIGTERM stop the io_context (agent.stopping).
  void watchSignals();
  /// From now on each SIGHUP calls `reload` on the io_context's thread (a config reload).
  void watchReloadSignal(std::function<void()> reload);
  /// The lease store's onFailure (any thread; the first call counts): logs store.failed with the
  /// cause and stops the io_context after the grace (agent.exiting).
  void storeFailed(const Error& cause);
  /// kExitStoreFailed once the store failed, else kExitStopped.
  int exitCode() const { return storeFailed_.load() ? kExitStoreFailed : kExitStopped; }

 private:
  void stop(int code, const char* reason);

  boost::asio::io_context& io_;
  std::chrono::milliseconds grace_;
  void awaitReloadSignal();

  boost::asio::signal_set signals_;
  boost::asio::signal_set reloadSignals_;
  std::function<void()> reload_;
  boost::asio::steady_timer graceTimer_;
  std::atomic<bool> storeFailed_{false};
};

}  // namespace hostport::agent::daemon
