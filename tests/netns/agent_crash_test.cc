// Crash consistency of hostport-agent: the agent is SIGKILLed in the middle of a storm of
// parallel allocations and releases and restarted on the same state directory. Every
// acknowledged lease must come back with exactly the acknowledged ports, no acknowledged release
// may come back, and no port may be in two leases (agent/store/lease_store.h, docs/design.md
// "Durability and recovery").
//
// The model: each client thread owns the keys it creates, and a key is never allocated again
// after it was released, so the expected state of every key is exact. Per key the thread keeps
// the last ACKNOWLEDGED operation; an operation whose reply was lost (the kill reset the
// connection) is "unknown", and either outcome is accepted for that key. After each restart the
// recovered state resolves the unknowns (what recovery found is on disk and stays there), and the
// next round storms on the accumulated state. A small compactAfterJournalBytes makes snapshots
// happen mid-storm, so kills also land in and around compactions.
//
// The agent runs in a private network namespace of its own (tests/support's AgentProcess with
// AgentOptions::privateNetns), so its sock_diag probe sees only that namespace and nothing touches
// the host. State dir, socket, config and the agent's log live in the AgentProcess's temp dir,
// removed at the end.
//
// HOSTPORT_CRASH_SEED=<n> replays a run's random choices (not its thread timing; the seed is
// printed and recorded). HOSTPORT_TEST_AGENT=<path> runs another agent binary, e.g. one with a
// deliberately broken store, to see that this test notices.

#include <gtest/gtest.h>
#include <poll.h>
#include <sys/inotify.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <latch>
#include <map>
#include <optional>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "agent/api/agent_client.h"
#include "agent/api/json_codec.h"
#include "lease/lease.h"
#include "tests/support/agent_process.h"
#include "tests/support/netns.h"
#include "tests/support/result_assertions.h"

#ifndef HOSTPORT_AGENT_PATH
#error "HOSTPORT_AGENT_PATH must name the hostport-agent binary"
#endif

namespace hostport::agent {
namespace {

using namespace std::chrono_literals;
using api::AgentClient;
using test::AgentProcess;
using Clock = std::chrono::steady_clock;

constexpr PortRange kPool{20000, 39999};
constexpr uint64_t kCompactAfterJournalBytes = 16384;  // several compactions per round
constexpr int kStormThreads = 24;
constexpr int kRounds = 8;  // odd rounds kill at a random time, even ones in a compaction
constexpr std::size_t kTargetHeldPerThread = 48;   // keeps the pool far from exhaustion
constexpr int kMaxOpsPerThreadPerRound = 200'000;  // the kill ends a round long before this
constexpr int kMinAcksBeforeKill = 24;
constexpr auto kKillDelayMin = 50ms;
constexpr auto kKillDelayMax = 400ms;
constexpr auto kClientTimeout = 5s;
constexpr auto kReadyTimeout = 30s;
constexpr auto kStormStartTimeout = 30s;
constexpr auto kCompactionWaitTimeout = 5s;  // then the kill happens anyway

// ---------------------------------------------------------------------------------------------
// The agent and its state dir

/// The "store.recovered leases=N ms=M ..." line of the agent's current run, or "" if absent.
std::string recoveryLine(const AgentProcess& agent) {
  std::istringstream in(agent.runLog());
  for (std::string line; std::getline(in, line);) {
    if (const auto at = line.find("recovered "); at != std::string::npos) return line.substr(at);
  }
  return {};
}

/// The live journal generation (the highest N of journal.N) and whether a snapshot exists:
/// compactions have happened when the generation is above zero. `names` lists the directory, to
/// show where a kill landed (a snapshot.tmp or two journals mean in the middle of a compaction).
struct StoreFiles {
  uint64_t generation = 0;
  bool snapshot = false;
  std::string names;
};

StoreFiles storeFiles(const std::filesystem::path& stateDir) {
  StoreFiles files;
  std::vector<std::string> names;
  std::error_code error;
  for (const auto& entry : std::filesystem::directory_iterator(stateDir, error)) {
    const std::string name = entry.path().filename().string();
    if (name == "lock") continue;
    names.push_back(name);
    if (name == "snapshot") files.snapshot = true;
    if (name.starts_with("journal.")) {
      const std::string digits = name.substr(8);
      if (!digits.empty() && std::ranges::all_of(digits, ::isdigit)) {
        files.generation = std::max<uint64_t>(files.generation, std::stoull(digits));
      }
    }
  }
  std::ranges::sort(names);
  for (const auto& name : names) files.names += (files.names.empty() ? "" : " ") + name;
  return files;
}

/// When a round kills the agent: at a random time, or right when a compaction step shows up in
/// the state dir (inotify), so kills also land inside compactions (docs/design.md: write tmp,
/// fsync, rename, fsync the directory).
enum class KillPoint {
  kRandomTime,
  kSnapshotTmpCreated,  // compaction started writing the new snapshot
  kNewJournalCreated,   // the next generation's journal exists, the rename has not happened
  kSnapshotRenamed,     // the new snapshot is installed, the old journal not yet removed
};

std::string_view killPointName(KillPoint point) {
  switch (point) {
    case KillPoint::kRandomTime:
      return "random time";
    case KillPoint::kSnapshotTmpCreated:
      return "snapshot.tmp created";
    case KillPoint::kNewJournalCreated:
      return "new journal created";
    case KillPoint::kSnapshotRenamed:
      return "snapshot renamed";
  }
  return "?";
}

/// inotify on the state dir: creations and renames into it.
class DirWatch {
 public:
  explicit DirWatch(const std::filesystem::path& dir)
      : fd_(::inotify_init1(IN_NONBLOCK | IN_CLOEXEC)) {
    if (fd_ >= 0 && ::inotify_add_watch(fd_, dir.c_str(), IN_CREATE | IN_MOVED_TO) < 0) {
      ::close(fd_);
      fd_ = -1;
    }
  }
  ~DirWatch() {
    if (fd_ >= 0) ::close(fd_);
  }
  DirWatch(const DirWatch&) = delete;
  DirWatch& operator=(const DirWatch&) = delete;

  bool ok() const { return fd_ >= 0; }

  /// Drops what has happened so far, so waitFor() sees only later events.
  void drain() {
    alignas(inotify_event) char buffer[8192];
    while (::read(fd_, buffer, sizeof buffer) > 0) {
    }
  }

  /// Waits (bounded) for an event that `point` names; false on timeout.
  bool waitFor(KillPoint point, Clock::time_point deadline) {
    alignas(inotify_event) char buffer[8192];
    while (Clock::now() < deadline) {
      pollfd ready{fd_, POLLIN, 0};
      const auto left =
          std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
      if (::poll(&ready, 1, static_cast<int>(std::max<int64_t>(1, left.count()))) <= 0) continue;
      const ssize_t got = ::read(fd_, buffer, sizeof buffer);
      for (ssize_t at = 0; at < got;) {
        const auto* event = reinterpret_cast<const inotify_event*>(buffer + at);
        at += static_cast<ssize_t>(sizeof(inotify_event) + event->len);
        const std::string_view name = event->len > 0 ? event->name : "";
        if (matches(point, event->mask, name)) return true;
      }
    }
    return false;
  }

 private:
  static bool matches(KillPoint point, uint32_t mask, std::string_view name) {
    switch (point) {
      case KillPoint::kRandomTime:
        return false;
      case KillPoint::kSnapshotTmpCreated:
        return (mask & IN_CREATE) != 0 && name == "snapshot.tmp";
      case KillPoint::kNewJournalCreated:
        return (mask & IN_CREATE) != 0 && name.starts_with("journal.");
      case KillPoint::kSnapshotRenamed:
        return (mask & IN_MOVED_TO) != 0 && name == "snapshot";
    }
    return false;
  }

  int fd_;
};

// ---------------------------------------------------------------------------------------------
// The model

std::string show(const Lease& lease) { return api::toJson(lease).dump(); }

std::string showPorts(const Lease& lease) {
  std::string out;
  for (const auto& grant : lease.ports) {
    if (!out.empty()) out += ",";
    out += grant.hostPorts().str() + "/" + std::string(protocolName(grant.protocol));
  }
  return "[" + out + "]";
}

/// What the test knows about one key: its last acknowledged operation, or that the last one's
/// outcome is unknown.
struct KeyState {
  enum class Kind {
    kHeld,             // allocate (or repeated allocate) acknowledged with `lease`
    kReleased,         // release acknowledged, or known absent after a restart
    kRejected,         // allocate answered with an error: nothing was granted
    kNeverAllocated,   // only ever released (a release of an unknown key)
    kUnknownAllocate,  // first allocate's reply lost: absent, or present with any ports
    kUnknownRelease,   // release of `lease` lost: absent, or present as `lease`
  };
  Kind kind = Kind::kReleased;
  std::optional<Lease> lease;
};

using Model = std::map<AttachmentKey, KeyState>;

/// What one storm round did, summed over its threads.
struct StormFigures {
  uint64_t ackedAllocates = 0;
  uint64_t ackedReallocates = 0;
  uint64_t ackedReleases = 0;
  uint64_t ackedReleasesOfUnknownKeys = 0;
  uint64_t rejected = 0;
  uint64_t unknownAllocates = 0;
  uint64_t unknownReleases = 0;

  StormFigures& operator+=(const StormFigures& other) {
    ackedAllocates += other.ackedAllocates;
    ackedReallocates += other.ackedReallocates;
    ackedReleases += other.ackedReleases;
    ackedReleasesOfUnknownKeys += other.ackedReleasesOfUnknownKeys;
    rejected += other.rejected;
    unknownAllocates += other.unknownAllocates;
    unknownReleases += other.unknownReleases;
    return *this;
  }
  uint64_t acked() const {
    return ackedAllocates + ackedReallocates + ackedReleases + ackedReleasesOfUnknownKeys;
  }
};

/// Transport failures and store failures leave the outcome open; any other error is a definite
/// answer that nothing happened.
bool outcomeUnknown(const Error& error) {
  return error.code == ErrorCode::kUnavailable || error.code == ErrorCode::kInternal ||
         error.code == ErrorCode::kIo;
}

/// One client thread of a storm: it owns `held` (keys it may release) and every key it creates.
class StormClient {
 public:
  StormClient(AgentClient client, int round, int index, uint64_t seed, std::vector<Lease> held)
      : client_(std::move(client)),
        round_(round),
        index_(index),
        rng_(seed),
        held_(std::move(held)) {}

  /// Runs until `stop` (or the bounded op count), counting acknowledgements into `acks`.
  void run(const std::atomic<bool>& stop, std::atomic<uint64_t>& acks) {
    for (int op = 0; op < kMaxOpsPerThreadPerRound && !stop.load(); ++op) {
      const double roll = std::uniform_real_distribution<double>(0, 1)(rng_);
      const double allocateShare = held_.size() < kTargetHeldPerThread ? 0.62 : 0.38;
      bool acked = false;
      if (held_.empty() || roll < allocateShare) {
        acked = allocateNew();
      } else if (roll < allocateShare + 0.04) {
        acked = reallocateHeld();
      } else if (roll < allocateShare + 0.06) {
        acked = releaseUnknownKey();
      } else {
        acked = releaseHeld();
      }
      if (acked) acks.fetch_add(1, std::memory_order_relaxed);
    }
  }

  const Model& model() const { return model_; }
  const StormFigures& figures() const { return figures_; }
  const std::vector<std::string>& problems() const { return problems_; }

 private:
  AttachmentKey freshKey() {
    char id[64];
    std::snprintf(id, sizeof id, "crash-r%d-t%02d-%06d", round_, index_, next_++);
    return {id, next_ % 5 == 0 ? "net1" : "eth0"};
  }

  AllocationRequest randomRequest(const AttachmentKey& key) {
    AllocationRequest request;
    request.key = key;
    request.pod = {"crash", "pod-" + key.containerId, ""};
    const int rows = std::uniform_int_distribution<int>(1, 3)(rng_);
    for (int i = 0; i < rows; ++i) {
      DynamicPortRequest row;
      row.name = "p" + std::to_string(i);
      row.containerPort = static_cast<uint16_t>(8000 + 100 * i);
      const int protocol = std::uniform_int_distribution<int>(0, 9)(rng_);
      row.protocol = protocol < 5   ? PortProtocol::kTcp
                     : protocol < 7 ? PortProtocol::kUdp
                     : protocol < 9 ? PortProtocol::kTcpUdp
                                    : PortProtocol::kSctp;
      if (std::uniform_int_distribution<int>(0, 4)(rng_) == 0) {
        row.count = static_cast<uint16_t>(std::uniform_int_distribution<int>(2, 12)(rng_));
      }
      request.dynamics.push_back(row);
    }
    return request;
  }

  /// The acknowledged lease must be what was asked for; a mismatch is a bug of its own.
  void checkGrant(const AllocationRequest& request, const Lease& lease) {
    auto problem = [&](const std::string& what) {
      problems_.push_back("allocate " + request.key.str() + " acknowledged a bad lease (" + what +
                          "): " + show(lease));
    };
    if (lease.key != request.key) return problem("another key");
    if (lease.ports.size() != request.dynamics.size()) return problem("wrong number of rows");
    for (std::size_t i = 0; i < lease.ports.size(); ++i) {
      const auto& grant = lease.ports[i];
      const auto& asked = request.dynamics[i];
      if (grant.name != asked.name || grant.protocol != asked.protocol ||
          grant.count != asked.count || grant.containerPort != asked.containerPort ||
          grant.isStatic) {
        return problem("row " + std::to_string(i) + " differs from the request");
      }
      if (!kPool.contains(grant.hostPort) || !kPool.contains(grant.hostPort + grant.count - 1)) {
        return problem("row " + std::to_string(i) + " outside the pool " + kPool.str());
      }
    }
  }

  bool allocateNew() {
    const auto request = randomRequest(freshKey());
    auto lease = client_.allocate(request);
    KeyState& state = model_[request.key];
    if (lease) {
      checkGrant(request, *lease);
      state = {KeyState::Kind::kHeld, *lease};
      held_.push_back(std::move(*lease));
      ++figures_.ackedAllocates;
      return true;
    }
    if (outcomeUnknown(lease.error())) {
      state = {KeyState::Kind::kUnknownAllocate, std::nullopt};
      ++figures_.unknownAllocates;
      return false;
    }
    state = {KeyState::Kind::kRejected, std::nullopt};
    ++figures_.rejected;
    problems_.push_back("allocate " + request.key.str() + " was refused (the pool is sized never " +
                        "to run out): " + lease.error().message);
    return false;
  }

  /// ADD is idempotent: the same key again must return the same lease, whatever is asked.
  bool reallocateHeld() {
    const Lease& lease =
        held_[std::uniform_int_distribution<std::size_t>(0, held_.size() - 1)(rng_)];
    auto again = client_.allocate(randomRequest(lease.key));
    model_[lease.key] = {KeyState::Kind::kHeld, lease};
    if (!again) {
      // Unknown or refused, a repeated allocate cannot change the lease: the key stays held.
      if (!outcomeUnknown(again.error())) {
        problems_.push_back("repeated allocate of held " + lease.key.str() +
                            " was refused: " + again.error().message);
      }
      return false;
    }
    if (*again != lease) {
      problems_.push_back("repeated allocate of " + lease.key.str() + " acknowledged " +
                          show(*again) + " but the key holds " + show(lease));
    }
    ++figures_.ackedReallocates;
    return true;
  }

  bool releaseHeld() {
    const std::size_t at = std::uniform_int_distribution<std::size_t>(0, held_.size() - 1)(rng_);
    std::swap(held_[at], held_.back());
    Lease lease = std::move(held_.back());
    held_.pop_back();
    auto released = client_.release(lease.key);
    KeyState& state = model_[lease.key];
    if (!released) {
      if (!outcomeUnknown(released.error())) {
        problems_.push_back("release of held " + lease.key.str() +
                            " was refused: " + released.error().message);
      }
      state = {KeyState::Kind::kUnknownRelease, std::move(lease)};
      ++figures_.unknownReleases;
      return false;
    }
    if (!*released) {
      problems_.push_back("release of " + lease.key.str() + " acknowledged \"nothing there\" but " +
                          "the key held the acknowledged lease " + show(lease));
    } else if (**released != lease) {
      problems_.push_back("release of " + lease.key.str() + " acknowledged " + show(**released) +
                          " but the key held " + show(lease));
    }
    state = {KeyState::Kind::kReleased, std::nullopt};
    ++figures_.ackedReleases;
    return true;
  }

  /// Releasing a key that never had a lease succeeds with null and must not create anything.
  bool releaseUnknownKey() {
    const AttachmentKey key = freshKey();
    model_[key] = {KeyState::Kind::kNeverAllocated, std::nullopt};
    auto released = client_.release(key);
    if (!released) return false;
    if (*released) {
      problems_.push_back("release of never-allocated " + key.str() +
                          " acknowledged a lease: " + show(**released));
    }
    ++figures_.ackedReleasesOfUnknownKeys;
    return true;
  }

  AgentClient client_;
  int round_;
  int index_;
  std::mt19937_64 rng_;
  int next_ = 0;
  std::vector<Lease> held_;
  Model model_;
  StormFigures figures_;
  std::vector<std::string> problems_;
};

// ---------------------------------------------------------------------------------------------
// Checking a recovered state against the model

struct Recovered {
  std::vector<Lease> leases;
  std::vector<api::PoolUsageRow> pools;
};

Result<Recovered> readState(const AgentClient& client) {
  Recovered state;
  auto leases = client.list("", "");
  if (!leases) return withContext(leases.error(), "listing leases");
  auto pools = client.poolUsage();
  if (!pools) return withContext(pools.error(), "reading pool usage");
  state.leases = std::move(*leases);
  state.pools = std::move(*pools);
  return state;
}

struct CheckFigures {
  uint64_t leases = 0;
  uint64_t portNumbers = 0;
  uint64_t unknownAllocatesLanded = 0;
  uint64_t unknownAllocatesLost = 0;
  uint64_t unknownReleasesTookEffect = 0;
  uint64_t unknownReleasesDidNot = 0;
};

/// Checks `state` against `model` and returns every violation, each naming what was
/// acknowledged and what came back. `where` prefixes every message.
std::vector<std::string> checkRecovered(const Model& model, const Recovered& state,
                                        const std::string& where, CheckFigures& figures) {
  std::vector<std::string> problems;
  auto problem = [&](const std::string& text) { problems.push_back(where + ": " + text); };

  std::map<AttachmentKey, const Lease*> present;
  for (const Lease& lease : state.leases) {
    if (!present.emplace(lease.key, &lease).second) {
      problem("the list holds " + lease.key.str() + " twice");
    }
  }
  figures.leases = present.size();

  for (const auto& [key, expected] : model) {
    const auto found = present.find(key);
    const Lease* got = found == present.end() ? nullptr : found->second;
    switch (expected.kind) {
      case KeyState::Kind::kHeld:
        if (got == nullptr) {
          problem("LOST acknowledged allocation " + key.str() + " ports " +
                  showPorts(*expected.lease) + ": absent after restart (acked " +
                  show(*expected.lease) + ")");
        } else if (*got != *expected.lease) {
          problem("CHANGED acknowledged allocation " + key.str() + ": acked ports " +
                  showPorts(*expected.lease) + ", recovered ports " + showPorts(*got) + " (acked " +
                  show(*expected.lease) + ", recovered " + show(*got) + ")");
        }
        break;
      case KeyState::Kind::kReleased:
        if (got != nullptr) {
          problem("RESURRECTED acknowledged release of " + key.str() + ": came back as " +
                  show(*got));
        }
        break;
      case KeyState::Kind::kRejected:
        if (got != nullptr) {
          problem("refused allocation " + key.str() + " is present after restart: " + show(*got));
        }
        break;
      case KeyState::Kind::kNeverAllocated:
        if (got != nullptr) {
          problem("never-allocated key " + key.str() +
                  " (only released) is present: " + show(*got));
        }
        break;
      case KeyState::Kind::kUnknownAllocate:
        ++(got != nullptr ? figures.unknownAllocatesLanded : figures.unknownAllocatesLost);
        break;
      case KeyState::Kind::kUnknownRelease:
        if (got == nullptr) {
          ++figures.unknownReleasesTookEffect;
        } else if (*got != *expected.lease) {
          problem("CHANGED lease " + key.str() + " whose release reply was lost: acked ports " +
                  showPorts(*expected.lease) + ", recovered " + showPorts(*got));
        } else {
          ++figures.unknownReleasesDidNot;
        }
        break;
    }
  }

  // Nothing the test never asked for, no (protocol, port) twice, and every port in the pool.
  std::map<std::pair<Protocol, uint32_t>, AttachmentKey> owners;
  std::map<uint32_t, AttachmentKey> numberOwners;  // a dynamic grant holds its number for all
  uint64_t numberSlots = 0;
  for (const auto& [key, lease] : present) {
    if (!model.contains(key)) problem("PHANTOM lease the test never asked for: " + show(*lease));
    for (const auto& grant : lease->ports) {
      for (uint32_t port = grant.hostPort; port < uint32_t{grant.hostPort} + grant.count; ++port) {
        if (!kPool.contains(port)) {
          problem(key.str() + " holds port " + std::to_string(port) + " outside the pool " +
                  kPool.str());
        }
        ++numberSlots;
        numberOwners.emplace(port, key);
        for (const auto protocol : kernelProtocols(grant.protocol)) {
          const auto [at, inserted] = owners.emplace(std::pair(protocol, port), key);
          if (!inserted) {
            problem("DOUBLE-BOOKED " + std::string(protocolName(protocol)) + " port " +
                    std::to_string(port) + ": in " + at->second.str() + " and " + key.str());
          }
        }
      }
    }
  }
  figures.portNumbers = numberOwners.size();
  if (numberSlots != numberOwners.size()) {
    problem(std::to_string(numberSlots - numberOwners.size()) +
            " dynamic port numbers are granted to more than one lease (in different protocols)");
  }

  // The pool's own accounting agrees with the leases.
  const auto pool =
      std::ranges::find(state.pools, std::string(kDefaultPool), &api::PoolUsageRow::name);
  if (pool == state.pools.end()) {
    problem("GET /v1/pools has no default pool");
  } else {
    if (pool->size != kPool.size()) {
      problem("default pool size " + std::to_string(pool->size) + ", want " +
              std::to_string(kPool.size()));
    }
    if (pool->used != numberOwners.size()) {
      problem("GET /v1/pools says " + std::to_string(pool->used) + " ports used, the leases hold " +
              std::to_string(numberOwners.size()) + " port numbers");
    }
    if (pool->used + pool->free != pool->size) {
      problem("GET /v1/pools: used " + std::to_string(pool->used) + " + free " +
              std::to_string(pool->free) + " != size " + std::to_string(pool->size));
    }
  }
  return problems;
}

/// After a check, what recovery found is the truth: resolve the unknowns. Absent keys stay in
/// the model as released, so a later round still notices them coming back.
void resolve(Model& model, const Recovered& state) {
  std::map<AttachmentKey, const Lease*> present;
  for (const Lease& lease : state.leases) present.emplace(lease.key, &lease);
  for (auto& [key, expected] : model) {
    const auto found = present.find(key);
    if (found != present.end()) {
      expected = {KeyState::Kind::kHeld, *found->second};
    } else {
      expected = {KeyState::Kind::kReleased, std::nullopt};
    }
  }
}

/// Reports at most `limit` problems, each as its own failure, and says how many were left out.
void reportProblems(const std::vector<std::string>& problems, std::size_t limit = 25) {
  for (std::size_t i = 0; i < problems.size() && i < limit; ++i) ADD_FAILURE() << problems[i];
  if (problems.size() > limit) {
    ADD_FAILURE() << "... and " << problems.size() - limit << " more problems like these";
  }
}

uint64_t chooseSeed() {
  if (const char* text = std::getenv("HOSTPORT_CRASH_SEED"); text != nullptr && *text != '\0') {
    return std::strtoull(text, nullptr, 10);
  }
  return (uint64_t{std::random_device{}()} << 32) ^ std::random_device{}();
}

// ---------------------------------------------------------------------------------------------
// The fixture: one agent in a private netns, restarted on the same state dir.

class AgentCrashTest : public ::testing::Test {
 protected:
  void SetUp() override { HOSTPORT_SKIP_UNLESS_ROOT(); }

  void TearDown() override {
    if (HasFailure() && agent_) std::cerr << agent_->describe() << "\n";
  }

  /// Starts the agent the first time, or restarts it on the same state dir, and waits until it
  /// is ready.
  Result<void> startAgent() {
    if (agent_) return agent_->restart();
    std::ostringstream config;
    config << "compactAfterJournalBytes: " << kCompactAfterJournalBytes << "\n";
    HOSTPORT_TRY(agent_, AgentProcess::start(test::agentUnderTest(HOSTPORT_AGENT_PATH),
                                             {.portRange = kPool.str(),
                                              .configYaml = config.str(),
                                              .reserveLocalPorts = false,
                                              .logLevel = "info",
                                              .readyTimeout = kReadyTimeout,
                                              .privateNetns = true}));
    return {};
  }

  /// Waits for the SIGKILLed agent to be gone and checks that nothing but the kill ended it.
  void expectEndedBySigkill() {
    ASSERT_OK_AND_ASSIGN(const std::string ended, agent_->reap());
    ASSERT_EQ(ended, "killed by signal 9") << "hostport-agent ended on its own before the SIGKILL";
  }

  AgentClient client() const { return agent_->client(kClientTimeout); }
  std::filesystem::path stateDir() const { return agent_->stateDir(); }

  std::unique_ptr<AgentProcess> agent_;
};

TEST_F(AgentCrashTest, EveryAcknowledgedOperationSurvivesSigkillDuringAStorm) {
  const uint64_t seed = chooseSeed();
  RecordProperty("seed", std::to_string(seed));
  std::cout << "[ crash    ] seed " << seed << " (HOSTPORT_CRASH_SEED to replay)" << std::endl;
  std::mt19937_64 rng(seed);

  ASSERT_OK(startAgent()) << "first start";
  Model model;
  uint64_t totalAcked = 0;
  uint64_t highestGeneration = 0;
  for (int round = 1; round <= kRounds; ++round) {
    SCOPED_TRACE("round " + std::to_string(round) + " of seed " + std::to_string(seed));

    // Hand the held leases out to the clients, so releases also hit leases of earlier rounds
    // (restored from the snapshot and journal).
    std::vector<std::vector<Lease>> held(kStormThreads);
    int next = 0;
    for (const auto& [key, state] : model) {
      if (state.kind == KeyState::Kind::kHeld) held[next++ % kStormThreads].push_back(*state.lease);
    }
    std::vector<std::unique_ptr<StormClient>> clients;
    for (int i = 0; i < kStormThreads; ++i) {
      clients.push_back(
          std::make_unique<StormClient>(client(), round, i, rng(), std::move(held[i])));
    }

    const KillPoint killPoint =
        round % 2 == 1 ? KillPoint::kRandomTime
                       : std::array{KillPoint::kSnapshotTmpCreated, KillPoint::kNewJournalCreated,
                                    KillPoint::kSnapshotRenamed}[(round / 2 - 1) % 3];
    DirWatch watch(stateDir());
    const int watchError = errno;  // of the inotify call that failed, if one did
    ASSERT_TRUE(watch.ok())
        << systemError(ErrorCode::kIo, "inotify on " + stateDir().string(), watchError).message;

    std::atomic<bool> stop{false};
    std::atomic<uint64_t> acks{0};
    std::latch started(kStormThreads);
    std::vector<std::jthread> threads;
    for (auto& each : clients) {
      threads.emplace_back([&, client = each.get()] {
        started.count_down();
        client->run(stop, acks);
      });
    }
    // Kill only once the storm is under way: some acknowledgements, then a random delay.
    started.wait();
    const auto stormStart = Clock::now();
    while (acks.load() < kMinAcksBeforeKill && Clock::now() - stormStart < kStormStartTimeout) {
      std::this_thread::sleep_for(1ms);
    }
    const auto delay = std::chrono::milliseconds(
        std::uniform_int_distribution<int64_t>(kKillDelayMin.count(), kKillDelayMax.count())(rng));
    std::this_thread::sleep_for(delay);  // the random point of the kill, not a synchronisation
    bool pointSeen = killPoint == KillPoint::kRandomTime;
    if (!pointSeen) {
      watch.drain();
      pointSeen = watch.waitFor(killPoint, Clock::now() + kCompactionWaitTimeout);
    }
    const auto acksBeforeKill = acks.load();
    const auto killedAt = Clock::now();
    const auto sent = agent_->killWithoutReaping();
    stop = true;
    threads.clear();  // joins
    ASSERT_OK(sent);
    ASSERT_NO_FATAL_FAILURE(expectEndedBySigkill());
    ASSERT_GE(acksBeforeKill, static_cast<uint64_t>(kMinAcksBeforeKill))
        << "the storm never got going: " << acksBeforeKill << " acknowledgements";

    StormFigures figures;
    std::vector<std::string> problems;
    for (const auto& client : clients) {
      figures += client->figures();
      for (const auto& [key, state] : client->model()) model[key] = state;
      problems.insert(problems.end(), client->problems().begin(), client->problems().end());
    }
    totalAcked += figures.acked();
    const auto files = storeFiles(stateDir());
    highestGeneration = std::max(highestGeneration, files.generation);

    ASSERT_OK(startAgent()) << "restart after the kill of round " << round;
    auto state = readState(client());
    ASSERT_OK(state);
    CheckFigures checked;
    const auto recoveredProblems =
        checkRecovered(model, *state, "round " + std::to_string(round), checked);
    problems.insert(problems.end(), recoveredProblems.begin(), recoveredProblems.end());

    const auto stormMs =
        std::chrono::duration_cast<std::chrono::milliseconds>(killedAt - stormStart).count();
    std::ostringstream line;
    line << "storm " << stormMs << " ms (kill at " << killPointName(killPoint)
         << (pointSeen ? "" : " NOT SEEN, killed anyway") << ", " << delay.count() << " ms after "
         << kMinAcksBeforeKill << " acks); acked: " << figures.ackedAllocates << " allocs, "
         << figures.ackedReleases << " releases, " << figures.ackedReallocates
         << " repeated allocs, " << figures.ackedReleasesOfUnknownKeys
         << " releases of unknown keys; unknown: " << figures.unknownAllocates << " allocs ("
         << checked.unknownAllocatesLanded << " landed), " << figures.unknownReleases
         << " releases (" << checked.unknownReleasesTookEffect << " took effect); refused "
         << figures.rejected << "; state dir at kill: " << files.names << "; after restart "
         << checked.leases << " leases holding " << checked.portNumbers
         << " ports; agent: " << recoveryLine(*agent_);
    std::cout << "[ crash    ] round " << round << ": " << line.str() << std::endl;
    RecordProperty("round" + std::to_string(round), line.str());

    reportProblems(problems);
    if (!problems.empty()) break;  // later rounds would only repeat the damage
    resolve(model, *state);
  }
  RecordProperty("ackedOperations", std::to_string(totalAcked));
  EXPECT_GT(highestGeneration, 0u)
      << "no compaction happened in any round: the kills never met a snapshot (raise the storm "
         "or lower compactAfterJournalBytes)";
}

TEST_F(AgentCrashTest, RestartingTwiceAfterAnIdleSigkillKeepsTheStateIdentical) {
  constexpr int kThreads = 8;
  constexpr int kKeysPerThread = 120;
  ASSERT_OK(startAgent()) << "first start";

  // A batch of acknowledged operations: every thread allocates its keys, then releases every
  // third one, so the journal holds both kinds and crosses the compaction threshold.
  std::vector<Model> models(kThreads);
  std::vector<std::vector<std::string>> problems(kThreads);
  {
    std::vector<std::jthread> threads;
    for (int t = 0; t < kThreads; ++t) {
      threads.emplace_back([&, t] {
        const AgentClient agent = client();
        for (int i = 0; i < kKeysPerThread; ++i) {
          AllocationRequest request;
          request.key = {"idle-t" + std::to_string(t) + "-" + std::to_string(i), "eth0"};
          request.pod = {"crash", "idle-" + std::to_string(t), ""};
          request.dynamics.push_back({"a", 80, static_cast<uint16_t>(1 + i % 4),
                                      i % 3 == 0 ? PortProtocol::kTcpUdp : PortProtocol::kTcp});
          auto lease = agent.allocate(request);
          if (!lease) {
            problems[t].push_back("allocate " + request.key.str() + ": " + lease.error().message);
            continue;
          }
          models[t][request.key] = {KeyState::Kind::kHeld, *lease};
        }
        for (int i = 0; i < kKeysPerThread; i += 3) {
          const AttachmentKey key{"idle-t" + std::to_string(t) + "-" + std::to_string(i), "eth0"};
          if (auto released = agent.release(key); !released || !*released) {
            problems[t].push_back("release " + key.str() + " was not acknowledged with the lease");
            continue;
          }
          models[t][key] = {KeyState::Kind::kReleased, std::nullopt};
        }
      });
    }
  }
  Model model;
  std::vector<std::string> batchProblems;
  for (int t = 0; t < kThreads; ++t) {
    model.insert(models[t].begin(), models[t].end());
    batchProblems.insert(batchProblems.end(), problems[t].begin(), problems[t].end());
  }
  reportProblems(batchProblems);
  ASSERT_TRUE(batchProblems.empty()) << "the batch itself failed; nothing to crash-test";

  auto before = readState(client());
  ASSERT_OK(before);
  CheckFigures figures;
  reportProblems(checkRecovered(model, *before, "before any kill", figures));
  ASSERT_EQ(figures.leases, kThreads * (kKeysPerThread - (kKeysPerThread + 2) / 3));
  const auto files = storeFiles(stateDir());
  EXPECT_GT(files.generation, 0u) << "the batch was meant to cross the compaction threshold";

  for (int restart = 1; restart <= 2; ++restart) {
    SCOPED_TRACE("restart " + std::to_string(restart));
    ASSERT_OK(agent_->killWithoutReaping());
    ASSERT_NO_FATAL_FAILURE(expectEndedBySigkill());
    ASSERT_OK(startAgent());
    auto after = readState(client());
    ASSERT_OK(after);
    std::cout << "[ crash    ] idle restart " << restart << ": " << after->leases.size()
              << " leases; agent: " << recoveryLine(*agent_) << std::endl;
    RecordProperty("restart" + std::to_string(restart), recoveryLine(*agent_));
    EXPECT_EQ(after->leases, before->leases) << "the leases changed across an idle SIGKILL";
    EXPECT_EQ(after->pools, before->pools) << "the pool usage changed across an idle SIGKILL";
    EXPECT_NE(recoveryLine(*agent_).find(
                  "recovered leases=" + std::to_string(before->leases.size()) + " "),
              std::string::npos)
        << recoveryLine(*agent_);
  }
}

}  // namespace
}  // namespace hostport::agent
