// hostport-bench-agent-startup: how long hostport-agent takes from exec to a ready control
// socket, what it logs for its own recovery, and its resident memory once idle.
//
//   --agent PATH --state-dir DIR --socket PATH [--netns PATH] [--port-range R] [--runs 3]
//   [--settle-ms 500] [--log FILE]
//
// Each run forks, joins --netns (so the agent's sysctl and socket probe see only that netns),
// execs the agent with stderr to the log file, and polls GET /readyz every millisecond through
// AgentClient. Once ready it waits --settle-ms, reads VmRSS and VmHWM from /proc/<pid>/status,
// and stops the agent with SIGTERM. The agent's own event "store.recovered leases=N ms=X ..."
// is read from the log. Prints one JSON object:
//   {"runs":[{"readyMs","recoveredLeases","recoveredMs","vmRssKiB","vmHwmKiB"}...],
//    "readyMsMedian","recoveredMsMedian","vmRssKiBMedian"}

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <iostream>
#include <nlohmann/json.hpp>
#include <regex>
#include <string>
#include <thread>
#include <vector>

#include "agent/api/agent_client.h"
#include "bench/bench_util.h"

namespace hostport::bench {
namespace {

using nlohmann::json;

json runOnce(const Args& args, const std::string& logPath) {
  std::vector<std::string> argv = {args.get("agent"),
                                   "--state-dir",
                                   args.get("state-dir"),
                                   "--socket",
                                   args.get("socket"),
                                   "--pod-socket",
                                   "",  // a machine's /run/hostport/pod is not the benchmark's
                                   "--log-level",
                                   "info"};
  if (args.has("port-range")) {
    argv.push_back("--port-range");
    argv.push_back(args.get("port-range"));
  }
  const auto client =
      agent::api::AgentClient::forSocket(args.get("socket"), std::chrono::milliseconds(200));
  const auto started = Clock::now();
  const pid_t pid = startServer(argv, logPath, args.get("netns"));
  double readyMs = -1;
  for (;;) {
    int status = 0;
    if (::waitpid(pid, &status, WNOHANG) == pid) {
      die("the agent exited before it was ready; log:\n" + readFile(logPath));
    }
    if (auto ready = client.getText("/readyz"); ready) {
      readyMs = msSince(started);
      break;
    }
    if (msSince(started) > 120'000) {
      ::kill(pid, SIGKILL);
      die("the agent was not ready after 120 s; log:\n" + readFile(logPath));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(args.getLong("settle-ms", 500)));
  const long rss = procStatusKiB(pid, "VmRSS");
  const long hwm = procStatusKiB(pid, "VmHWM");
  ::kill(pid, SIGTERM);
  int status = 0;
  ::waitpid(pid, &status, 0);

  const std::string log = readFile(logPath);
  std::smatch match;
  long leases = -1;
  long recoveredMs = -1;
  static const std::regex kRecovered(R"(store\.recovered leases=(\d+) ms=(\d+) )");
  if (std::regex_search(log, match, kRecovered)) {
    leases = std::stol(match[1]);
    recoveredMs = std::stol(match[2]);
  }
  return {{"readyMs", readyMs},
          {"recoveredLeases", leases},
          {"recoveredMs", recoveredMs},
          {"vmRssKiB", rss},
          {"vmHwmKiB", hwm},
          {"exitStatus", WIFEXITED(status) ? WEXITSTATUS(status) : -1}};
}

}  // namespace
}  // namespace hostport::bench

int main(int argc, char** argv) {
  using namespace hostport::bench;
  const Args args(argc, argv);
  if (args.has("help") || !args.has("agent") || !args.has("state-dir") || !args.has("socket")) {
    std::cout << "usage: hostport-bench-agent-startup --agent PATH --state-dir DIR --socket PATH "
                 "[--netns PATH] [--port-range R] [--runs 3] [--settle-ms 500] [--log FILE]\n";
    return args.has("help") ? 0 : 2;
  }
  const long runs = std::max(1L, args.getLong("runs", 3));
  const std::string logPath = args.get("log", args.get("state-dir") + ".agent.log");
  json all = json::array();
  std::vector<double> ready, recovered, rss;
  for (long i = 0; i < runs; ++i) {
    json run = runOnce(args, logPath);
    ready.push_back(run["readyMs"].get<double>());
    recovered.push_back(run["recoveredMs"].get<double>());
    rss.push_back(run["vmRssKiB"].get<double>());
    all.push_back(run);
  }
  json out = {{"runs", all},
              {"readyMsMedian", percentile(ready, 50)},
              {"recoveredMsMedian", percentile(recovered, 50)},
              {"vmRssKiBMedian", percentile(rss, 50)}};
  std::cout << out.dump() << std::endl;
  return 0;
}
