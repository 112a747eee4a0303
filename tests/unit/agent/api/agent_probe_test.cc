// hostportctl health/ready's check (agent/api/agent_probe.h) against a fake agent: 200 passes,
// anything else is one line naming the endpoint and the answer, and no agent is kUnavailable.

#include "agent/api/agent_probe.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "tests/fakes/fake_agent_server.h"
#include "tests/support/temp_dir.h"

namespace hostport::agent::api {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using namespace std::chrono_literals;

FakeAgentServer::Handler answering(unsigned status, std::string body) {
  return [status, body = std::move(body)](const RecordedRequest&) {
    return FakeAgentServer::reply(status, body);
  };
}

TEST(AgentProbeTest, PassesOn200) {
  FakeAgentServer server(answering(200, "ok\n"));
  EXPECT_TRUE(probeAgent(AgentClient::forSocket(server.path(), 2s), kHealthzPath));
  ASSERT_EQ(server.requests().size(), 1u);
  EXPECT_EQ(server.requests()[0].method, "GET");
  EXPECT_EQ(server.requests()[0].target, "/healthz");
}

TEST(AgentProbeTest, AnyOtherAnswerIsOneLineNamingTheEndpointAndTheStatus) {
  FakeAgentServer server(answering(503, "not ready\n"));
  const auto probed = probeAgent(AgentClient::forSocket(server.path(), 2s), kReadyzPath);
  ASSERT_FALSE(probed);
  EXPECT_EQ(probed.error().code, ErrorCode::kConflict);
  EXPECT_EQ(probed.error().message, "GET /readyz answered 503: \"not ready\"");
}

TEST(AgentProbeTest, AMultiLineBodyStaysOneLine) {
  FakeAgentServer server(answering(500, "journal failed\nrestart needed\n"));
  const auto probed = probeAgent(AgentClient::forSocket(server.path(), 2s), kHealthzPath);
  ASSERT_FALSE(probed);
  EXPECT_THAT(probed.error().message, Not(HasSubstr("\n")));
  EXPECT_THAT(probed.error().message, HasSubstr("answered 500"));
}

TEST(AgentProbeTest, NoAgentIsUnavailable) {
  test::TempDir dir;
  const auto probed =
      probeAgent(AgentClient::forSocket(dir.path() + "/agent.sock", 1s), kReadyzPath);
  ASSERT_FALSE(probed);
  EXPECT_EQ(probed.error().code, ErrorCode::kUnavailable);
  EXPECT_THAT(probed.error().message, HasSubstr("not reachable"));
}

}  // namespace
}  // namespace hostport::agent::api
