#include "hostnet/proc_sys_net.h"

namespace hostport::hostnet {

std::string procSysNetPath(std::string_view root, std::string_view relative) {
  while (root.size() > 1 && root.back() == '/') root.remove_suffix(1);
  std::string path(root);
  if (path != "/") path.push_back('/');
  path.append(relative);
  return path;
}

std::string localReservedPortsPath(std::string_view root) {
  return procSysNetPath(root, "ipv4/ip_local_reserved_ports");
}

std::string routeLocalnetPath(std::string_view root, std::string_view ifname) {
  return procSysNetPath(root, "ipv4/conf/" + std::string(ifname) + "/route_localnet");
}

}  // namespace hostport::hostnet
