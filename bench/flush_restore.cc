// hostport-bench-flush-restore: how long traffic through host ports stays broken after someone
// runs `nft flush map ip hostport ports` on a node whose agent reconciles the table.
//
//   --netns PATH --node-ip 192.0.2.1 --ports 10000,12500,... --agent-log FILE
//   [--rounds 5] [--nft /usr/sbin/nft] [--timeout-s 300]
//
// Joins the node netns (where the agent runs). Each round: every port must answer (connect to
// node-ip:port, read the pod server's byte), then `nft flush map ip hostport ports` runs, and
// from the moment it exits every port is probed in turn (1 ms apart per sweep) until each
// answers again. Without its map element the connection is refused at once (nothing on the node
// listens there), so a probe costs tens of microseconds. The agent restores 2,048 leases per
// transaction, in its own order, unrelated to the ports probed: they come back spread over the
// repair pass. The agent's log (--log-format json) is followed for the pass that repaired the
// table: its leases_restored and duration_ms, and when its line appeared, which is when every
// lease was back (the pass logs once it is done). Prints one JSON object per round:
//   {"round", "nftMs", "brokenAtFirstProbe", "portsMs": [...], "firstPortMs", "lastPortMs",
//    "passSeenMs", "passDurationMs", "repairPasses", "leasesRestored"}
// With --leases N a repair that spans several passes counts until N leases are restored:
// passSeenMs is then the last of them, passDurationMs and leasesRestored their sums.

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "bench/bench_util.h"

namespace hostport::bench {
namespace {

using nlohmann::json;

/// Connects to ip:port and reads the server's one byte: true when the pod answered.
bool answers(const in_addr& ip, uint16_t port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) die("socket failed");
  const linger hard{1, 0};  // no TIME_WAIT: thousands of probes must not pin source ports
  ::setsockopt(fd, SOL_SOCKET, SO_LINGER, &hard, sizeof hard);
  timeval timeout{1, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof timeout);
  ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &timeout, sizeof timeout);
  sockaddr_in target{};
  target.sin_family = AF_INET;
  target.sin_port = htons(port);
  target.sin_addr = ip;
  char byte = 0;
  const bool ok = ::connect(fd, reinterpret_cast<const sockaddr*>(&target), sizeof target) == 0 &&
                  ::read(fd, &byte, 1) == 1;
  ::close(fd);
  return ok;
}

/// The agent's log from a byte offset on, one JSON event per line.
class LogFollower {
 public:
  explicit LogFollower(std::string path) : path_(std::move(path)) {}

  /// Skips what the log holds now.
  void skipToEnd() {
    std::ifstream file(path_, std::ios::ate);
    offset_ = file ? static_cast<std::streamoff>(file.tellg()) : 0;
  }

  /// The next complete table.reconciled line since the last call that restored something.
  std::optional<json> nextRepairPass() {
    std::ifstream file(path_);
    file.seekg(offset_);
    std::string line;
    while (std::getline(file, line)) {
      if (file.eof()) break;  // a line still being written: read it whole next time
      offset_ += static_cast<std::streamoff>(line.size()) + 1;
      const json event = json::parse(line, nullptr, false);
      if (event.is_discarded() || event.value("event", "") != "table.reconciled") continue;
      if (event.value("leases_restored", 0L) > 0) return event;
    }
    return std::nullopt;
  }

 private:
  std::string path_;
  std::streamoff offset_ = 0;
};

void waitUntilAllAnswer(const in_addr& ip, const std::vector<long>& ports, double timeoutMs) {
  const auto started = Clock::now();
  for (const long port : ports) {
    while (!answers(ip, static_cast<uint16_t>(port))) {
      if (msSince(started) > timeoutMs) {
        die("port " + std::to_string(port) + " does not answer before the flush");
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
  }
}

json round(long index, const Args& args, const in_addr& ip, const std::vector<long>& ports,
           LogFollower& log) {
  const double timeoutMs = args.getDouble("timeout-s", 300) * 1000;
  waitUntilAllAnswer(ip, ports, timeoutMs);
  // Past the reconciler's minimum gap between passes, so the flush's pass is not held back by
  // one that had just run.
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  log.skipToEnd();
  const RunResult flush =
      runProgram({args.get("nft", "/usr/sbin/nft"), "flush", "map", "ip", "hostport", "ports"},
                 {{"PATH", "/usr/sbin:/usr/bin:/sbin:/bin"}}, "");
  const auto flushed = Clock::now();
  if (!flush.ok()) die("nft flush map failed: " + flush.describe());

  std::vector<std::optional<double>> restoredMs(ports.size());
  std::size_t pending = ports.size();
  bool brokenAtFirstProbe = false;
  bool firstProbe = true;
  // With many leases the repair may take more than one pass (a pass that met a change while it
  // ran leaves the rest to the next): every lease is back when the passes since the flush have
  // restored them all (--leases), or, without --leases, after the first repairing pass.
  const long expected = args.getLong("leases", 0);
  std::optional<json> pass;
  long restored = 0;
  long passes = 0;
  double passDurationMs = 0;
  double passSeenMs = -1;
  const auto allBack = [&] { return pass && (expected <= 0 || restored >= expected); };
  while (pending > 0 || !allBack()) {
    if (msSince(flushed) > timeoutMs) die("traffic or the repair pass did not come back in time");
    for (std::size_t i = 0; i < ports.size(); ++i) {
      if (restoredMs[i]) continue;
      const bool ok = answers(ip, static_cast<uint16_t>(ports[i]));
      if (firstProbe) brokenAtFirstProbe = !ok;
      firstProbe = false;
      if (!ok) continue;
      restoredMs[i] = msSince(flushed);
      --pending;
    }
    while (!allBack()) {
      auto next = log.nextRepairPass();
      if (!next) break;
      pass = std::move(next);
      restored += pass->value("leases_restored", 0L);
      passDurationMs += pass->value("duration_ms", 0.0);
      ++passes;
      passSeenMs = msSince(flushed);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  std::vector<double> portsMs;
  for (const auto& ms : restoredMs) portsMs.push_back(*ms);
  return {{"round", index},
          {"nftMs", flush.wallMs},
          {"brokenAtFirstProbe", brokenAtFirstProbe},
          {"portsMs", portsMs},
          {"firstPortMs", *std::ranges::min_element(portsMs)},
          {"lastPortMs", *std::ranges::max_element(portsMs)},
          {"passSeenMs", passSeenMs},
          {"passDurationMs", passDurationMs},
          {"repairPasses", passes},
          {"leasesRestored", restored}};
}

}  // namespace
}  // namespace hostport::bench

int main(int argc, char** argv) {
  using namespace hostport::bench;
  const Args args(argc, argv);
  if (args.has("help") || !args.has("netns") || !args.has("ports") || !args.has("agent-log")) {
    std::cout << "usage: hostport-bench-flush-restore --netns PATH --node-ip A --ports P,P,... "
                 "--agent-log FILE [--rounds 5] [--leases N] [--nft /usr/sbin/nft] "
                 "[--timeout-s 300]\n";
    return args.has("help") ? 0 : 2;
  }
  const std::vector<long> ports = parseList(args.get("ports"), "--ports");
  if (ports.empty()) die("--ports: at least one port");
  in_addr ip{};
  if (::inet_pton(AF_INET, args.get("node-ip", "192.0.2.1").c_str(), &ip) != 1) {
    die("--node-ip: not IPv4");
  }
  // On the main thread before anything else: the nft child inherits this netns.
  joinNetnsOrDie(args.get("netns"));
  LogFollower log(args.get("agent-log"));
  const long rounds = std::max(1L, args.getLong("rounds", 5));
  for (long i = 0; i < rounds; ++i) std::cout << round(i, args, ip, ports, log).dump() << std::endl;
  return 0;
}
