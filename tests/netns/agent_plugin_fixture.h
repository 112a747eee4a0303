#pragma once
// The fixture of the netns tests that run the hostport plugin with a real hostport-agent on a
// simulated node: the agent in the node netns (its own state dir, socket and release spool), the
// plugin as a runtime runs it. The including test target defines HOSTPORT_PLUGIN_PATH and
// HOSTPORT_AGENT_PATH.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <iostream>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "agent/api/agent_client.h"
#include "agent/api/json_codec.h"
#include "common/unique_fd.h"
#include "tests/support/agent_process.h"
#include "tests/support/plugin_fixture.h"
#include "tests/support/result_assertions.h"
#include "tests/support/sockets.h"

namespace hostport::agent {
// Leases in assertion messages as the agent's JSON.
inline void PrintTo(const Lease& lease, std::ostream* os) { *os << api::toJson(lease).dump(); }
}  // namespace hostport::agent

namespace hostport::test {

inline constexpr uint16_t kPoolFirst = 41000;
inline constexpr const char* kSmallPool = "41000-41019";
inline constexpr int kCniTryAgainLater = 11;
inline constexpr int kCniInvalidConfig = 7;
inline constexpr int kCniPortConflict = 101;
inline constexpr int kCniPoolExhausted = 102;

/// A socket of this process bound (and, for TCP, listening) on `port` in `netns`: a "host
/// process" holding a port. CLOEXEC, so plugin processes forked later do not share it.
inline Result<UniqueFd> holdPortOnHost(const Netns& netns, Transport transport, uint16_t port) {
  const Protocol protocol = transport == Transport::kTcp ? Protocol::kTcp : Protocol::kUdp;
  HOSTPORT_TRY(Result<UniqueFd> held,
               netns.run([&] { return bindSocket(protocol, "0.0.0.0", port); }));
  return held;
}

/// The value of one sample line (`name{labels} value`) of a Prometheus text page.
inline std::optional<double> metricValue(const std::string& page, const std::string& sample) {
  std::istringstream lines(page);
  std::string line;
  while (std::getline(lines, line)) {
    if (line.starts_with(sample + " ")) return std::stod(line.substr(sample.size() + 1));
  }
  return std::nullopt;
}

inline const PortGrant* grantNamed(const Lease& lease, const std::string& name) {
  const auto found = std::ranges::find(lease.ports, name, &PortGrant::name);
  return found == lease.ports.end() ? nullptr : &*found;
}

class AgentPluginTest : public PluginFixture {
 protected:
  AgentPluginTest() : PluginFixture(HOSTPORT_PLUGIN_PATH) {}

  void TearDown() override {
    if (HasFailure() && agent_) std::cerr << agent_->describe() << "\n";
  }

  /// Starts the agent in the node netns with `portRange` as its default pool.
  void startAgent(const std::string& portRange = kSmallPool,
                  std::vector<std::string> extraArgs = {}) {
    ASSERT_OK_AND_ASSIGN(
        agent_, AgentProcess::start(HOSTPORT_AGENT_PATH, nodeNetns(),
                                    {.portRange = portRange, .extraArgs = std::move(extraArgs)}));
  }

  agent::api::AgentClient client() const { return agent_->client(); }

  /// ADD options that point the plugin at the agent, with the annotations and static mappings
  /// in runtimeConfig. The mappings go into pluginKeys' runtimeConfig rather than
  /// AddOptions::mappings, because CniNode::pluginConfig replaces the whole runtimeConfig when
  /// it adds portMappings, which would drop the annotations.
  AddOptions withAgent(const std::string& ports,
                       const std::vector<PortMapping>& mappings = {}) const {
    nlohmann::json runtimeConfig = nlohmann::json::object();
    if (!ports.empty()) {
      runtimeConfig["io.kubernetes.cri.pod-annotations"] = {{"hostport.io/ports", ports}};
    }
    if (!mappings.empty()) runtimeConfig["portMappings"] = toJson(mappings);
    nlohmann::json keys = {{"agentSocket", agent_->socketPath()},
                           {"releaseSpool", agent_->releaseSpool()}};
    if (!runtimeConfig.empty()) keys["runtimeConfig"] = runtimeConfig;
    return {.pluginKeys = keys};
  }

  static AttachmentKey keyOf(const Pod& pod) { return {pod.containerId, pod.ifname}; }

  /// The agent's lease for the pod, nullopt when it holds none; a test failure when the agent
  /// cannot be asked.
  std::optional<Lease> leaseOf(const Pod& pod) {
    auto lease = client().get(keyOf(pod));
    if (!lease) {
      ADD_FAILURE() << "GET lease of " << pod.label << ": " << lease.error().message;
      return std::nullopt;
    }
    return *lease;
  }

  std::vector<Lease> allLeases() {
    auto leases = client().list("", "");
    if (!leases) {
      ADD_FAILURE() << "listing leases: " << leases.error().message;
      return {};
    }
    return *leases;
  }

  /// The host port of the pod's grant `name`, checked to be in [first, last]; 0 on failure.
  uint16_t grantedPort(const Pod& pod, const std::string& name, PortProtocol protocol,
                       uint16_t count = 1) {
    const auto lease = leaseOf(pod);
    if (!lease) {
      ADD_FAILURE() << "the agent holds no lease for " << pod.label;
      return 0;
    }
    const PortGrant* grant = grantNamed(*lease, name);
    if (grant == nullptr) {
      ADD_FAILURE() << "the lease of " << pod.label << " has no grant named " << name;
      return 0;
    }
    EXPECT_EQ(grant->protocol, protocol) << name;
    EXPECT_EQ(grant->count, count) << name;
    EXPECT_FALSE(grant->isStatic) << name;
    return grant->hostPort;
  }

  std::unique_ptr<Server> serveAs(const Pod& pod, Transport transport, uint16_t port,
                                  const std::string& id) {
    auto server = Server::start(pod.netns, transport, port, id);
    if (!server) {
      ADD_FAILURE() << "server " << id << ": " << server.error().message;
      return nullptr;
    }
    return std::move(*server);
  }

  /// A pod created and bridged, then ADDed through the agent; nullptr (and a failure) otherwise.
  Pod* addAgentPod(const std::string& label, const std::string& ports,
                   const std::vector<PortMapping>& mappings = {}) {
    return addPod(label, withAgent(ports, mappings));
  }

  std::unique_ptr<AgentProcess> agent_;  // destroyed before the node (a base member)
};

}  // namespace hostport::test
