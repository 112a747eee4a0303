#include "tests/support/plugin_fixture.h"

namespace hostport::test {

void PrintTo(const Result<Reply>& reply, std::ostream* os) {
  if (reply) {
    *os << "reply '" << reply->id << "' seeing peer " << reply->peer;
  } else {
    *os << "error: " << reply.error().message;
  }
}

void PrintTo(const CommandResult& result, std::ostream* os) { *os << result.describe(); }

void PluginFixture::SetUp() {
  HOSTPORT_SKIP_UNLESS_ROOT();
  ASSERT_OK_AND_ASSIGN(node_, CniNode::create(pluginPath_, ipv6_));
}

Pod* PluginFixture::bridgedPod(const std::string& label) {
  auto pod = node_->createPod(label);
  if (!pod) {
    ADD_FAILURE() << "creating " << label << ": " << pod.error().message;
    return nullptr;
  }
  if (auto up = node_->bridgeUp(**pod); !up) {
    ADD_FAILURE() << up.error().message;
    return nullptr;
  }
  return *pod;
}

Pod* PluginFixture::addPod(const std::string& label, const AddOptions& options) {
  auto pod = node_->createPod(label);
  if (!pod) {
    ADD_FAILURE() << "creating " << label << ": " << pod.error().message;
    return nullptr;
  }
  auto added = node_->add(**pod, options);
  if (!added) {
    ADD_FAILURE() << "ADD for " << label << ": " << added.error().message;
    return nullptr;
  }
  if (!added->ok()) {
    ADD_FAILURE() << "plugin ADD for " << label << " failed: " << added->describe();
    return nullptr;
  }
  return *pod;
}

std::unique_ptr<Server> PluginFixture::serve(const Pod& pod, Transport transport, uint16_t port) {
  const std::string id = pod.label + (transport == Transport::kTcp ? " tcp" : " udp");
  auto server = Server::start(pod.netns, transport, port, id);
  if (!server) {
    ADD_FAILURE() << "server " << id << ": " << server.error().message;
    return nullptr;
  }
  return std::move(*server);
}

std::vector<NftEntry> PluginFixture::entries() {
  auto listed = hostportEntries(nodeNetns());
  if (!listed) {
    ADD_FAILURE() << "reading nft state: " << listed.error().message;
    return {};
  }
  return *listed;
}

}  // namespace hostport::test
