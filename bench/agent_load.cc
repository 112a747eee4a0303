// hostport-bench-agent-load: durable allocate+release round trips over the agent's control
// socket, through the same AgentClient the CNI plugin uses (one connection per call).
//
//   --socket PATH --clients 1,8,32 --seconds 5 [--netns-path P] [--warmup-seconds 1]
//   [--forwarding-network NAME --pod-address A/LEN]
//
// Each client thread loops until the time is up: allocate (a new attachment key, one dynamic TCP
// port from the default pool), then release the same key. With --forwarding-network the request
// carries a forwarding as the CNI plugin's does (client c's pod at pod-address + c), so that each
// call also writes and removes the lease's forwards. Both calls return only once the agent's
// journal record is on disk. For each client count it prints one JSON line:
//   {"clients":C,"seconds":S,"roundTrips":R,"roundTripsPerSecond":..,"allocationsPerSecond":..,
//    "allocate":{summary},"release":{summary},"roundTrip":{summary},"failures":F,"firstError":".."}
// With --fsync-probe DIR it first prints {"fdatasyncMs":{summary},"dir":DIR}: 200 fdatasyncs of
// 512-byte appends on that filesystem, the floor under every durable reply.

#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <iostream>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "agent/api/agent_client.h"
#include "bench/bench_util.h"

namespace hostport::bench {
namespace {

using agent::api::AgentClient;
using nlohmann::json;

struct Samples {
  std::vector<double> allocate;
  std::vector<double> release;
  std::vector<double> roundTrip;
};

/// What every request of client c carries to be forwarded, or nothing.
struct ForwardingShape {
  std::string network;
  IpPrefix firstPod;
};

std::optional<Forwarding> forwardingOf(const std::optional<ForwardingShape>& shape, long client) {
  if (!shape) return std::nullopt;
  Forwarding forwarding;
  forwarding.network = shape->network;
  forwarding.podV4 = IpPrefix{ipv4Plus(shape->firstPod.address, client), shape->firstPod.length};
  return forwarding;
}

json runLoad(const std::string& socket, long clients, double seconds, const std::string& netns,
             const std::optional<ForwardingShape>& shape) {
  std::atomic<long> failures{0};
  std::mutex mu;
  std::string firstError;
  std::vector<Samples> samples(static_cast<std::size_t>(clients));
  const auto started = Clock::now();
  const auto deadline =
      started + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
  std::vector<std::thread> threads;
  for (long c = 0; c < clients; ++c) {
    threads.emplace_back([&, c] {
      const AgentClient client = AgentClient::forSocket(socket, std::chrono::seconds(30));
      Samples& mine = samples[static_cast<std::size_t>(c)];
      const auto fail = [&](const Error& error) {
        ++failures;
        std::lock_guard lock(mu);
        if (firstError.empty()) firstError = error.message;
      };
      long sequence = 0;
      while (Clock::now() < deadline) {
        AllocationRequest request;
        request.key = {"load" + randomHex(60), "eth0"};
        request.pod = {"bench", "load-" + std::to_string(c) + "-" + std::to_string(sequence++),
                       randomHex(8)};
        request.netns = netns;
        request.dynamics.push_back({"web", 8080, 1, PortProtocol::kTcp});
        request.forwarding = forwardingOf(shape, c);
        const auto begin = Clock::now();
        auto lease = client.allocate(request);
        const double allocated = msSince(begin);
        if (!lease) {
          fail(lease.error());
          continue;
        }
        const auto releaseBegin = Clock::now();
        auto released = client.release(request.key);
        if (!released) {
          fail(released.error());
          continue;
        }
        mine.allocate.push_back(allocated);
        mine.release.push_back(msSince(releaseBegin));
        mine.roundTrip.push_back(msSince(begin));
      }
    });
  }
  for (auto& thread : threads) thread.join();
  const double elapsed = msSince(started) / 1000.0;
  Samples all;
  for (auto& mine : samples) {
    all.allocate.insert(all.allocate.end(), mine.allocate.begin(), mine.allocate.end());
    all.release.insert(all.release.end(), mine.release.begin(), mine.release.end());
    all.roundTrip.insert(all.roundTrip.end(), mine.roundTrip.begin(), mine.roundTrip.end());
  }
  const double rate = static_cast<double>(all.roundTrip.size()) / elapsed;
  return {{"clients", clients},
          {"loadAverage", loadAverage()},
          {"seconds", elapsed},
          {"roundTrips", all.roundTrip.size()},
          {"roundTripsPerSecond", rate},
          {"allocationsPerSecond", rate},
          {"allocate", json::parse(summaryJson(all.allocate))},
          {"release", json::parse(summaryJson(all.release))},
          {"roundTrip", json::parse(summaryJson(all.roundTrip))},
          {"failures", failures.load()},
          {"firstError", firstError}};
}

/// fdatasync latency of the filesystem under `dir`: what every durable reply waits for.
json fsyncProbe(const std::string& dir, int count) {
  const std::string path = dir + "/fsync-probe";
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) die("cannot create " + path);
  std::vector<double> latencies;
  const std::string block(512, 'x');
  for (int i = 0; i < count; ++i) {
    if (::write(fd, block.data(), block.size()) != static_cast<ssize_t>(block.size())) {
      die("write " + path + " failed");
    }
    const auto begin = Clock::now();
    if (::fdatasync(fd) != 0) die("fdatasync " + path + " failed");
    latencies.push_back(msSince(begin));
  }
  ::close(fd);
  ::unlink(path.c_str());
  return json::parse(summaryJson(latencies));
}

}  // namespace
}  // namespace hostport::bench

int main(int argc, char** argv) {
  using namespace hostport::bench;
  using hostport::Family;
  using hostport::IpPrefix;
  const Args args(argc, argv);
  if (args.has("help") || !args.has("socket")) {
    std::cout << "usage: hostport-bench-agent-load --socket PATH [--clients 1,8,32] "
                 "[--seconds 5] [--warmup-seconds 1] [--netns-path /run/netns/x] "
                 "[--fsync-probe DIR] [--forwarding-network NAME --pod-address A/LEN]\n";
    return args.has("help") ? 0 : 2;
  }
  const std::string socket = args.get("socket");
  const auto clients = parseList(args.get("clients", "1,8,32"), "--clients");
  const double seconds = args.getDouble("seconds", 5);
  const double warmup = args.getDouble("warmup-seconds", 1);
  const std::string netns = args.get("netns-path", "/run/netns/bench");
  if (args.has("fsync-probe")) {
    const auto probe = fsyncProbe(args.get("fsync-probe"), 200);
    std::cerr << "  fdatasync of 512 B appends under " << args.get("fsync-probe") << ": p50 "
              << probe.value("p50", 0.0) << " ms, p99 " << probe.value("p99", 0.0) << " ms\n";
    std::cout << json{{"fdatasyncMs", probe}, {"dir", args.get("fsync-probe")}}.dump() << std::endl;
  }
  std::optional<ForwardingShape> shape;
  if (args.has("forwarding-network")) {
    auto first = IpPrefix::parse(args.get("pod-address"));
    if (!first || first->address.family() != Family::kIPv4) {
      die("--pod-address: an IPv4 address with its prefix length, such as 10.88.1.0/16");
    }
    shape = ForwardingShape{args.get("forwarding-network"), *first};
  }
  if (warmup > 0) (void)runLoad(socket, 4, warmup, netns, shape);
  for (const long count : clients) {
    const auto result = runLoad(socket, count, seconds, netns, shape);
    std::cerr << "  agent " << count
              << " client(s): " << static_cast<long>(result["roundTripsPerSecond"].get<double>())
              << " allocate+release/s, round trip p99 " << result["roundTrip"].value("p99", 0.0)
              << " ms, failures " << result["failures"] << "\n";
    std::cout << result.dump() << std::endl;
  }
  return 0;
}
