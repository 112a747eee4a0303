// hostport-soak: hours of a node's life in minutes (issue 15, section 3; docs/soak.md).
//
// A simulated node (tests/support/cni_node.h: node netns, bridge + host-local + hostport as a
// runtime chains them) runs the built hostport-agent with its state dir on a small tmpfs. Worker
// threads churn pods (ADD and DEL in parallel; static and dynamic ports, tcp, udp and tcpudp,
// ranges, two pools; some netns removed without DEL; now and then a claim of a live pod's static
// port, which must be refused). The conductor, the main thread, meanwhile SIGKILLs and restarts
// the agent, flushes the map or the table or deletes the table, fills the state dir's file system
// to ENOSPC once and frees it, and checks the invariants (soak_checker.h) with the churn paused.
// At the end it stops the churn, DELs or abandons every pod, and waits for the node to be empty.
//
// It exits 0 when no invariant broke and no operation failed that should not have, 1 otherwise,
// 2 when the run could not be set up. Everything lives in namespaces, one temp dir and a tmpfs
// in a private mount namespace of its own; scripts/soak.sh is the entry point.

#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "tests/soak/soak_checker.h"
#include "tests/soak/soak_churn.h"
#include "tests/support/agent_process.h"
#include "tests/support/temp_dir.h"

namespace hostport::soak {
namespace {

using namespace std::chrono_literals;

constexpr int kTmpfsKilobytes = 4096;
constexpr auto kPeriodicCheck = 5s;
constexpr auto kEnospcHold = 8s;
constexpr auto kProgressEvery = 30s;

struct Options {
  std::string agentPath;
  std::string pluginPath;
  std::string outPath;
  std::string agentLogPath;
  double minutes = 2;
  int workers = 6;
  int maxPods = 48;
  uint64_t seed = 0;
};

void usage(std::ostream& out) {
  out << "Usage: hostport-soak --agent PATH --plugin PATH [--minutes N] [--workers N]\n"
         "                     [--max-pods N] [--seed N] [--out FILE] [--agent-log FILE]\n"
         "Runs the soak (docs/soak.md) as root; exits 0 when every invariant held.\n";
}

std::optional<Options> parseOptions(int argc, char** argv) {
  Options options;
  options.seed = std::random_device{}();
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "-h" || arg == "--help") {
      usage(std::cout);
      std::exit(0);
    }
    if (i + 1 >= argc) return std::nullopt;
    const std::string value = argv[++i];
    if (arg == "--agent") {
      options.agentPath = value;
    } else if (arg == "--plugin") {
      options.pluginPath = value;
    } else if (arg == "--out") {
      options.outPath = value;
    } else if (arg == "--agent-log") {
      options.agentLogPath = value;
    } else if (arg == "--minutes") {
      options.minutes = std::stod(value);
    } else if (arg == "--workers") {
      options.workers = std::stoi(value);
    } else if (arg == "--max-pods") {
      options.maxPods = std::stoi(value);
    } else if (arg == "--seed") {
      options.seed = std::stoull(value);
    } else {
      return std::nullopt;
    }
  }
  if (options.agentPath.empty() || options.pluginPath.empty() || options.minutes <= 0 ||
      options.workers < 1 || options.maxPods < 2 || options.maxPods > 120) {
    return std::nullopt;
  }
  return options;
}

/// A mount namespace of this process's own, whose mounts reach no one and end with it.
Result<void> privateMounts() {
  if (::unshare(CLONE_NEWNS) != 0) return failSystem(ErrorCode::kIo, "unshare(CLONE_NEWNS)", errno);
  if (::mount("none", "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0) {
    return failSystem(ErrorCode::kIo, "make / private", errno);
  }
  return {};
}

class Soak {
 public:
  Soak(Options options, Env& env, Stats& stats)
      : options_(std::move(options)),
        env_(env),
        stats_(stats),
        rng_(options_.seed),
        churn_(env, stats, options_.seed, options_.maxPods),
        checker_(env, stats, churn_, options_.seed ^ 0x5eedu) {}

  int run();

 private:
  double uniform(double low, double high) {
    return std::uniform_real_distribution<double>(low, high)(rng_);
  }
  void pauseFor(std::chrono::duration<double> length) {
    std::this_thread::sleep_for(std::chrono::duration_cast<std::chrono::milliseconds>(length));
  }
  void progress(Clock::time_point start);
  void killAndRestart();
  void tableChaos(const std::string& kind);
  void enospcPhase();
  /// Reaps an agent that exited on its own and starts it again; false when it would not start.
  bool superviseAgent(bool duringEnospc);
  bool restartAgent(bool duringEnospc);
  void check(const std::string& why) {
    churn_.gate().pause();
    superviseAgent(false);
    checker_.check(why);
    churn_.gate().resume();
  }
  void finish();
  void report(Clock::duration took);

  Options options_;
  Env& env_;
  Stats& stats_;
  std::mt19937_64 rng_;
  Churn churn_;
  Checker checker_;
};

void Soak::progress(Clock::time_point start) {
  const auto seconds = std::chrono::duration_cast<std::chrono::seconds>(Clock::now() - start);
  std::cerr << "soak: t=" << seconds.count() << "s pods:" << churn_.census()
            << "; add.ok=" << stats_.get("add.ok") << " del.ok=" << stats_.get("del.ok")
            << " vanish=" << stats_.get("vanish.ok") << " kills=" << stats_.get("chaos.kills")
            << " checks=" << stats_.get("checks.passed") << "+" << stats_.get("checks.failed")
            << " violations=" << stats_.sum("violations") << "\n";
}

bool Soak::restartAgent(bool duringEnospc) {
  auto restarted = env_.agent->restart();
  if (!restarted) {
    if (duringEnospc) {
      stats_.add("enospc.restarts_refused");
      return false;
    }
    stats_.violation("agent_restart_failed", restarted.error().message);
    return false;
  }
  stats_.add("chaos.restarts");
  env_.agentState.markUp();
  return true;
}

bool Soak::superviseAgent(bool duringEnospc) {
  const pid_t pid = env_.agent->pid();
  if (pid > 0) {
    siginfo_t info{};
    if (::waitid(P_PID, static_cast<id_t>(pid), &info, WEXITED | WNOHANG | WNOWAIT) == 0 &&
        info.si_pid == 0) {
      return true;  // running
    }
    checker_.foldMetrics();
    env_.agentState.bump(duringEnospc ? "enospc" : "agent_exited", /*up=*/false);
    const auto ended = env_.agent->reap();
    const std::string how = ended ? *ended : ended.error().message;
    if (duringEnospc) {
      stats_.add("enospc.agent_exits");
      std::cerr << "soak: the agent exited on the full state dir (" << how << ")\n";
    } else {
      stats_.violation("agent_exited", how + "; " + env_.agent->describe());
    }
  }
  for (int attempt = 0; attempt < (duringEnospc ? 1 : 3); ++attempt) {
    if (restartAgent(duringEnospc)) return true;
  }
  return false;
}

void Soak::killAndRestart() {
  checker_.foldMetrics();  // what this run counted, read just before the kill
  env_.agentState.bump("agent_killed", /*up=*/false);
  if (auto killed = env_.agent->killWithoutReaping(); !killed) {
    stats_.violation("agent_exited", killed.error().message);
  }
  (void)env_.agent->reap();
  stats_.add("chaos.kills");
  pauseFor(std::chrono::duration<double>(uniform(0, 1.5)));  // churn goes on against no agent
  superviseAgent(false);
  check("after kill " + std::to_string(stats_.get("chaos.kills")));
}

void Soak::tableChaos(const std::string& kind) {
  std::vector<std::string> argv{"nft"};
  if (kind == "map_flushes") {
    argv.insert(argv.end(), {"flush", "map", "ip", "hostport", "ports"});
  } else if (kind == "table_flushes") {
    argv.insert(argv.end(), {"flush", "table", "ip", "hostport"});
  } else {
    // An ADD whose install meets no table fails and is released: expected, as after a kill.
    env_.agentState.bump("table_deleted", /*up=*/true);
    argv.insert(argv.end(), {"delete", "table", "ip", "hostport"});
  }
  // The table may be missing already (deleted a moment ago, not yet laid out again).
  if (env_.node->node().exec(argv)) stats_.add("chaos." + kind);
  env_.agentState.tableChanged();
}

void Soak::enospcPhase() {
  std::cerr << "soak: filling the state dir's file system\n";
  const std::string filler = env_.stateDir + "/filler";
  {
    int fd = ::open(filler.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
    if (fd < 0) {
      stats_.violation("harness", "open " + filler + ": " + std::strerror(errno));
      return;
    }
    const std::string page(4096, 'f');
    for (const std::size_t chunk : {page.size(), std::size_t{1}}) {
      while (::write(fd, page.data(), chunk) > 0) {
      }
    }
    const int error = errno;
    ::close(fd);
    if (error != ENOSPC) {
      stats_.violation("harness", "filling " + filler + ": " + std::strerror(error));
      return;
    }
  }
  stats_.add("chaos.enospc");
  env_.agentState.setEnospc(true);
  const auto until = Clock::now() + kEnospcHold;
  while (Clock::now() < until) {
    pauseFor(250ms);
    superviseAgent(true);
  }
  std::filesystem::remove(filler);
  std::cerr << "soak: the state dir has room again\n";
  // An agent whose store failed just before the free still runs for its 1 s grace, unhealthy:
  // wait until it serves and is healthy, restarting it when it exits.
  const auto freed = Clock::now();
  bool up = false;
  while (!up && Clock::now() < freed + 60s) {
    pauseFor(500ms);
    up = superviseAgent(true) && Clock::now() > freed + 2s &&
         env_.agent->client(2s).getText("/healthz").has_value();
  }
  env_.agentState.setEnospc(false);
  if (!up) {
    stats_.violation("agent_restart_failed",
                     "not ready 60 s after ENOSPC ended; " + env_.agent->describe());
    return;
  }
  check("after ENOSPC");
}

void Soak::finish() {
  churn_.stop();
  std::cerr << "soak: churn stopped\n";
  check("churn stopped");
  // DEL half of what is left and abandon the other half's netns, then wait for an empty node.
  churn_.teardown();
  const auto deadline = Clock::now() + kVanishGrace + kRepairGrace;
  while (true) {
    check("teardown");
    if (churn_.podCount() == 0 || Clock::now() >= deadline) break;
    pauseFor(1s);
    churn_.cleanupReleased();
  }
  checker_.checkEmpty();
}

int Soak::run() {
  const auto start = Clock::now();
  const auto end = start + std::chrono::duration_cast<Clock::duration>(
                               std::chrono::duration<double>(options_.minutes * 60));
  const auto enospcAt =
      start + std::chrono::duration_cast<Clock::duration>((end - start) * uniform(0.3, 0.6));
  bool enospcDone = false;
  churn_.start(options_.workers);
  auto nextCheck = Clock::now() + kPeriodicCheck;
  auto nextProgress = Clock::now() + kProgressEvery;
  while (Clock::now() < end) {
    pauseFor(std::chrono::duration<double>(uniform(0.5, 3.0)));
    if (!superviseAgent(false)) break;
    if (!enospcDone && Clock::now() >= enospcAt) {
      enospcPhase();
      enospcDone = true;
    }
    const double pick = uniform(0, 1);
    if (pick < 0.35) {
      killAndRestart();
    } else if (pick < 0.55) {
      tableChaos("map_flushes");
    } else if (pick < 0.65) {
      tableChaos("table_flushes");
    } else if (pick < 0.75) {
      tableChaos("table_deletes");
    }
    if (Clock::now() >= nextCheck) {
      check("periodic");
      nextCheck = Clock::now() + kPeriodicCheck;
    }
    if (Clock::now() >= nextProgress) {
      progress(start);
      nextProgress = Clock::now() + kProgressEvery;
    }
  }
  finish();
  checker_.foldMetrics();
  report(Clock::now() - start);
  return stats_.sum("violations") == 0 ? 0 : 1;
}

void Soak::report(Clock::duration took) {
  const auto seconds = std::chrono::duration_cast<std::chrono::seconds>(took).count();
  auto line = [&](const std::string& text) { std::cout << "soak: " << text << "\n"; };
  auto group = [&](const std::string& prefix, bool keepPrefix = false) {
    std::string text;
    for (const auto& [name, value] : stats_.counters()) {
      if (!name.starts_with(prefix + ".")) continue;
      text +=
          " " + (keepPrefix ? name : name.substr(prefix.size() + 1)) + "=" + std::to_string(value);
    }
    return text;
  };
  line("ran " + std::to_string(seconds) + " s, seed " + std::to_string(options_.seed) + ", " +
       std::to_string(options_.workers) + " workers, at most " + std::to_string(options_.maxPods) +
       " pods");
  line("operations:" + group("add", true) + group("del", true) + group("vanish", true) +
       group("probe", true));
  line("expected failures:" + group("expected"));
  line("unexpected failures:" + group("unexpected") + " (" +
       std::to_string(stats_.sum("unexpected")) + ")");
  line("chaos:" + group("chaos") + group("enospc", true));
  line("repairs (agent metrics, summed over runs):" + group("repairs"));
  line("checks:" + group("checks"));
  line("agent: max rss " + std::to_string(stats_.get("agent.max_rss_kb")) + " KiB, max fds " +
       std::to_string(stats_.get("agent.max_fds")) + ", leases at most " +
       std::to_string(stats_.get("agent.max_leases")));
  line("lost acknowledged leases: " + std::to_string(stats_.get("violations.lost_lease")));
  const auto violations = stats_.violations();
  for (const auto& violation : violations) line("VIOLATION " + violation);
  line(violations.empty() && stats_.sum("violations") == 0 ? "PASS" : "FAIL");

  if (!options_.outPath.empty()) {
    nlohmann::json out = stats_.json();
    out["seconds"] = seconds;
    out["minutes_asked"] = options_.minutes;
    out["seed"] = options_.seed;
    out["workers"] = options_.workers;
    out["max_pods"] = options_.maxPods;
    out["grace"] = {{"repair_s", std::chrono::duration<double>(kRepairGrace).count()},
                    {"vanished_s", std::chrono::duration<double>(kVanishGrace).count()}};
    out["lost_acknowledged_leases"] = stats_.get("violations.lost_lease");
    out["violation_count"] = stats_.sum("violations");
    out["violation_details"] = violations;
    out["passed"] = stats_.sum("violations") == 0;
    std::ofstream file(options_.outPath);
    file << out.dump(2) << "\n";
  }
}

int soakMain(int argc, char** argv) {
  const auto options = parseOptions(argc, argv);
  if (!options) {
    usage(std::cerr);
    return 2;
  }
  ::signal(SIGPIPE, SIG_IGN);
  if (auto isolated = privateMounts(); !isolated) {
    std::cerr << "soak: " << isolated.error().message << "\n";
    return 2;
  }
  Stats stats;
  auto env = Env::create(options->agentPath, options->pluginPath, kTmpfsKilobytes);
  if (!env) {
    std::cerr << "soak: setting up: " << env.error().message << "\n";
    return 2;
  }
  std::cerr << "soak: seed " << options->seed << ", " << options->minutes << " min, node "
            << (*env)->node->node().name() << ", agent " << (*env)->agent->describe().substr(0, 80)
            << "\n";
  int code = 0;
  {
    Soak soak(*options, **env, stats);
    code = soak.run();
  }
  if (!options->agentLogPath.empty()) {
    std::ofstream log(options->agentLogPath);
    log << (*env)->agent->log();
  }
  return code;
}

}  // namespace
}  // namespace hostport::soak

int main(int argc, char** argv) { return hostport::soak::soakMain(argc, argv); }
