// CNI GC and STATUS as the runtimes call them, with the built plugin and a real hostport-agent in
// the node netns: GC releases exactly the calling network's leases missing from the list and
// refuses an empty list (unless --allow-empty-gc); STATUS passes with the agent up and during a
// short outage, and fails with code 50 once the outage outlasts the grace.
//
// The leases are made through the control socket with the forwarding a plugin sends at ADD (its
// network name), so each test controls which network a lease belongs to.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <set>
#include <string>
#include <thread>

#include "agent/api/agent_client.h"
#include "agent/api/json_codec.h"
#include "tests/support/agent_process.h"
#include "tests/support/plugin_fixture.h"
#include "tests/support/temp_dir.h"

namespace hostport::test {
namespace {

using ::testing::HasSubstr;
using namespace std::chrono_literals;

constexpr int kCniInvalidConfig = 7;
constexpr int kCniPluginNotAvailable = 50;
constexpr const char* kOtherNetwork = "other-net";

class AgentGcStatusTest : public PluginFixture {
 protected:
  AgentGcStatusTest() : PluginFixture(HOSTPORT_PLUGIN_PATH) {}

  void SetUp() override {
    PluginFixture::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    network_ =
        node().pluginConfig(kNewestCniVersion, nlohmann::json::object(), std::nullopt, {})["name"];
    ASSERT_OK_AND_ASSIGN(runtime_, node().createPod("runtime"));
  }

  void TearDown() override {
    if (HasFailure() && agent_) std::cerr << agent_->describe() << "\n";
  }

  void startAgent(std::vector<std::string> extraArgs = {}) {
    ASSERT_OK_AND_ASSIGN(agent_, AgentProcess::start(HOSTPORT_AGENT_PATH, nodeNetns(),
                                                     {.portRange = "41100-41119",
                                                      .extraArgs = std::move(extraArgs)}));
  }

  /// A lease for `containerId`/eth0 as the plugin's ADD on `network` makes it; "" for one
  /// without a forwarding record (it names no network).
  void lease(const std::string& containerId, const std::string& network) {
    AllocationRequest request;
    request.key = {containerId, "eth0"};
    request.pod = {"ns", containerId, ""};
    request.dynamics.push_back({"web", 80, 1, PortProtocol::kTcp});
    if (!network.empty()) {
      // A pod address without a route here: snat off, so no route_localnet is asked for.
      request.forwarding = Forwarding{
          .network = network, .podV4 = IpPrefix::parse("10.99.0.5/24").value(), .snat = false};
    }
    ASSERT_OK(agent_->client().allocate(request));
  }

  std::set<std::string> leaseKeys() {
    std::set<std::string> keys;
    auto leases = agent_->client().list("", "");
    EXPECT_TRUE(leases.has_value()) << leases.error().message;
    if (leases) {
      for (const auto& held : *leases) keys.insert(held.key.str());
    }
    return keys;
  }

  /// The plugin's GC on this node's network, as libcni sends it: both attachment lists.
  Result<CommandResult> gc(const std::vector<std::string>& validContainers) {
    std::vector<AttachmentKey> keys;
    for (const auto& id : validContainers) keys.push_back({id, "eth0"});
    return gcOfKeys(keys);
  }
  Result<CommandResult> gcOfKeys(const std::vector<AttachmentKey>& validKeys) {
    nlohmann::json valid = nlohmann::json::array();
    for (const auto& key : validKeys) {
      valid.push_back({{"containerID", key.containerId}, {"ifname", key.ifname}});
    }
    nlohmann::json config = {{"cniVersion", kNewestCniVersion},
                             {"name", network_},
                             {"type", "hostport"},
                             {"agentSocket", agent_->socketPath()},
                             {"cni.dev/valid-attachments", valid},
                             {"cni.dev/attachments", valid}};
    return node().invokePlugin("GC", *runtime_, config.dump());
  }

  /// The plugin's STATUS with its record in a temp dir and a grace of `graceSeconds`.
  Result<CommandResult> status(int graceSeconds) {
    const nlohmann::json config = {{"cniVersion", kNewestCniVersion},
                                   {"name", network_},
                                   {"type", "hostport"},
                                   {"agentSocket", agent_->socketPath()},
                                   {"stateDir", stateDir_.path()},
                                   {"statusGraceSeconds", graceSeconds}};
    return node().invokePlugin("STATUS", *runtime_, config.dump());
  }

  /// The agent's log of this run once it holds `text`, or after 5 s: an event is logged after its
  /// request is answered.
  std::string logOnceItHolds(const std::string& text) {
    agent_->waitForLog(text, 5s);
    return agent_->runLog();
  }

  bool outageRecorded() const {
    return std::filesystem::exists(stateDir_ / "agent-unreachable-since");
  }

  std::string network_;
  Pod* runtime_ = nullptr;  // only for the runtime's environment: GC and STATUS name no pod
  TempDir stateDir_;
  std::unique_ptr<AgentProcess> agent_;
};

TEST_F(AgentGcStatusTest, GcReleasesExactlyTheLeasesOfItsNetworkMissingFromTheList) {
  ASSERT_NO_FATAL_FAILURE(startAgent());
  for (const char* id : {"keep1", "gone1", "keep2", "gone2"}) {
    ASSERT_NO_FATAL_FAILURE(lease(id, network_));
  }
  ASSERT_NO_FATAL_FAILURE(lease("other1", kOtherNetwork));
  ASSERT_NO_FATAL_FAILURE(lease("older1", ""));

  ASSERT_OK_AND_ASSIGN(const auto collected, gc({"keep1", "keep2", "elsewhere"}));
  EXPECT_THAT(collected, Succeeded());
  EXPECT_EQ(collected.out, "");
  EXPECT_EQ(leaseKeys(),
            (std::set<std::string>{"keep1/eth0", "keep2/eth0", "other1/eth0", "older1/eth0"}));
  const std::string done = "alloc.gc network=" + network_ + " valid=3 released=2";
  EXPECT_THAT(logOnceItHolds(done), HasSubstr(done));

  // Again: nothing left to collect.
  ASSERT_OK_AND_ASSIGN(const auto again, gc({"keep1", "keep2"}));
  EXPECT_THAT(again, Succeeded());
  EXPECT_EQ(leaseKeys().size(), 4u);
}

TEST_F(AgentGcStatusTest, AGcOfTheMostAttachmentsOfTheLongestIdsReachesTheAgent) {
  // Issue 29: a GC of some 12,000 attachments failed as "agent not reachable" (a 1 MiB body
  // limit). The plugin takes 65,536 keys in each of libcni's two lists, and so does the agent.
  ASSERT_NO_FATAL_FAILURE(startAgent());
  struct Size {
    std::size_t keys;
    std::size_t idLength;
    std::string_view ifname;
  };
  for (const Size size : {Size{12'000, 64, "eth0"},
                          Size{agent::api::kMaxGcKeys, kMaxContainerIdLength, "eth0-abcdefghij"}}) {
    ASSERT_NO_FATAL_FAILURE(lease("keep1", network_));
    ASSERT_NO_FATAL_FAILURE(lease("gone1", network_));
    std::vector<AttachmentKey> valid = {{"keep1", "eth0"}};
    for (std::size_t i = 1; i < size.keys; ++i) {
      std::string id = std::to_string(i);
      id.insert(0, size.idLength - id.size(), 'c');
      valid.push_back({id, std::string(size.ifname)});
    }
    ASSERT_OK_AND_ASSIGN(const auto collected, gcOfKeys(valid));
    EXPECT_THAT(collected, Succeeded()) << size.keys << " keys";
    EXPECT_EQ(leaseKeys(), (std::set<std::string>{"keep1/eth0"})) << size.keys << " keys";
    const std::string done =
        "alloc.gc network=" + network_ + " valid=" + std::to_string(size.keys) + " released=1";
    EXPECT_THAT(logOnceItHolds(done), HasSubstr(done));
  }
}

TEST_F(AgentGcStatusTest, ABodyOverTheLimitIsAnswered413NamingIt) {
  ASSERT_NO_FATAL_FAILURE(startAgent());
  // Sent raw: the client refuses to send it (api::kMaxRequestBytes), as an older plugin would not.
  const auto answer =
      agent_->client(30s).exchange(agent::api::HttpMethod::kPost, agent::api::kGcPath,
                                   std::string(agent::api::kMaxRequestBytes + 1, ' '));
  ASSERT_OK(answer);
  EXPECT_EQ(answer->status, 413u) << answer->body;
  EXPECT_THAT(answer->body,
              HasSubstr("POST /v1/gc: the request body exceeds the agent's limit of 10485760 "
                        "bytes"));
}

TEST_F(AgentGcStatusTest, GcWithAnEmptyListIsRefusedWhileTheNetworkHoldsLeases) {
  ASSERT_NO_FATAL_FAILURE(startAgent());
  ASSERT_NO_FATAL_FAILURE(lease("pod1", network_));
  ASSERT_NO_FATAL_FAILURE(lease("pod2", network_));

  ASSERT_OK_AND_ASSIGN(const auto refused, gc({}));
  EXPECT_THAT(refused, FailsWithCode(kCniInvalidConfig));
  ASSERT_OK_AND_ASSIGN(const auto error, parseCniError(refused.out));
  EXPECT_THAT(error.msg, HasSubstr("would release all 2 of its leases"));
  EXPECT_THAT(error.msg, HasSubstr("--allow-empty-gc"));
  EXPECT_EQ(leaseKeys(), (std::set<std::string>{"pod1/eth0", "pod2/eth0"}));
  const std::string refusal = "alloc.gc_refused network=" + network_ + " valid=0 leases=2";
  EXPECT_THAT(logOnceItHolds(refusal), HasSubstr(refusal));
}

TEST_F(AgentGcStatusTest, GcWithAnEmptyListIsAcceptedWithAllowEmptyGc) {
  ASSERT_NO_FATAL_FAILURE(startAgent({"--allow-empty-gc"}));
  ASSERT_NO_FATAL_FAILURE(lease("pod1", network_));
  ASSERT_NO_FATAL_FAILURE(lease("pod2", network_));
  ASSERT_NO_FATAL_FAILURE(lease("other1", kOtherNetwork));

  ASSERT_OK_AND_ASSIGN(const auto collected, gc({}));
  EXPECT_THAT(collected, Succeeded());
  EXPECT_EQ(leaseKeys(), std::set<std::string>{"other1/eth0"});
}

TEST_F(AgentGcStatusTest, StatusFailsOnlyOnceTheAgentIsDownForLongerThanTheGrace) {
  constexpr int kGraceSeconds = 1;
  ASSERT_NO_FATAL_FAILURE(startAgent());
  ASSERT_OK_AND_ASSIGN(const auto up, status(kGraceSeconds));
  EXPECT_THAT(up, Succeeded());
  EXPECT_FALSE(outageRecorded());

  ASSERT_OK(agent_->stop());
  const auto stopped = std::chrono::steady_clock::now();
  ASSERT_OK_AND_ASSIGN(const auto justDown, status(kGraceSeconds));
  EXPECT_THAT(justDown, Succeeded());  // a restarting agent keeps the node Ready
  EXPECT_TRUE(outageRecorded());

  std::this_thread::sleep_until(stopped + std::chrono::seconds(kGraceSeconds) + 500ms);
  ASSERT_OK_AND_ASSIGN(const auto longDown, status(kGraceSeconds));
  EXPECT_THAT(longDown, FailsWithCode(kCniPluginNotAvailable));
  ASSERT_OK_AND_ASSIGN(const auto error, parseCniError(longDown.out));
  EXPECT_THAT(error.msg, HasSubstr("longer than the grace of 1 s"));

  ASSERT_OK(agent_->restart());
  ASSERT_OK_AND_ASSIGN(const auto back, status(kGraceSeconds));
  EXPECT_THAT(back, Succeeded());
  EXPECT_FALSE(outageRecorded());
}

TEST_F(AgentGcStatusTest, StatusWithAGraceOfZeroFailsAtTheFirstUnreachableCall) {
  ASSERT_NO_FATAL_FAILURE(startAgent());
  ASSERT_OK(agent_->stop());
  ASSERT_OK_AND_ASSIGN(const auto down, status(0));
  EXPECT_THAT(down, FailsWithCode(kCniPluginNotAvailable));
}

}  // namespace
}  // namespace hostport::test
