#pragma once
// The soak's node: a CniNode (node netns, bridge + host-local, the built plugin), the built
// hostport-agent in its node netns with its state dir on a small tmpfs, and what the soak
// knows about the agent's availability, so that a failed operation can be told expected (the
// agent was down, killed, out of disk, or the table was deleted under it) from unexpected.

#include <sys/mount.h>
#include <sys/stat.h>

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "tests/soak/soak_model.h"
#include "tests/support/agent_process.h"
#include "tests/support/cni_node.h"
#include "tests/support/temp_dir.h"

namespace hostport::soak {

using namespace std::chrono_literals;

// The agent's settings for the soak, and the windows the invariants allow (docs/soak.md).
inline constexpr int kTableRepairSeconds = 5;    // tableRepairSeconds: the backstop pass
inline constexpr int kVanishedGraceSeconds = 3;  // vanishedGraceSeconds
inline constexpr auto kLivenessInterval = 2s;    // the agent's liveness period (docs/design.md)
/// A flushed or deleted table, a stray element or a DEL's release note are repaired by the next
/// pass: at once on the table's change events, at the latest after tableRepairSeconds. Twice that,
/// plus slack for a loaded 2-core machine.
inline constexpr auto kRepairGrace = std::chrono::seconds(2 * kTableRepairSeconds) + 5s;
/// A netns removed without DEL: released once gone for vanishedGraceSeconds, judged every
/// liveness period, counted from the removal or the agent's start, whichever is later.
inline constexpr auto kVanishGrace =
    std::chrono::seconds(kVanishedGraceSeconds) + kLivenessInterval + 10s;

inline constexpr uint16_t kStaticFirst = 20000;  // static hostPorts: outside the pools and the
inline constexpr uint16_t kStaticCount = 200;    // node's ephemeral ports

inline constexpr const char* kAgentConfig = R"(compactAfterJournalBytes: 32768
tableRepairSeconds: 5
vanishedGraceSeconds: 3
metricsAddress: ""
pools:
  default:
    ranges: ["30000-37999"]
    strategy: random
    reuseDelaySeconds: 5
  media:
    ranges: ["38000-39999"]
    strategy: round-robin
    reuseDelaySeconds: 5
)";

/// Whether the agent serves, and an epoch that moves at every disruption (a kill, an exit, the
/// disk filling or freed, the table deleted), with its reason.
class AgentState {
 public:
  struct Snapshot {
    uint64_t epoch = 0;
    bool up = false;
    bool enospc = false;
    Clock::time_point at;
  };
  Snapshot snapshot() const {
    std::lock_guard lock(mutex_);
    return {epoch_, up_, enospc_, Clock::now()};
  }
  /// The soak flushed the map or the table, or deleted the table: the agent's repair pass holds
  /// its writer's lock while it restores, and ADDs and DELs wait (docs/design.md).
  void tableChanged() {
    std::lock_guard lock(mutex_);
    tableChangedAt_ = Clock::now();
  }
  void bump(const std::string& reason, bool up) {
    std::lock_guard lock(mutex_);
    reasons_[++epoch_] = reason;
    up_ = up;
  }
  void markUp() {
    std::lock_guard lock(mutex_);
    up_ = true;
    readyAt_ = Clock::now();
  }
  void setEnospc(bool enospc) {
    std::lock_guard lock(mutex_);
    reasons_[++epoch_] = "enospc";
    enospc_ = enospc;
  }
  Clock::time_point readyAt() const {
    std::lock_guard lock(mutex_);
    return readyAt_;
  }
  /// Why an operation between `before` and `after` may have failed; empty when nothing
  /// disturbed it (a failure is then unexpected).
  std::string disruption(const Snapshot& before, const Snapshot& after,
                         const std::string& failure) const {
    std::lock_guard lock(mutex_);
    if (before.enospc || after.enospc) return "enospc";
    if (!before.up) return "agent_down";
    if (before.epoch != after.epoch) return reasons_.at(after.epoch);
    // The plugin's deadline ran out while the agent repaired the table the soak had just flushed:
    // a pass that restores every lease holds the writer's lock throughout (docs/soak.md).
    if (failure.find("no answer within") != std::string::npos &&
        tableChangedAt_ >= before.at - kRepairGrace) {
      return "blocked_by_repair";
    }
    return {};
  }

 private:
  mutable std::mutex mutex_;
  uint64_t epoch_ = 0;
  bool up_ = false;
  bool enospc_ = false;
  Clock::time_point readyAt_ = Clock::now();
  Clock::time_point tableChangedAt_{};
  std::map<uint64_t, std::string> reasons_;
};

struct Env {
  static Result<std::unique_ptr<Env>> create(const std::string& agentPath,
                                             const std::string& pluginPath, int tmpfsKilobytes) {
    HOSTPORT_TRY(test::TempDir dir, test::TempDir::create());
    std::unique_ptr<Env> env(new Env(std::move(dir)));
    env->stateDir = env->dir.path() + "/state";
    if (::mkdir(env->stateDir.c_str(), 0700) != 0) {
      return failSystem(ErrorCode::kIo, "mkdir " + env->stateDir, errno);
    }
    const std::string mountOptions = "size=" + std::to_string(tmpfsKilobytes) + "k,mode=0700";
    if (::mount("hostport-soak", env->stateDir.c_str(), "tmpfs", MS_NOSUID | MS_NODEV,
                mountOptions.c_str()) != 0) {
      return failSystem(ErrorCode::kIo, "mount tmpfs on " + env->stateDir, errno);
    }
    env->mounted = true;
    HOSTPORT_TRY(env->node, test::CniNode::create(pluginPath));
    test::AgentOptions options{.configYaml = kAgentConfig,
                               .logLevel = "info",
                               .readyTimeout = 60s,
                               .stopTimeout = 10s,
                               .stateDir = env->stateDir};
    HOSTPORT_TRY(env->agent, test::AgentProcess::start(agentPath, env->node->node(), options));
    env->agentState.markUp();
    return env;
  }
  Env(const Env&) = delete;
  Env& operator=(const Env&) = delete;
  ~Env() {
    agent.reset();
    node.reset();
    if (mounted) ::umount2(stateDir.c_str(), MNT_DETACH);
  }

  /// Where the plugin keeps its attachment records (CniNode's default stateDir).
  std::string recordDir() const { return node->dir() + "/cni-state"; }

  test::TempDir dir;
  std::string stateDir;
  bool mounted = false;
  std::unique_ptr<test::CniNode> node;
  std::unique_ptr<test::AgentProcess> agent;
  AgentState agentState;

 private:
  explicit Env(test::TempDir tempDir) : dir(std::move(tempDir)) {}
};

}  // namespace hostport::soak
