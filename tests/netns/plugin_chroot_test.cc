// The installed plugin runs on a node with no userspace library at all: the binary alone under a
// temp root, run with chroot, answers VERSION and, against a real agent whose directory is bound
// into that root, does ADD and DEL (traffic forwarded, then gone). This is what lets one binary
// serve Debian, Ubuntu 22.04, RHEL 9 and AL2023 nodes (docs/design.md, "A plugin that runs
// anywhere"). A dynamically linked binary in the same root fails, so the root really is empty.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "tests/netns/agent_plugin_fixture.h"
#include "tests/support/subprocess.h"
#include "tests/support/temp_dir.h"

namespace hostport::test {
namespace {

namespace fs = std::filesystem;

class PluginChrootTest : public AgentPluginTest {
 protected:
  PluginChrootTest() {
    fs::create_directories(root_ / "tmp");
    fs::copy_file(HOSTPORT_PLUGIN_PATH, root_ / "hostport");
    // The runtime's view of the plugin: a program that enters the empty root. Bound in, in a
    // mount namespace of the plugin's own so nothing leaks to the host: the temp base (where the
    // agent keeps its socket, state dir and release spool) at its own path, /proc (the
    // kernel's, which every node has: route_localnet lives there) and /run/netns (where the
    // pods' CNI_NETNS are, which the plugin checks: the runtime's paths are the node's).
    const std::string base = fs::path(root_.path()).parent_path().string();
    const std::string rootPath = (root_ / "root").string();
    fs::create_directories(rootPath + base);
    fs::create_directories(rootPath + "/proc");
    fs::create_directories(rootPath + "/run/netns");
    fs::rename(root_ / "hostport", rootPath + "/hostport");
    // Named as the plugin, so the harness configures it as it does the plugin itself.
    fs::create_directories(root_ / "bin");
    wrapper_ = (root_ / "bin" / "hostport").string();
    std::ofstream(wrapper_) << "#!/bin/sh\n"
                            << "exec /usr/bin/unshare --mount --propagation private /bin/sh -c '"
                            << "/bin/mount --bind " << base << " " << rootPath << base
                            << " && /bin/mount --rbind /proc " << rootPath << "/proc"
                            << " && /bin/mount --rbind /run/netns " << rootPath << "/run/netns"
                            << " && exec /usr/sbin/chroot " << rootPath << " /hostport'\n";
    fs::permissions(wrapper_, fs::perms::owner_all);
    pluginPath_ = wrapper_;
    rootPath_ = rootPath;
  }

  TempDir root_;
  std::string wrapper_;
  std::string rootPath_;
};

TEST_F(PluginChrootTest, TheRootHoldsNothingButThePlugin) {
  std::vector<std::string> entries;
  for (const auto& entry : fs::recursive_directory_iterator(rootPath_)) {
    // Nothing is mounted here outside the plugin's own mount namespace.
    if (entry.is_regular_file()) entries.push_back(entry.path().string());
  }
  EXPECT_THAT(entries, testing::ElementsAre(rootPath_ + "/hostport"));

  // The control: a dynamically linked program cannot even start there (its loader is missing).
  fs::copy_file(HOSTPORT_AGENT_PATH, rootPath_ + "/hostport-agent");
  auto dynamic = runCommand({.argv = {"/usr/sbin/chroot", rootPath_, "/hostport-agent", "--help"}});
  ASSERT_OK(dynamic);
  EXPECT_NE(dynamic->exitCode, 0) << dynamic->describe();
}

TEST_F(PluginChrootTest, AnswersVersionWithNoLibraryPresent) {
  auto version = runCommand({.argv = {wrapper_},
                             .env = {{"CNI_COMMAND", "VERSION"}},
                             .stdinData = R"({"cniVersion":"1.1.0"})"});
  ASSERT_OK(version);
  EXPECT_EQ(version->exitCode, 0) << version->describe();
  EXPECT_THAT(version->out, testing::HasSubstr("\"supportedVersions\""));
  EXPECT_THAT(version->out, testing::HasSubstr("\"1.1.0\""));
}

TEST_F(PluginChrootTest, AddsAndDeletesThroughTheAgentWithNoLibraryPresent) {
  ASSERT_NO_FATAL_FAILURE(startAgent());
  Pod* pod = addAgentPod("pod-a", "web=8080");
  ASSERT_NE(pod, nullptr);
  auto tcp = serve(*pod, Transport::kTcp, 8080);
  ASSERT_TRUE(tcp);
  const uint16_t web = grantedPort(*pod, "web", PortProtocol::kTcp);
  ASSERT_NE(web, 0);
  EXPECT_THAT(tcpRequest(outside(), kNodeIpV4, web), RepliesFrom("pod-a tcp"));

  auto deleted = node().delPlugin(*pod);
  ASSERT_OK(deleted);
  EXPECT_EQ(deleted->exitCode, 0) << deleted->describe();
  EXPECT_FALSE(leaseOf(*pod).has_value());
  EXPECT_THAT(ownedBy(entries(), pod->owner()), testing::IsEmpty());
}

TEST_F(PluginChrootTest, StandaloneLaysTheTableOutOverNetlinkWithNoLibraryPresent) {
  // No agent and no nft: the first ADD lays the table out itself.
  Pod* pod = addPod("pod-s", {.mappings = {{18080, 80, "tcp"}}});
  ASSERT_NE(pod, nullptr);
  auto tcp = serve(*pod, Transport::kTcp, 80);
  ASSERT_TRUE(tcp);
  EXPECT_THAT(tcpRequest(outside(), kNodeIpV4, 18080), RepliesFrom("pod-s tcp"));
  auto checked = node().check(*pod);
  ASSERT_OK(checked);
  EXPECT_EQ(checked->exitCode, 0) << checked->describe();
  auto deleted = node().delPlugin(*pod);
  ASSERT_OK(deleted);
  EXPECT_EQ(deleted->exitCode, 0) << deleted->describe();
  EXPECT_THAT(ownedBy(entries(), pod->owner()), testing::IsEmpty());
}

TEST_F(PluginChrootTest, DeletesByKeyWhileTheAgentIsDownWithNoLibraryPresent) {
  ASSERT_NO_FATAL_FAILURE(startAgent());
  Pod* pod = addAgentPod("pod-a", "web=8080");
  ASSERT_NE(pod, nullptr);
  ASSERT_FALSE(ownedBy(entries(), pod->owner()).empty());
  agent_.reset();  // stopped: the plugin removes the forwards itself and leaves a release note
  auto deleted = node().delPlugin(*pod);
  ASSERT_OK(deleted);
  EXPECT_EQ(deleted->exitCode, 0) << deleted->describe();
  EXPECT_THAT(ownedBy(entries(), pod->owner()), testing::IsEmpty());
}

}  // namespace
}  // namespace hostport::test
