// The built hostport-agent's TCP metrics listener (--metrics-address), in a netns of its own:
// Prometheus text on GET /metrics, and no control endpoint over TCP, whatever the method.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

#include "common/unique_fd.h"
#include "tests/support/agent_process.h"
#include "tests/support/netns.h"
#include "tests/support/plain_http.h"
#include "tests/support/result_assertions.h"
#include "tests/support/sockets.h"

#ifndef HOSTPORT_AGENT_PATH
#error "HOSTPORT_AGENT_PATH must name the hostport-agent binary"
#endif

namespace hostport::test {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::StartsWith;

/// A port nobody holds in `netns`: the kernel's pick for a socket that is closed again at once.
Result<uint16_t> freeTcpPort(const Netns& netns) {
  HOSTPORT_TRY(Result<UniqueFd> socket,
               netns.run([] { return bindSocket(Protocol::kTcp, "127.0.0.1", 0); }));
  HOSTPORT_TRY(UniqueFd fd, std::move(socket));
  return boundPort(fd.get());
}

class AgentMetricsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    HOSTPORT_SKIP_UNLESS_ROOT();
    auto netns = Netns::create();
    ASSERT_OK(netns);
    netns_.emplace(std::move(*netns));
    auto port = freeTcpPort(*netns_);
    ASSERT_OK(port);
    port_ = *port;
    auto agent = AgentProcess::start(
        HOSTPORT_AGENT_PATH, *netns_,
        {.portRange = "30000-30009",
         .reserveLocalPorts = false,
         .extraArgs = {"--metrics-address", "127.0.0.1:" + std::to_string(port_)}});
    ASSERT_OK(agent);
    agent_ = std::move(*agent);
  }

  std::optional<Netns> netns_;
  uint16_t port_ = 0;
  std::unique_ptr<AgentProcess> agent_;
};

TEST_F(AgentMetricsTest, ServesPrometheusTextOverTcp) {
  const auto answer = plainHttpExchange(*netns_, port_, "GET", "/metrics");
  ASSERT_OK(answer);
  EXPECT_THAT(*answer, StartsWith("HTTP/1.1 200"));
  EXPECT_THAT(*answer, HasSubstr("text/plain; version=0.0.4"));
  EXPECT_THAT(*answer, HasSubstr("hostport_pool_ports{pool=\"default\"} 10"));
  EXPECT_TRUE(agent_->waitForLog("server.listening address=127.0.0.1:" + std::to_string(port_)))
      << agent_->describe();
}

TEST_F(AgentMetricsTest, ControlEndpointsAreNotFoundOverTcp) {
  const std::string allocation =
      R"({"containerId": "abc", "ifname": "eth0", "netns": "/run/netns/x"})";
  for (const auto& [method, target, body] :
       {std::tuple<std::string, std::string, std::string>{"GET", "/v1/attachments", ""},
        {"POST", "/v1/attachments", allocation},
        {"DELETE", "/v1/attachments?containerId=abc", ""},
        {"POST", "/v1/gc", R"({"network": "n", "valid": []})"},
        {"GET", "/v1/pools", ""},
        {"GET", "/healthz", ""}}) {
    const auto answer = plainHttpExchange(*netns_, port_, method, target, body);
    ASSERT_OK(answer);
    EXPECT_THAT(*answer, StartsWith("HTTP/1.1 404")) << method << " " << target;
  }
  // Nothing reached the service: the Unix socket holds no lease, and answers as ever.
  const auto leases = agent_->client().list("", "");
  ASSERT_OK(leases);
  EXPECT_TRUE(leases->empty());
}

TEST_F(AgentMetricsTest, AnEmptyAddressOpensNoTcpPort) {
  ASSERT_OK(agent_->stop());
  auto quiet = AgentProcess::start(HOSTPORT_AGENT_PATH, *netns_,
                                   {.portRange = "30000-30009",
                                    .reserveLocalPorts = false,
                                    .extraArgs = {"--metrics-address", ""}});
  ASSERT_OK(quiet);
  const auto answer = plainHttpExchange(*netns_, port_, "GET", "/metrics");
  ASSERT_FALSE(answer) << "something answered on " << port_ << ": " << *answer;
  EXPECT_THAT(answer.error().message, HasSubstr("Connection refused"));
  EXPECT_THAT((*quiet)->log(), Not(HasSubstr("server.listening address=")));
}

}  // namespace
}  // namespace hostport::test
