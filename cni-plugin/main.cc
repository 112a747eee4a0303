// hostport: the chained CNI plugin. Everything lives in hostport_cni_plugin; this only wires the
// real environment and kernel into it.

#include <cstdlib>
#include <iostream>
#include <iterator>
#include <string>

#include "cni-plugin/detached_teardown.h"
#include "cni-plugin/dispatcher.h"
#include "cni-plugin/plugin_config.h"
#include "hostnet/netlink_host_network.h"
#include "hostnet/network_namespace.h"
#include "nft/kernel/nft_ruleset.h"

namespace {

std::string readStdin() {
  std::string text;
  char buffer[65536];
  while (std::cin.read(buffer, sizeof buffer) || std::cin.gcount() > 0) {
    text.append(buffer, static_cast<std::size_t>(std::cin.gcount()));
    if (text.size() > hostport::cni::kMaxConfigBytes) break;  // parsePluginConfig refuses it
  }
  return text;
}

}  // namespace

int main() {
  using namespace hostport;
  const std::string input = readStdin();
  const cni::PluginIo io{[](const char* name) { return std::getenv(name); }, input, std::cout,
                         std::cerr};
  cni::PluginBackends backends{
      .ruleset = []() -> Result<std::unique_ptr<nft::Ruleset>> {
        HOSTPORT_TRY(auto ruleset, nft::kernel::NftRuleset::create());
        return std::unique_ptr<nft::Ruleset>(std::move(ruleset));
      },
      .hostNetwork = []() -> Result<std::unique_ptr<hostnet::HostNetwork>> {
        HOSTPORT_TRY(auto network, hostnet::NetlinkHostNetwork::create());
        return std::unique_ptr<hostnet::HostNetwork>(std::move(network));
      },
      .portAuthority =
          [](const std::string& socketPath) { return cni::agentPortAuthority(socketPath); },
      .netnsCheck = [](const std::string& path) -> Result<void> {
        HOSTPORT_TRY_VOID(hostnet::networkNamespaceAt(path));
        return {};
      },
      .exitBeforeTeardown =
          [](int exitCode, const std::string& stateDir) {
            cni::exitLeavingTeardownToChild(exitCode, std::cout, std::cerr, stateDir);
          }};
  return cni::runPlugin(io, backends);
}
