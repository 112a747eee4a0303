// The built hostport-agent started on a state dir that was damaged while it was stopped
// (agent/store/journal_file.h, "A header shorter than 16 bytes"). A live journal is named by a
// snapshot whose rename came after the journal's header was fsynced, so no crash leaves it
// missing or shorter than its header: emptied, cut or removed after acknowledged grants, it must
// stop the start (exit 1, store.failed naming the file), not bring the agent up with fewer leases
// to grant their ports a second time. What a crash can leave must still start.
//
// Each case runs its own agent in a private network namespace (tests/support's AgentProcess),
// with its state dir in the AgentProcess's temp dir. HOSTPORT_TEST_AGENT=<path> runs another agent
// binary (an older one, to see that this test notices what it lets through).

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <vector>

#include "agent/api/agent_client.h"
#include "lease/lease.h"
#include "tests/support/agent_process.h"
#include "tests/support/live_journal_damage.h"
#include "tests/support/netns.h"
#include "tests/support/result_assertions.h"
#include "tests/support/wait.h"

#ifndef HOSTPORT_AGENT_PATH
#error "HOSTPORT_AGENT_PATH must name the hostport-agent binary"
#endif

namespace hostport::test {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

// A compaction after some 20 grants, and none again before the test's last ones.
constexpr uint64_t kCompactAfterJournalBytes = 4096;
constexpr int kGrantsAfterCompaction = 5;

void writeFile(const fs::path& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
}

AllocationRequest requestFor(int i) {
  AllocationRequest request;
  request.key = {"c" + std::to_string(i), "eth0"};
  request.pod = {"ns", "pod-" + std::to_string(i), ""};
  request.dynamics.push_back({"web", 80, 1, PortProtocol::kTcp});
  return request;
}

std::vector<AttachmentKey> keysOf(std::vector<Lease> leases) {
  std::vector<AttachmentKey> keys;
  for (const auto& lease : leases) keys.push_back(lease.key);
  std::ranges::sort(keys, [](const auto& a, const auto& b) { return a.str() < b.str(); });
  return keys;
}

class AgentStateDirTest : public ::testing::Test {
 protected:
  void SetUp() override { HOSTPORT_SKIP_UNLESS_ROOT(); }

  /// A fresh agent; with `compacting`, one that compacts after kCompactAfterJournalBytes.
  Result<std::unique_ptr<AgentProcess>> startAgent(bool compacting) {
    AgentOptions options{.portRange = "40000-40999",
                         .reserveLocalPorts = false,
                         .logLevel = "info",
                         .extraArgs = {"--table-repair-interval", "0"},
                         .privateNetns = true};
    if (compacting) {
      options.configYaml =
          "compactAfterJournalBytes: " + std::to_string(kCompactAfterJournalBytes) + "\n";
    }
    return AgentProcess::start(agentUnderTest(HOSTPORT_AGENT_PATH), options);
  }

  /// Acknowledged grants and a release. With `compacting`: grants until the compaction to
  /// generation 1 is complete (journal.0 is gone), then kGrantsAfterCompaction more and the
  /// release, which journal.1 holds. `held`: the leases the agent then holds. Stops the agent.
  void grantAndRelease(AgentProcess& agent, bool compacting, std::vector<Lease>& held) {
    const auto client = agent.client();
    const fs::path dir = agent.stateDir();
    int next = 0;
    if (compacting) {
      for (; fs::exists(dir / "journal.0"); ++next) {
        ASSERT_LT(next, 200) << "no compaction; " << agent.describe();
        ASSERT_OK(client.allocate(requestFor(next)));
        // The compaction runs after the write that crossed the threshold: let it finish.
        (void)waitUntil([&] { return !fs::exists(dir / "journal.0"); },
                        std::chrono::milliseconds(20));
      }
      ASSERT_TRUE(fs::exists(dir / "journal.1")) << agent.describe();
    }
    for (int i = 0; i < kGrantsAfterCompaction; ++i, ++next) {
      ASSERT_OK(client.allocate(requestFor(next)));
    }
    ASSERT_OK_AND_ASSIGN(const auto released, client.release(requestFor(0).key));
    ASSERT_TRUE(released.has_value());
    ASSERT_OK_AND_ASSIGN(held, client.list("", ""));
    ASSERT_EQ(held.size(), static_cast<size_t>(next - 1));
    ASSERT_OK(agent.stop());
    ASSERT_FALSE(fs::exists(dir / (compacting ? "journal.2" : "journal.1")))
        << "more compactions than the test meant";
  }

  /// Starts `agent` again and expects it to serve `held` exactly.
  void expectStartsWith(AgentProcess& agent, const std::vector<Lease>& held) {
    ASSERT_OK(agent.restart());
    ASSERT_OK_AND_ASSIGN(const auto leases, agent.client().list("", ""));
    EXPECT_EQ(keysOf(leases), keysOf(held)) << agent.describe();
  }
};

// Issue 29, item 5: after a compaction, `: > state/journal.1` and a restart came up with the
// snapshot's leases alone, no error, and granted the lost leases' ports again.
TEST_F(AgentStateDirTest, RefusesToStartOnALiveJournalEmptiedCutOrRemoved) {
  for (const LiveJournalDamage& damage : liveJournalDamages()) {
    SCOPED_TRACE(damage.name);
    ASSERT_OK_AND_ASSIGN(auto agent, startAgent(damage.compacted));
    std::vector<Lease> held;
    ASSERT_NO_FATAL_FAILURE(grantAndRelease(*agent, damage.compacted, held));
    const fs::path live = fs::path(agent->stateDir()) / damage.journal();
    damage.applyTo(live);

    if (agent->restart()) {
      const auto leases = agent->client().list("", "");
      ADD_FAILURE() << "the agent started on a damaged state dir with "
                    << (leases ? std::to_string(leases->size()) : leases.error().message)
                    << " leases of " << held.size() << "; " << agent->describe();
      continue;
    }
    ASSERT_OK_AND_ASSIGN(const std::string ended, agent->reap());
    EXPECT_EQ(ended, "exit 1");
    const std::string log = agent->runLog();
    EXPECT_THAT(log, HasSubstr(" error store: store.failed cause=\"lease store " +
                               agent->stateDir() + ": "));
    EXPECT_THAT(log, HasSubstr(live.string()));
    EXPECT_THAT(log, HasSubstr("refusing to start"));
    EXPECT_THAT(log, HasSubstr(" exit_in_ms=0\n"));
    EXPECT_THAT(log, ::testing::Not(HasSubstr("store.recovered")));
    // Left as it was found, for an operator to inspect or restore.
    EXPECT_EQ(fs::exists(live), damage.keep.has_value());
    if (damage.keep) {
      EXPECT_EQ(fs::file_size(live), *damage.keep);
    }
  }
}

// What a crash can leave still starts: a first start cut short before the store's first snapshot
// (journal.0 short, no snapshot), a compaction cut short before its rename (the next journal
// short), and a state dir from before every store had a snapshot (journal.0 alone).
TEST_F(AgentStateDirTest, StartsOnWhatACrashOrAnOlderAgentLeaves) {
  {
    SCOPED_TRACE("journal.0 whose creation was torn, no snapshot");
    ASSERT_OK_AND_ASSIGN(auto agent, startAgent(false));
    ASSERT_OK(agent->stop());
    const fs::path dir = agent->stateDir();
    fs::remove(dir / "snapshot");
    fs::resize_file(dir / "journal.0", 9);
    ASSERT_NO_FATAL_FAILURE(expectStartsWith(*agent, {}));
    EXPECT_THAT(agent->runLog(), HasSubstr(" torn_tail=true torn_bytes=9 "));
    EXPECT_TRUE(fs::exists(dir / "snapshot"));
  }
  {
    SCOPED_TRACE("a compaction's next journal torn before its rename");
    ASSERT_OK_AND_ASSIGN(auto agent, startAgent(true));
    std::vector<Lease> held;
    ASSERT_NO_FATAL_FAILURE(grantAndRelease(*agent, true, held));
    const fs::path dir = agent->stateDir();
    writeFile(dir / "journal.2", "HPJL");
    ASSERT_NO_FATAL_FAILURE(expectStartsWith(*agent, held));
    EXPECT_FALSE(fs::exists(dir / "journal.2"));
  }
  {
    SCOPED_TRACE("journal.0 alone, as an agent before first snapshots left it");
    ASSERT_OK_AND_ASSIGN(auto agent, startAgent(false));
    std::vector<Lease> held;
    ASSERT_NO_FATAL_FAILURE(grantAndRelease(*agent, false, held));
    const fs::path dir = agent->stateDir();
    fs::remove(dir / "snapshot");
    ASSERT_NO_FATAL_FAILURE(expectStartsWith(*agent, held));
    EXPECT_TRUE(fs::exists(dir / "snapshot"));
  }
}

}  // namespace
}  // namespace hostport::test
