// The built hostport-agent's log with --log-format json: every line it writes over a run with
// grants, releases, a conflict with a lease and one with a host process, exhaustion and a
// malformed request parses as one JSON object with the time, level, component and event, and the
// events of docs/operations.md ("Logs") carry their fields. It runs the agent in a private netns.

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/prctl.h>
#include <sys/socket.h>

#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "common/unique_fd.h"
#include "tests/support/agent_process.h"
#include "tests/support/netns.h"
#include "tests/support/result_assertions.h"
#include "tests/support/sockets.h"

#ifndef HOSTPORT_AGENT_PATH
#error "HOSTPORT_AGENT_PATH must name the hostport-agent binary"
#endif

namespace hostport::test {
namespace {

/// A process's name is its own to choose (prctl PR_SET_NAME): quotes, spaces and '=' included.
constexpr const char* kHostileComm = "a\" b=c}";

AllocationRequest request(const std::string& containerId, const std::string& pod) {
  AllocationRequest r;
  r.key = {containerId, "eth0"};
  r.pod = {"games", pod, "uid-" + containerId};
  r.netns = "/run/netns/" + containerId;
  // The network is what GC is scoped by; a pod address without a route here, so snat is off
  // (route_localnet needs the route).
  r.forwarding = Forwarding{
      .network = "games-net", .podV4 = IpPrefix::parse("10.99.0.5/24").value(), .snat = false};
  return r;
}

AllocationRequest dynamicPort(const std::string& containerId, const std::string& pod) {
  AllocationRequest r = request(containerId, pod);
  r.dynamics.push_back({"game", 7777, 1, PortProtocol::kUdp});
  return r;
}

AllocationRequest staticPort(const std::string& containerId, const std::string& pod,
                             uint16_t hostPort) {
  AllocationRequest r = request(containerId, pod);
  r.statics.push_back({hostPort, 80, PortProtocol::kTcp, std::nullopt});
  return r;
}

/// A TCP listener on `port` in the netns at `netnsPath`, owned by this process.
Result<UniqueFd> listenIn(const std::string& netnsPath, uint16_t port) {
  Result<UniqueFd> listener = fail(ErrorCode::kInternal, "not run");
  HOSTPORT_TRY_VOID(runInNetnsPath(netnsPath, [&listener, port] {
    listener = bindSocket(Protocol::kTcp, "0.0.0.0", port, {.backlog = 1});
  }));
  return listener;
}

class AgentLogTest : public ::testing::Test {
 protected:
  void SetUp() override { HOSTPORT_SKIP_UNLESS_ROOT(); }
};

TEST_F(AgentLogTest, EveryLineOfAJsonLogParsesAndNamesItsEvent) {
  AgentOptions options{.portRange = "40000-40001",
                       .reserveLocalPorts = false,
                       .logLevel = "debug",
                       .extraArgs = {"--log-format", "json", "--allow-empty-gc"},
                       .privateNetns = true};
  ASSERT_OK_AND_ASSIGN(auto agent, AgentProcess::start(HOSTPORT_AGENT_PATH, options));
  const auto client = agent->client();
  ASSERT_OK(client.allocate(dynamicPort("c1", "web-0")));
  ASSERT_OK(client.allocate(staticPort("c2", "web-1", 8080)));
  EXPECT_FALSE(client.allocate(staticPort("c3", "web-2", 8080)));  // held by c2
  ASSERT_OK_AND_ASSIGN(const UniqueFd listener,
                       listenIn("/proc/" + std::to_string(agent->pid()) + "/ns/net", 9090));
  {
    // Held by this process, which names itself as a hostile one could: the agent logs its comm.
    char ownName[16] = {};
    ASSERT_EQ(::prctl(PR_GET_NAME, ownName), 0);
    ASSERT_EQ(::prctl(PR_SET_NAME, kHostileComm), 0);
    EXPECT_FALSE(client.allocate(staticPort("c4", "web-3", 9090)));
    ASSERT_EQ(::prctl(PR_SET_NAME, ownName), 0);
  }
  ASSERT_OK(client.allocate(dynamicPort("c5", "web-4")));
  EXPECT_FALSE(client.allocate(dynamicPort("c6", "web-5")));  // the pool has two ports
  ASSERT_OK(client.release({"c1", "eth0"}));
  ASSERT_OK(client.gc({"games-net", {}}));
  ASSERT_OK(client.exchange(agent::api::HttpMethod::kPost, "/v1/attachments", "{\"\n"));
  ASSERT_OK_AND_ASSIGN(const std::string ended, agent->stop());
  EXPECT_EQ(ended, "exit 0");

  std::map<std::string, std::vector<nlohmann::json>> events;
  std::istringstream lines(agent->runLog());
  int parsed = 0;
  for (std::string line; std::getline(lines, line);) {
    if (line.starts_with("=== test harness")) continue;  // AgentProcess's own banner
    const auto object = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
    ASSERT_TRUE(object.is_object()) << "not a JSON object: " << line;
    for (const char* key : {"time", "level", "component", "event"}) {
      ASSERT_TRUE(object.contains(key) && object[key].is_string()) << key << " in " << line;
    }
    const std::string event = object["event"];
    EXPECT_TRUE(event.starts_with(object["component"].get<std::string>() + ".")) << line;
    events[event].push_back(object);
    ++parsed;
  }
  EXPECT_GE(parsed, 12) << agent->runLog();

  for (const char* event : {"store.recovered", "server.listening", "agent.pool", "agent.serving",
                            "alloc.granted", "alloc.conflict", "alloc.exhausted", "alloc.released",
                            "alloc.gc", "server.request", "agent.stopping", "agent.exiting"}) {
    EXPECT_TRUE(events.contains(event)) << event << " missing from:\n" << agent->runLog();
  }
  EXPECT_EQ(events["alloc.granted"].size(), 3u);
  EXPECT_EQ(events["store.recovered"].at(0)["leases"], 0);
  EXPECT_EQ(events["store.recovered"].at(0)["torn_tail"], false);

  ASSERT_EQ(events["alloc.conflict"].size(), 2u) << agent->runLog();
  const auto& withLease = events["alloc.conflict"][0];
  EXPECT_EQ(withLease["level"], "warn");
  EXPECT_EQ(withLease["pod"], "games/web-2");
  EXPECT_EQ(withLease["port"], "tcp/8080");
  EXPECT_EQ(withLease["holder"], "lease");
  EXPECT_EQ(withLease["holder_key"], "c2/eth0");
  EXPECT_EQ(withLease["holder_pod"], "games/web-1");
  const auto& withHost = events["alloc.conflict"][1];
  EXPECT_EQ(withHost["port"], "tcp/9090");
  EXPECT_EQ(withHost["holder"], "host");
  EXPECT_EQ(withHost["pid"], ::getpid());
  EXPECT_EQ(withHost["command"], kHostileComm);

  ASSERT_EQ(events["alloc.exhausted"].size(), 1u);
  const auto& exhausted = events["alloc.exhausted"][0];
  EXPECT_EQ(exhausted["pool"], "default");
  EXPECT_EQ(exhausted["size"], 2);
  EXPECT_EQ(exhausted["in_use"], 2);

  std::vector<std::string> released;
  for (const auto& event : events["alloc.released"]) released.push_back(event["via"]);
  EXPECT_THAT(released, ::testing::UnorderedElementsAre("request", "gc", "gc"));
  EXPECT_EQ(events["agent.exiting"].at(0)["code"], 0);
}

}  // namespace
}  // namespace hostport::test
