// How a run of the agent ends (agent/daemon/lifecycle.h), with the agent's real pieces: a lease
// store on the FileOps seam whose fdatasync starts failing, the service and the API handlers. A
// failed store is logged with its cause, fails /healthz, answers the request in flight, and stops
// the io_context after the grace with exit code 1; a signal stops it at once with 0.

#include "agent/daemon/lifecycle.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/post.hpp>
#include <csignal>
#include <future>
#include <optional>

#include "tests/fakes/faulty_file_ops.h"
#include "tests/support/log_capture.h"
#include "tests/support/result_assertions.h"
#include "tests/support/temp_dir.h"
#include "tests/unit/agent/service/routed_service.h"

namespace hostport::agent::daemon {
namespace {

using log::testing::LogCapture;
using store::FaultyFileOps;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::StartsWith;
using namespace std::chrono_literals;

constexpr auto kGrace = 300ms;
constexpr auto kRunLimit = 20s;

using service::testing::allocationBody;
using service::testing::httpRequest;

/// An agent's pieces on a state dir whose file operations can be made to fail, stopped by
/// `lifecycle_` like the real one.
class LifecycleTest : public ::testing::Test {
 protected:
  void SetUp() override {
    store::StoreOptions options;
    options.fileOps = faulty_;
    options.onFailure = [this](const Error& cause) { lifecycle_.storeFailed(cause); };
    ASSERT_OK(agent_.start(dir_.path(),
                           {{"default", {{30000, 30009}}, {}, core::Strategy::kLowest}},
                           std::move(options)));
  }

  /// Dispatches like the server: the answer is delivered on the io_context's thread.
  void dispatchOnIo(const server::HttpRequest& request, std::optional<api::HttpResponse>& answer) {
    agent_.router.dispatch(request, [this, &answer](api::HttpResponse response) {
      boost::asio::post(io_, [&answer, response = std::move(response)] { answer = response; });
    });
  }

  api::HttpResponse dispatchAndWait(const server::HttpRequest& request) {
    return agent_.call(request);
  }

  LogCapture log_;
  test::TempDir dir_;
  std::shared_ptr<FaultyFileOps> faulty_ = std::make_shared<FaultyFileOps>();
  boost::asio::io_context io_;
  Lifecycle lifecycle_{io_, kGrace};
  service::testing::RoutedService agent_;  // last: destroyed first, while the lifecycle is alive
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
}  // namespace hostport::agent::daemon
