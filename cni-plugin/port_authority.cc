#include "cni-plugin/port_authority.h"

#include "agent/api/agent_client.h"
#include "agent/api/routes.h"

namespace hostport::cni {
namespace {

class AgentPortAuthority : public PortAuthority {
 public:
  explicit AgentPortAuthority(const std::string& socketPath)
      : client_(agent::api::AgentClient::forSocket(socketPath)) {}

  Result<Lease> allocate(const AllocationRequest& request) override {
    return client_.allocate(request);
  }
  Result<std::optional<Lease>> get(const AttachmentKey& key) override { return client_.get(key); }
  Result<std::optional<Lease>> release(const AttachmentKey& key) override {
    return client_.release(key);
  }
  Result<void> ready() override {
    HOSTPORT_TRY_VOID(client_.getText(agent::api::kReadyzPath));
    return {};
  }
  Result<std::vector<Lease>> collectGarbage(const std::string& network,
                                            const std::vector<AttachmentKey>& valid) override {
    return client_.gc({network, valid});
  }

 private:
  agent::api::AgentClient client_;
};

std::string argument(const CniEnv& env, const char* name) {
  const auto found = env.args.find(name);
  return found == env.args.end() ? std::string() : found->second;
}

}  // namespace

std::unique_ptr<PortAuthority> agentPortAuthority(const std::string& socketPath) {
  return std::make_unique<AgentPortAuthority>(socketPath);
}

AllocationRequest allocationRequestFor(const CniEnv& env, const PluginConfig& config,
                                       std::vector<DynamicPortRequest> dynamics, std::string pool) {
  AllocationRequest request;
  request.key = {env.containerId, env.ifname};
  request.pod = {argument(env, "K8S_POD_NAMESPACE"), argument(env, "K8S_POD_NAME"),
                 argument(env, "K8S_POD_UID")};
  request.netns = env.netns;
  request.pool = std::move(pool);
  for (const auto& mapping : config.portMappings) {
    request.statics.push_back(
        {mapping.hostPort, mapping.containerPort, portProtocol(mapping.protocol), mapping.hostIp});
  }
  request.dynamics = std::move(dynamics);
  return request;
}

}  // namespace hostport::cni
