// Installing the plugin: a whole file in place or the old one, with the mode the runtime needs,
// and a binary that cannot answer VERSION on this node refused loudly. The "plugins" here are
// small shell scripts, so each failure mode can be made on purpose.

#include "agent/cni_config/plugin_install.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <fstream>

#include "tests/support/result_assertions.h"
#include "tests/support/temp_dir.h"

namespace hostport::agent::cni_config {
namespace {

using std::chrono::milliseconds;

class PluginInstallTest : public ::testing::Test {
 protected:
  std::filesystem::path script(const std::string& name, const std::string& body) {
    const auto path = std::filesystem::path(dir_.path()) / name;
    std::ofstream(path) << "#!/bin/sh\n" << body << "\n";
    std::filesystem::permissions(path, std::filesystem::perms::owner_all);
    return path;
  }
  std::filesystem::path binDir() const { return std::filesystem::path(dir_.path()) / "bin"; }

  test::TempDir dir_;
};

TEST_F(PluginInstallTest, CopiesTheBinaryExecutableAndReadsItsVersion) {
  // Like the real plugin, it reads the request from stdin and answers its versions.
  const auto plugin = script("hostport-new", R"(read request
[ "$CNI_COMMAND" = VERSION ] || exit 9
echo '{"cniVersion":"1.1.0","supportedVersions":["1.0.0","1.1.0"]}')");

  ASSERT_OK_AND_ASSIGN(const InstalledPlugin installed,
                       installPlugin(plugin, binDir(), milliseconds(5000)));

  EXPECT_EQ(installed.path, binDir() / "hostport");
  EXPECT_EQ(installed.version, R"({"cniVersion":"1.1.0","supportedVersions":["1.0.0","1.1.0"]})");
  struct stat info {};
  ASSERT_EQ(::stat(installed.path.c_str(), &info), 0);
  EXPECT_EQ(info.st_mode & 07777, 0755u) << "the runtime execs it";
  EXPECT_EQ(std::filesystem::file_size(installed.path), std::filesystem::file_size(plugin));
  for (const auto& entry : std::filesystem::directory_iterator(binDir())) {
    EXPECT_EQ(entry.path().filename(), "hostport") << "no temp file left behind";
  }
}

TEST_F(PluginInstallTest, ABinaryThatFailsOnThisNodeIsRefusedWithWhatItSaid) {
  const auto broken = script("broken", "echo 'error while loading shared libraries' >&1; exit 127");

  auto installed = installPlugin(broken, binDir(), milliseconds(5000));

  ASSERT_FALSE(installed);
  EXPECT_NE(installed.error().message.find("exited 127 on VERSION"), std::string::npos)
      << installed.error().message;
  EXPECT_NE(installed.error().message.find("shared libraries"), std::string::npos);
}

TEST_F(PluginInstallTest, AnAnswerThatIsNoVersionResultIsRefused) {
  auto answered = pluginVersion(script("chatty", "echo hello"), milliseconds(5000));
  ASSERT_FALSE(answered);
  EXPECT_EQ(answered.error().code, ErrorCode::kDecode);
}

TEST_F(PluginInstallTest, APluginThatHangsIsKilledAtTheDeadline) {
  const auto started = std::chrono::steady_clock::now();
  auto answered = pluginVersion(script("hangs", "exec sleep 30"), milliseconds(200));
  ASSERT_FALSE(answered);
  EXPECT_NE(answered.error().message.find("did not answer VERSION within 200 ms"),
            std::string::npos)
      << answered.error().message;
  EXPECT_LT(std::chrono::steady_clock::now() - started, std::chrono::seconds(10))
      << "killed, not waited for";
}

TEST_F(PluginInstallTest, AMissingSourceNamesIt) {
  auto installed =
      installPlugin(std::filesystem::path(dir_.path()) / "nowhere", binDir(), milliseconds(5000));
  ASSERT_FALSE(installed);
  EXPECT_NE(installed.error().message.find("nowhere"), std::string::npos);
}

}  // namespace
}  // namespace hostport::agent::cni_config
