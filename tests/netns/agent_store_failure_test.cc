// The built hostport-agent when its lease journal cannot be written: the state dir is a small
// tmpfs that the test fills, so the journal's next pwrite fails with ENOSPC. The agent must log
// the cause (store.failed), fail /healthz, answer the request whose record failed, and exit 1
// after its grace instead of serving on. The tmpfs lives in this test process's own mount
// namespace and is unmounted on the way out, whatever happens.

#include <fcntl.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sched.h>
#include <sys/mount.h>
#include <unistd.h>

#include <cerrno>
#include <string>

#include "common/unique_fd.h"
#include "tests/support/agent_process.h"
#include "tests/support/netns.h"
#include "tests/support/result_assertions.h"

#ifndef HOSTPORT_AGENT_PATH
#error "HOSTPORT_AGENT_PATH must name the hostport-agent binary"
#endif

namespace hostport::test {
namespace {

using ::testing::HasSubstr;

/// A tmpfs of `kilobytes` on `path`, unmounted on destruction.
class SmallTmpfs {
 public:
  static Result<std::unique_ptr<SmallTmpfs>> mount(const std::string& path, int kilobytes) {
    const std::string options = "size=" + std::to_string(kilobytes) + "k,mode=0700";
    if (::mount("hostport-test", path.c_str(), "tmpfs", MS_NOSUID | MS_NODEV, options.c_str()) !=
        0) {
      const int error = errno;
      return failSystem(ErrorCode::kIo, "mount tmpfs on " + path, error);
    }
    return std::unique_ptr<SmallTmpfs>(new SmallTmpfs(path));
  }
  ~SmallTmpfs() { ::umount2(path_.c_str(), MNT_DETACH); }
  SmallTmpfs(const SmallTmpfs&) = delete;
  SmallTmpfs& operator=(const SmallTmpfs&) = delete;

  /// Writes a file until the file system is full: pages first, then single bytes.
  Result<void> fill() const {
    const std::string filler = path_ + "/filler";
    UniqueFd fd(::open(filler.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0600));
    if (!fd.valid()) {
      const int error = errno;
      return failSystem(ErrorCode::kIo, "open " + filler, error);
    }
    const std::string page(4096, 'f');
    for (const std::size_t chunk : {page.size(), std::size_t{1}}) {
      while (::write(fd.get(), page.data(), chunk) > 0) {
      }
      if (const int error = errno; error != ENOSPC) {
        return failSystem(ErrorCode::kIo, "write " + filler, error);
      }
    }
    return {};
  }

 private:
  explicit SmallTmpfs(std::string path) : path_(std::move(path)) {}
  std::string path_;
};

class AgentStoreFailureTest : public ::testing::Test {
 protected:
  void SetUp() override {
    HOSTPORT_SKIP_UNLESS_ROOT();
    // A mount namespace of our own (the agents we start inherit it), whose mounts reach no one
    // else and go away with this process.
    ASSERT_EQ(::unshare(CLONE_NEWNS), 0)
        << systemError(ErrorCode::kIo, "unshare(CLONE_NEWNS)", errno).message;
    ASSERT_EQ(::mount("none", "/", nullptr, MS_REC | MS_PRIVATE, nullptr), 0)
        << systemError(ErrorCode::kIo, "make / private", errno).message;
  }
};

TEST_F(AgentStoreFailureTest, AJournalWriteThatFailsIsLoggedAndStopsTheAgentWithExitOne) {
  AgentOptions options{.portRange = "40000-40999",
                       .reserveLocalPorts = false,
                       .logLevel = "info",
                       .extraArgs = {"--table-repair-interval", "0"},
                       .privateNetns = true};
  ASSERT_OK_AND_ASSIGN(auto agent, AgentProcess::start(HOSTPORT_AGENT_PATH, options));
  // Move the state dir onto a tmpfs: stop, mount over the (then empty) dir, start again.
  ASSERT_OK(agent->stop());
  ASSERT_OK_AND_ASSIGN(const auto tmpfs, SmallTmpfs::mount(agent->stateDir(), 64));
  ASSERT_OK(agent->restart());
  ASSERT_OK(tmpfs->fill());

  // The journal's page has room for a few more records; the first that needs a page fails.
  const auto client = agent->client();
  std::optional<Error> failed;
  for (int i = 0; i < 500 && !failed; ++i) {
    AllocationRequest request;
    request.key = {"c" + std::to_string(i), "eth0"};
    request.pod = {"ns", "pod-" + std::to_string(i), ""};
    request.dynamics.push_back({"web", 80, 1, PortProtocol::kTcp});
    if (auto lease = client.allocate(request); !lease) failed = lease.error();
  }
  ASSERT_TRUE(failed.has_value()) << "the journal never failed; " << agent->describe();
  EXPECT_EQ(failed->code, ErrorCode::kIo) << failed->message;
  EXPECT_THAT(failed->message, HasSubstr("No space left on device"));
  // Within the grace, while the agent still runs and answers: unhealthy, with a 500.
  EXPECT_FALSE(client.getText("/healthz")) << "healthz still passes after the store failed";
  // An answer at all means the agent still runs: once it stops its io_context nobody answers.
  const auto health = client.exchange(agent::api::HttpMethod::kGet, "/healthz");
  ASSERT_OK(health) << "the agent must still answer within its grace; " << agent->describe();
  EXPECT_EQ(health->status, 500) << health->body;

  ASSERT_OK_AND_ASSIGN(const std::string ended, agent->reap());
  EXPECT_EQ(ended, "exit 1") << agent->describe();
  const std::string log = agent->runLog();
  EXPECT_THAT(log, HasSubstr(" error store: store.failed cause=\"journal "));
  EXPECT_THAT(log, HasSubstr("pwrite: No space left on device\" exit_in_ms=1000\n"));
  EXPECT_THAT(log, HasSubstr(" error agent: agent.exiting code=1 reason=store_failed\n"));
}

}  // namespace
}  // namespace hostport::test
