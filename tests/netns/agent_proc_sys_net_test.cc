// The built hostport-agent with --proc-sys-net: the net sysctls it writes are found under the root
// it is given, as in the DaemonSet, where the node's /proc/sys/net is mounted read-write at
// /host/proc/sys/net because /proc/sys is read-only in the container.
//
// A mount of /proc/sys/net shows the sysctls of the netns of the thread that opens a file through
// it, so a bind mount made here (in the host's netns) shows the agent its own netns: the machine's
// sysctls are never written. The mount sits in a temp dir and is detached at the end.

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/mount.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "tests/support/agent_process.h"
#include "tests/support/file_text.h"
#include "tests/support/netns.h"
#include "tests/support/result_assertions.h"
#include "tests/support/temp_dir.h"

#ifndef HOSTPORT_AGENT_PATH
#error "HOSTPORT_AGENT_PATH must name the hostport-agent binary"
#endif

namespace hostport::test {
namespace {

using ::testing::HasSubstr;
using ::testing::Optional;

constexpr char kPool[] = "41000-41007";

/// `/proc/sys/net` bind-mounted at a directory of its own, detached on destruction.
class MountedProcSysNet {
 public:
  explicit MountedProcSysNet(std::string target) : target_(std::move(target)) {
    mounted_ = ::mount("/proc/sys/net", target_.c_str(), nullptr, MS_BIND, nullptr) == 0;
    if (!mounted_) error_ = errno;
  }
  ~MountedProcSysNet() {
    if (mounted_) ::umount2(target_.c_str(), MNT_DETACH);
  }
  MountedProcSysNet(const MountedProcSysNet&) = delete;
  MountedProcSysNet& operator=(const MountedProcSysNet&) = delete;

  bool mounted() const { return mounted_; }
  int error() const { return error_; }
  const std::string& path() const { return target_; }

 private:
  std::string target_;
  bool mounted_ = false;
  int error_ = 0;
};

class AgentProcSysNetTest : public ::testing::Test {
 protected:
  void SetUp() override { HOSTPORT_SKIP_UNLESS_ROOT(); }

  TempDir dir_;
};

TEST_F(AgentProcSysNetTest, ReservesPoolPortsThroughAMountedProcSysNet) {
  ASSERT_OK_AND_ASSIGN(Netns netns, Netns::create());
  std::filesystem::create_directories(dir_ / "host/proc/sys/net");
  const MountedProcSysNet mount((dir_ / "host/proc/sys/net").string());
  ASSERT_TRUE(mount.mounted()) << "bind mount of /proc/sys/net: " << std::strerror(mount.error());

  ASSERT_OK_AND_ASSIGN(auto agent,
                       AgentProcess::start(HOSTPORT_AGENT_PATH, netns,
                                           {.portRange = kPool,
                                            .reserveLocalPorts = true,
                                            .extraArgs = {"--proc-sys-net", mount.path()}}));

  // Through the kernel's own path in the agent's netns: the mount led to that netns.
  EXPECT_THAT(netns.run([] { return readText("/proc/sys/net/ipv4/ip_local_reserved_ports"); }),
              Optional(std::string(kPool) + "\n"));
  EXPECT_TRUE(agent->waitForLog("path=" + mount.path() + "/ipv4/ip_local_reserved_ports"))
      << "the agent wrote somewhere else than under --proc-sys-net";
}

TEST_F(AgentProcSysNetTest, WritesUnderTheGivenRootAndNotUnderProcSysNet) {
  // A plain directory standing in for the mount: only the root the agent is given can change.
  std::filesystem::create_directories(dir_ / "net/ipv4");
  const std::string reserved = (dir_ / "net/ipv4/ip_local_reserved_ports").string();
  std::ofstream(reserved) << "8080\n";

  ASSERT_OK_AND_ASSIGN(
      auto agent, AgentProcess::start(HOSTPORT_AGENT_PATH,
                                      {.portRange = kPool,
                                       .reserveLocalPorts = true,
                                       .extraArgs = {"--proc-sys-net", (dir_ / "net").string()},
                                       .privateNetns = true}));

  EXPECT_EQ(readText(reserved), "8080," + std::string(kPool) + "\n");
  const std::string agentNetns = "/proc/" + std::to_string(agent->pid()) + "/ns/net";
  std::string own;
  ASSERT_OK(runInNetnsPath(agentNetns,
                           [&] { own = readText("/proc/sys/net/ipv4/ip_local_reserved_ports"); }));
  EXPECT_EQ(own, "\n") << "the agent's netns got the reservation besides its --proc-sys-net";
}

TEST_F(AgentProcSysNetTest, RefusesARelativeRootNamingTheField) {
  auto agent = AgentProcess::start(
      HOSTPORT_AGENT_PATH,
      {.portRange = kPool, .extraArgs = {"--proc-sys-net", "proc/sys/net"}, .privateNetns = true});
  ASSERT_FALSE(agent.has_value()) << "the agent started with a relative procSysNet";
  EXPECT_THAT(agent.error().message, HasSubstr("agent.config_invalid"));
  EXPECT_THAT(agent.error().message, HasSubstr("procSysNet: "));
  EXPECT_THAT(agent.error().message, HasSubstr("proc/sys/net"));
  EXPECT_THAT(agent.error().message, HasSubstr("must be an absolute path"));
}

}  // namespace
}  // namespace hostport::test
