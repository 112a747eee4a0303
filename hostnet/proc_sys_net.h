#pragma once
// Where the net sysctls the agent and the plugin write are found: one root directory (by default
// /proc/sys/net) and the one function that joins a sysctl's path onto it.
//
// Design note: container runtimes mount /proc/sys read-only in an unprivileged container, and
// runc refuses a volume below /proc. So the DaemonSet mounts the node's /proc/sys/net elsewhere
// (/host/proc/sys/net, as Cilium does) and the agent is told that root (`procSysNet`). Any mount
// of /proc/sys/net shows the net sysctls of the netns of the thread that opens the file, not of
// the process that made the mount: with hostNetwork that is the node's netns either way.

#include <string>
#include <string_view>

namespace hostport::hostnet {

inline constexpr std::string_view kDefaultProcSysNet = "/proc/sys/net";

/// `root` + "/" + `relative`, with trailing slashes of `root` dropped ("/proc/sys/net/" and
/// "/proc/sys/net" join alike). `relative` is a sysctl's path below net/, such as
/// "ipv4/ip_local_reserved_ports"; the only place such paths are put together.
std::string procSysNetPath(std::string_view root, std::string_view relative);

/// <root>/ipv4/ip_local_reserved_ports.
std::string localReservedPortsPath(std::string_view root = kDefaultProcSysNet);

/// <root>/ipv4/conf/<ifname>/route_localnet. The caller has checked `ifname` (isKernelIfname):
/// it becomes a path component.
std::string routeLocalnetPath(std::string_view root, std::string_view ifname);

}  // namespace hostport::hostnet
