#pragma once
// The agent's pieces behind the control socket, for tests of what the routes answer: a lease
// store recovered from a temp state dir, the service over it with the host's sockets from a
// FakePortProbe, and the API handlers on a Router. No socket: requests go to the Router as the
// server would hand them over.

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <future>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "agent/api/json_codec.h"
#include "agent/api/routes.h"
#include "agent/daemon/recovery.h"
#include "agent/service/api_handlers.h"
#include "tests/fakes/fake_port_probe.h"
#include "tests/support/result_assertions.h"

namespace hostport::agent::service::testing {

/// A request as the server hands it to the router: the target split into decoded path segments
/// and query parameters.
inline server::HttpRequest httpRequest(std::string method, std::string target,
                                       std::string body = {}) {
  auto parsed = api::parseTarget(target);
  EXPECT_TRUE(parsed) << target;
  server::HttpRequest request;
  request.method = std::move(method);
  request.path = target.substr(0, target.find('?'));
  if (parsed) {
    request.segments = parsed->segments;
    request.query.insert(parsed->query.begin(), parsed->query.end());
  }
  request.body = std::move(body);
  return request;
}

/// The body of POST /v1/attachments asking for one dynamic TCP port for pod "ns/pod-<id>"; with
/// a `network`, the forwarding that names it (what GC is scoped by).
inline std::string allocationBody(const std::string& containerId,
                                  const std::string& ifname = "eth0",
                                  const std::string& network = "") {
  AllocationRequest request;
  request.key = {containerId, ifname};
  request.pod = {"ns", "pod-" + containerId, ""};
  request.dynamics.push_back({"web", 80, 1, PortProtocol::kTcp});
  if (!network.empty()) {
    request.forwarding =
        Forwarding{.network = network, .podV4 = IpPrefix::parse("10.99.0.5/24").value()};
  }
  return api::dumpBody(api::toJson(request));
}

class RoutedService {
 public:
  /// Recovers the store in `stateDir` with `options`, starts the service with `serviceOptions`,
  /// and registers the routes. Call once, with ASSERT_OK.
  Result<void> start(const std::string& stateDir, const std::vector<core::PoolSpec>& pools,
                     store::StoreOptions options = {}, ServiceOptions serviceOptions = {}) {
    HOSTPORT_TRY(auto state, daemon::recoverState(
                                 stateDir, pools, [] { return uint64_t{3}; }, std::move(options)));
    store_ = std::move(state.store);
    service_.emplace(
        std::move(state.allocator), *store_,
        [this](const AllocationRequest&) -> Result<std::unique_ptr<core::PortProbe>> {
          return std::make_unique<core::FakePortProbe>(probe);
        },
        metrics, serviceOptions);
    registerApiHandlers(router, *service_, metrics, ready);
    return {};
  }

  ~RoutedService() {
    store_.reset();  // drains: every callback runs while the service is alive
    service_.reset();
  }

  AgentService& service() { return *service_; }

  /// Dispatches and waits for the answer, from whichever thread it comes.
  api::HttpResponse call(const server::HttpRequest& request) {
    std::promise<api::HttpResponse> answer;
    router.dispatch(
        request, [&answer](api::HttpResponse response) { answer.set_value(std::move(response)); });
    auto future = answer.get_future();
    if (future.wait_for(std::chrono::seconds(30)) != std::future_status::ready) {
      ADD_FAILURE() << "no answer to " << request.method << " " << request.path;
      std::abort();
    }
    return future.get();
  }

  core::FakePortProbe probe;
  Metrics metrics;
  server::Router router;
  std::atomic<bool> ready{true};

 private:
  std::unique_ptr<store::LeaseStore> store_;
  std::optional<AgentService> service_;
};

}  // namespace hostport::agent::service::testing
