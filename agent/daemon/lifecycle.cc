#include "agent/daemon/lifecycle.h"

#include <boost/asio/post.hpp>
#include <csignal>

#include "agent/log/event_log.h"

namespace hostport::agent::daemon {

Lifecycle::Lifecycle(boost::asio::io_context& io, std::chrono::milliseconds storeFailureGrace)
    : io_(io), grace_(storeFailureGrace), signals_(io), reloadSignals_(io), graceTimer_(io) {}

void Lifecycle::watchReloadSignal(std::function<void()> reload) {
  reload_ = std::move(reload);
  reloadSignals_.add(SIGHUP);
  awaitReloadSignal();
}

void Lifecycle::awaitReloadSignal() {
  reloadSignals_.async_wait([this](const boost::system::error_code& error, int) {
    if (error) return;  // cancelled: the io_context is going away
    reload_();
    awaitReloadSignal();
  });
}

void Lifecycle::watchSignals() {
  signals_.add(SIGINT);
  signals_.add(SIGTERM);
  signals_.async_wait([this](const boost::system::error_code& error, int signal) {
    if (error) return;  // cancelled: the io_context is going away
    log::event(log::Component::kAgent, log::Level::kInfo, "agent.stopping", {{"signal", signal}});
    stop(exitCode(), storeFailed_.load() ? "store_failed" : "signal");
  });
}

void Lifecycle::storeFailed(const Error& cause) {
  if (storeFailed_.exchange(true)) return;
  log::event(log::Component::kStore, log::Level::kError, "store.failed",
             {{"cause", cause.message}, {"exit_in_ms", grace_.count()}});
  // Called on the store's committer thread: the timer belongs to the io_context's thread.
  boost::asio::post(io_, [this] {
    graceTimer_.expires_after(grace_);
    graceTimer_.async_wait([this](const boost::system::error_code& error) {
      if (!error) stop(kExitStoreFailed, "store_failed");
    });
  });
}

void Lifecycle::stop(int code, const char* reason) {
  log::event(log::Component::kAgent, code == kExitStopped ? log::Level::kInfo : log::Level::kError,
             "agent.exiting", {{"code", code}, {"reason", reason}});
  io_.stop();
}

}  // namespace hostport::agent::daemon
