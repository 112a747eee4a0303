// Joining net sysctl paths onto the procSysNet root (hostnet/proc_sys_net.h).

#include "hostnet/proc_sys_net.h"

#include <gtest/gtest.h>

namespace hostport::hostnet {
namespace {

TEST(ProcSysNetTest, DefaultRootIsTheKernelsOwn) {
  EXPECT_EQ(localReservedPortsPath(), "/proc/sys/net/ipv4/ip_local_reserved_ports");
  EXPECT_EQ(routeLocalnetPath(kDefaultProcSysNet, "eth0"),
            "/proc/sys/net/ipv4/conf/eth0/route_localnet");
}

TEST(ProcSysNetTest, JoinsOntoAMountedRoot) {
  EXPECT_EQ(localReservedPortsPath("/host/proc/sys/net"),
            "/host/proc/sys/net/ipv4/ip_local_reserved_ports");
  EXPECT_EQ(routeLocalnetPath("/host/proc/sys/net", "cni0"),
            "/host/proc/sys/net/ipv4/conf/cni0/route_localnet");
}

TEST(ProcSysNetTest, TrailingSlashesOfTheRootDoNotDoubleTheSeparator) {
  EXPECT_EQ(procSysNetPath("/host/proc/sys/net/", "ipv4/x"), "/host/proc/sys/net/ipv4/x");
  EXPECT_EQ(procSysNetPath("/host/proc/sys/net///", "ipv4/x"), "/host/proc/sys/net/ipv4/x");
  EXPECT_EQ(procSysNetPath("/", "ipv4/x"), "/ipv4/x");
  EXPECT_EQ(procSysNetPath("//", "ipv4/x"), "/ipv4/x");
}

}  // namespace
}  // namespace hostport::hostnet
