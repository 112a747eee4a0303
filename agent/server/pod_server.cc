#include "agent/server/pod_server.h"

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/post.hpp>
#include <future>
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

  /// ConnectionPeer::identify(), within the caller's cap; null over it. `volumePod`: the pod whose
  /// volume holds the socket it reached.
  std::shared_ptr<const ConnectionPeer> admit(int socketFd,
                                              const std::optional<std::string>& volumePod) {
    auto peer = std::make_shared<ConnectionPeer>(ConnectionPeer::identify(socketFd, agent));
    peer->volumePod = volumePod;
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

  /// The listener of `path`, made on the server's thread, as every listener is made and closed.
  Result<std::unique_ptr<UnixHttpServer>> listen(const std::string& path,
                                                 std::optional<std::string> volumePod) {
    UnixListenOptions listenOptions;
    listenOptions.lockDirectory = true;
    listenOptions.directoryMode = 0755;  // pods mount the directory read-only and search it
    listenOptions.admit = [this, volumePod = std::move(volumePod)](int socketFd) {
      return admit(socketFd, volumePod);
    };
    return UnixHttpServer::listen(io, path, 0666, *router, limits, std::move(listenOptions));
  }

  boost::asio::io_context& io;
  const Router* router = nullptr;
  ServerLimits limits;
  std::shared_ptr<CallerConnectionCount> counts;
  AgentNamespaces agent;
  log::LineThrottle shedLog;  // the accept handlers only
  std::unique_ptr<UnixHttpServer> listener;
  std::optional<boost::asio::executor_work_guard<boost::asio::io_context::executor_type>> work;
  std::thread thread;
};

namespace {

/// Runs `work` on `io`'s thread and waits for it; inline once `io` has stopped (its thread is
/// gone, and with it every other user of the listeners).
template <typename Work>
auto onServerThread(boost::asio::io_context& io, Work work) {
  if (io.stopped()) return work();
  std::packaged_task<decltype(work())()> task(std::move(work));
  auto result = task.get_future();
  boost::asio::post(io, [&task] { task(); });
  return result.get();
}

}  // namespace

struct VolumeSocket::Listener {
  boost::asio::io_context& io;
  std::unique_ptr<UnixHttpServer> server;
};

VolumeSocket::VolumeSocket(std::unique_ptr<Listener> listener) : listener_(std::move(listener)) {}

VolumeSocket::~VolumeSocket() {
  onServerThread(listener_->io, [this] { listener_->server.reset(); });
}

PodServer::PodServer(std::unique_ptr<State> state) : state_(std::move(state)) {}

Result<std::unique_ptr<VolumeSocket>> PodServer::serveVolume(const std::string& path,
                                                             const std::string& podUid) {
  HOSTPORT_TRY(auto server, onServerThread(state_->io, [&] {
                 return state_->listen(path, std::optional<std::string>(podUid));
               }));
  return std::unique_ptr<VolumeSocket>(
      new VolumeSocket(std::make_unique<VolumeSocket::Listener>(state_->io, std::move(server))));
}

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
  state->router = &router;
  state->limits = options.limits;
  if (!options.path.empty()) {
    HOSTPORT_TRY(state->listener, state->listen(options.path, std::nullopt));
  }
  // Kept running without a socket: volume sockets come and go on it.
  state->work.emplace(io.get_executor());
  state->thread = std::thread([&io] { io.run(); });
  return std::unique_ptr<PodServer>(new PodServer(std::move(state)));
}

}  // namespace hostport::agent::server
