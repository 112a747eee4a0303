#include "agent/server/pod_server.h"

#include <map>
#include <mutex>

#include "agent/log/event_log.h"
#include "agent/log/line_throttle.h"
#include "agent/server/caller_identity.h"
#include "agent/server/namespace_origin.h"
#include "agent/server/unix_http_server.h"

namespace hostport::agent::server {
namespace {

/// Open connections per caller (CallerKey). Callers that could not be identified share one count:
/// they get nothing but 403s, and must not crowd out the pods.
class CallerConnectionCount {
 public:
  explicit CallerConnectionCount(std::size_t limit) : limit_(limit) {}

  bool tryEnter(const CallerKey& caller) {
    std::lock_guard lock(mutex_);
    auto& open = open_[caller];
    if (open >= limit_) return false;
    ++open;
    return true;
  }
  void leave(const CallerKey& caller) {
    std::lock_guard lock(mutex_);
    const auto found = open_.find(caller);
    if (found != open_.end() && --found->second == 0) open_.erase(found);
  }

 private:
  std::size_t limit_;
  std::mutex mutex_;  // entered on the server's thread; left wherever the last request ends
  std::map<CallerKey, std::size_t> open_;
};

}  // namespace

struct PodServer::State {
  State(boost::asio::io_context& io, std::size_t perCaller, AgentNamespaces agent)
      : io(io), counts(std::make_shared<CallerConnectionCount>(perCaller)), agent(agent) {}

  /// ConnectionPeer::identify(), within the caller's cap; null over it.
  std::shared_ptr<const ConnectionPeer> admit(int socketFd) {
    auto peer = std::make_shared<ConnectionPeer>(ConnectionPeer::identify(socketFd, agent));
    const CallerKey caller = peer->key();
    if (!counts->tryEnter(caller)) {
      if (const auto shed = shedLog.admit(log::LineThrottle::Clock::now())) {
        log::event(log::Component::kServer, log::Level::kWarn, "server.pod_connection_shed",
                   {{"caller", caller.str()},
                    {"pid", peer->process ? peer->process->pid() : 0},
                    {"shed", *shed}});
      }
      return nullptr;
    }
    // The count is left when the connection's last holder (its session, or a request a handler
    // still holds) lets go; that may be as late as the io_context's destruction, after this
    // server's, so the count is shared.
    return {peer.get(), [counts = counts, caller, keep = peer](const ConnectionPeer*) mutable {
              counts->leave(caller);
              keep.reset();
            }};
  }

  boost::asio::io_context& io;
  std::shared_ptr<CallerConnectionCount> counts;
  AgentNamespaces agent;
  log::LineThrottle shedLog;  // the accept handler only
  std::unique_ptr<UnixHttpServer> listener;
  std::thread thread;
};

PodServer::PodServer(std::unique_ptr<State> state) : state_(std::move(state)) {}

PodServer::~PodServer() {
  state_->io.stop();
  if (state_->thread.joinable()) state_->thread.join();
  state_->listener.reset();  // its acceptor closes while `io` still lives
}

Result<std::unique_ptr<PodServer>> PodServer::start(boost::asio::io_context& io,
                                                    const Router& router,
                                                    PodServerOptions options) {
  auto agent = AgentNamespaces::ofThisProcess();
  if (!agent) return withContext(agent.error(), "cannot read the agent's own namespaces");
  auto state = std::make_unique<State>(io, options.maxConnectionsPerCaller, *agent);
  UnixListenOptions listenOptions;
  listenOptions.lockDirectory = true;
  listenOptions.directoryMode = 0755;  // pods mount the directory read-only and search it
  listenOptions.admit = [raw = state.get()](int socketFd) { return raw->admit(socketFd); };
  HOSTPORT_TRY(state->listener, UnixHttpServer::listen(io, options.path, 0666, router,
                                                       options.limits, std::move(listenOptions)));
  state->thread = std::thread([&io] { io.run(); });
  return std::unique_ptr<PodServer>(new PodServer(std::move(state)));
}

}  // namespace hostport::agent::server
