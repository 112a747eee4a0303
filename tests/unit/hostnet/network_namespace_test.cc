// What a netns path names (hostnet/network_namespace.h), against this process's own namespaces and
// files of every other kind: runs without privileges.

#include "hostnet/network_namespace.h"

#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "common/unique_fd.h"
#include "tests/support/temp_dir.h"

namespace hostport::hostnet {
namespace {

namespace fs = std::filesystem;

class NetworkNamespaceTest : public ::testing::Test {
 protected:
  test::TempDir dir_;
};

TEST_F(NetworkNamespaceTest, NamesTheNetworkNamespaceAPathLeadsToByItsInode) {
  struct stat own {};
  ASSERT_EQ(::stat("/proc/self/ns/net", &own), 0);
  // /proc/<pid>/ns/net is a magic link, and a symlink to it is followed too.
  fs::create_symlink("/proc/self/ns/net", dir_ / "link");
  for (const std::string& path : {std::string("/proc/self/ns/net"), (dir_ / "link").string()}) {
    SCOPED_TRACE(path);
    const auto found = networkNamespaceAt(path);
    ASSERT_TRUE(found.has_value()) << found.error().message;
    EXPECT_EQ(found->device, static_cast<uint64_t>(own.st_dev));
    EXPECT_EQ(found->inode, static_cast<uint64_t>(own.st_ino));
  }
}

TEST_F(NetworkNamespaceTest, RefusesEveryOtherKindOfFileSayingWhatItIs) {
  std::ofstream(dir_ / "file") << "not a namespace";
  ASSERT_EQ(::mkfifo((dir_ / "fifo").c_str(), 0600), 0);  // opening it must not block
  fs::create_directory(dir_ / "dir");
  fs::create_symlink(dir_ / "file", dir_ / "link-to-file");
  UniqueFd unixSocket(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  ASSERT_TRUE(unixSocket.valid());
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  const std::string socketPath = (dir_ / "sock").string();
  ASSERT_LT(socketPath.size(), sizeof address.sun_path);
  std::memcpy(address.sun_path, socketPath.c_str(), socketPath.size() + 1);
  ASSERT_EQ(::bind(unixSocket.get(), reinterpret_cast<const sockaddr*>(&address), sizeof address),
            0);

  struct Case {
    std::string path;
    ErrorCode code;
    std::string message;
  };
  const std::vector<Case> cases = {
      {(dir_ / "file").string(), ErrorCode::kInvalidArgument,
       "is a regular file, not a network namespace"},
      {(dir_ / "link-to-file").string(), ErrorCode::kInvalidArgument,
       "is a regular file, not a network namespace"},
      {(dir_ / "fifo").string(), ErrorCode::kInvalidArgument, "is a FIFO, not a network namespace"},
      {(dir_ / "dir").string(), ErrorCode::kInvalidArgument,
       "is a directory, not a network namespace"},
      {socketPath, ErrorCode::kInvalidArgument, "is a socket, not a network namespace"},
      {"/dev/zero", ErrorCode::kInvalidArgument, "is a character device, not a network namespace"},
      {"/proc/self/ns/mnt", ErrorCode::kInvalidArgument,
       "is a mnt namespace, not a network namespace"},
      {"/proc/self/ns/uts", ErrorCode::kInvalidArgument,
       "is a uts namespace, not a network namespace"},
      {"/proc/self/ns/ipc", ErrorCode::kInvalidArgument,
       "is an ipc namespace, not a network namespace"},
      {"/proc/self/ns/pid", ErrorCode::kInvalidArgument,
       "is a pid namespace, not a network namespace"},
      {(dir_ / "missing").string(), ErrorCode::kNotFound, "does not exist"},
      {(dir_ / "file" / "below").string(), ErrorCode::kNotFound, "does not exist"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.path);
    const auto found = networkNamespaceAt(c.path);
    ASSERT_FALSE(found.has_value());
    EXPECT_EQ(found.error().code, c.code);
    EXPECT_EQ(found.error().message, c.message);
  }
}

}  // namespace
}  // namespace hostport::hostnet
