// How a run of the agent ends (agent/service/lifecycle.h), with the agent's real pieces: a lease
// store on the FileOps seam whose fdatasync starts failing, the service and the API handlers. A
// failed store is logged with its cause, fails /healthz, answers the request in flight, and stops
// the io_context after the grace with exit code 1; a signal stops it at once with 0.

#include "agent/service/lifecycle.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/post.hpp>
#include <csignal>
#include <future>
#include <optional>

#include "agent/api/json_codec.h"
#include "agent/api/routes.h"
#include "agent/service/api_handlers.h"
#include "agent/service/recovery.h"
#include "tests/fakes/fake_port_probe.h"
#include "tests/fakes/faulty_file_ops.h"
#include "tests/support/result_assertions.h"
#include "tests/unit/agent-log/log_capture.h"
#include "tests/unit/agent-store/store_test_util.h"

namespace hostport::agent {
namespace {

using log::testing::LogCapture;
using store::FaultyFileOps;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::StartsWith;
using namespace std::chrono_literals;

constexpr auto kGrace = 300ms;
constexpr auto kRunLimit = 20s;

HttpRequest httpRequest(std::string method, std::string path, std::string body = {}) {
  HttpRequest request;
  request.method = std::move(method);
  request.path = path;
  auto target = api::parseTarget(path);
  if (target) request.segments = target->segments;
  request.body = std::move(body);
  return request;
}

std::string allocationBody(const std::string& containerId) {
  AllocationRequest request;
  request.key = {containerId, "eth0"};
  request.pod = {"ns", "pod-" + containerId, ""};
  request.dynamics.push_back({"web", 80, 1, PortProtocol::kTcp});
  return api::dumpBody(api::toJson(request));
}

/// An agent's pieces on a state dir whose file operations can be made to fail, stopped by
/// `lifecycle_` like the real one.
class LifecycleTest : public ::testing::Test {
 protected:
  void SetUp() override {
    store::StoreOptions options;
    options.fileOps = faulty_;
    options.onFailure = [this](const Error& cause) { lifecycle_.storeFailed(cause); };
    auto state = recoverState(
        dir_.path(), {{"default", {{30000, 30009}}, {}, Strategy::kLowest}},
        [] { return uint64_t{3}; }, std::move(options));
    ASSERT_OK(state);
    store_ = std::move(state->store);
    service_.emplace(
        std::move(state->allocator), *store_,
        [this](const AllocationRequest&) -> Result<std::unique_ptr<PortProbe>> {
          return std::make_unique<FakePortProbe>(probe_);
        },
        metrics_);
    registerApiHandlers(router_, *service_, metrics_, ready_);
  }

  void TearDown() override {
    store_.reset();  // drains: every callback runs while the service is alive
    service_.reset();
  }

  /// Dispatches like the server: the answer is delivered on the io_context's thread.
  void dispatchOnIo(const HttpRequest& request, std::optional<api::HttpResponse>& answer) {
    router_.dispatch(request, [this, &answer](api::HttpResponse response) {
      boost::asio::post(io_, [&answer, response = std::move(response)] { answer = response; });
    });
  }

  /// Dispatches and waits for the answer, from whichever thread it comes.
  api::HttpResponse dispatchAndWait(const HttpRequest& request) {
    std::promise<api::HttpResponse> answer;
    router_.dispatch(
        request, [&answer](api::HttpResponse response) { answer.set_value(std::move(response)); });
    auto future = answer.get_future();
    if (future.wait_for(kRunLimit) != std::future_status::ready) {
      ADD_FAILURE() << "no answer to " << request.method << " " << request.path;
      std::abort();
    }
    return future.get();
  }

  LogCapture log_;
  store::testing::TempDir dir_;
  std::shared_ptr<FaultyFileOps> faulty_ = std::make_shared<FaultyFileOps>();
  boost::asio::io_context io_;
  Lifecycle lifecycle_{io_, kGrace};
  FakePortProbe probe_;
  Metrics metrics_;
  std::unique_ptr<store::LeaseStore> store_;
  std::optional<AgentService> service_;
  Router router_;
  std::atomic<bool> ready_{true};
};

TEST_F(LifecycleTest, AFailedStoreAnswersTheRequestInFlightThenExitsOneAfterTheGrace) {
  const auto granted =
      dispatchAndWait(httpRequest("POST", "/v1/attachments", allocationBody("c1")));
  EXPECT_EQ(granted.status, 200u) << granted.body;
  EXPECT_EQ(dispatchAndWait(httpRequest("GET", "/healthz")).status, 200u);
  EXPECT_EQ(lifecycle_.exitCode(), kExitStopped);

  faulty_->failAlways(FaultyFileOps::Op::kFdatasync, EIO);
  std::optional<api::HttpResponse> failed;
  dispatchOnIo(httpRequest("POST", "/v1/attachments", allocationBody("c2")), failed);
  // Serving, as the agent does, until something stops the io_context.
  const auto serving = boost::asio::make_work_guard(io_);
  const auto started = std::chrono::steady_clock::now();
  io_.run_for(kRunLimit);
  const auto ran = std::chrono::steady_clock::now() - started;

  EXPECT_TRUE(io_.stopped());
  EXPECT_GE(ran, kGrace - 50ms) << "the agent must wait for the grace before it stops";
  EXPECT_LT(ran, kRunLimit / 2) << "the agent did not stop after the store failed";
  EXPECT_EQ(lifecycle_.exitCode(), kExitStoreFailed);
  ASSERT_TRUE(failed.has_value()) << "the request in flight got no answer";
  EXPECT_EQ(failed->status, 500u);
  EXPECT_THAT(failed->body, HasSubstr("\"io_error\""));
  const auto health = dispatchAndWait(httpRequest("GET", "/healthz"));
  EXPECT_EQ(health.status, 500u);
  EXPECT_EQ(health.body, "lease journal failed; restart needed\n");
  EXPECT_EQ(dispatchAndWait(httpRequest("GET", "/readyz")).status, 503u);

  const auto storeFailed = log_.events("store.failed");
  ASSERT_EQ(storeFailed.size(), 1u) << log_.text();
  EXPECT_THAT(storeFailed[0], StartsWith("store.failed cause=\"journal "));
  EXPECT_THAT(storeFailed[0], HasSubstr("fdatasync: Input/output error\" exit_in_ms=300"));
  EXPECT_THAT(log_.events("agent.exiting"),
              ElementsAre("agent.exiting code=1 reason=store_failed"));
  // The story in order: the cause, the record left unknown, the exit.
  const std::string text = log_.text();
  EXPECT_LT(text.find("store.failed"), text.find("store.write_failed"));
  EXPECT_LT(text.find("store.write_failed"), text.find("agent.exiting"));
}

TEST_F(LifecycleTest, OnlyTheFirstStoreFailureCounts) {
  lifecycle_.storeFailed(Error{ErrorCode::kIo, "first", {}});
  lifecycle_.storeFailed(Error{ErrorCode::kIo, "second", {}});
  io_.run_for(kRunLimit);
  EXPECT_EQ(lifecycle_.exitCode(), kExitStoreFailed);
  EXPECT_THAT(log_.events("store.failed"), ElementsAre("store.failed cause=first exit_in_ms=300"));
  EXPECT_EQ(log_.events("agent.exiting").size(), 1u);
}

TEST_F(LifecycleTest, ASignalStopsTheAgentAtOnceWithExitZero) {
  lifecycle_.watchSignals();
  boost::asio::post(io_, [] { std::raise(SIGTERM); });
  const auto started = std::chrono::steady_clock::now();
  io_.run_for(kRunLimit);
  EXPECT_LT(std::chrono::steady_clock::now() - started, kRunLimit / 2);
  EXPECT_EQ(lifecycle_.exitCode(), kExitStopped);
  EXPECT_THAT(log_.events("agent.stopping"), ElementsAre("agent.stopping signal=15"));
  EXPECT_THAT(log_.events("agent.exiting"), ElementsAre("agent.exiting code=0 reason=signal"));
}

}  // namespace
}  // namespace hostport::agent
