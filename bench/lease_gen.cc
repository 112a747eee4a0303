// hostport-bench-leasegen: fills an agent state directory with N leases through the agent's own
// store library (hostport_agent_store), for the recovery, footprint and reconciler benchmarks.
//
//   --state-dir DIR --leases 50000 [--layout snapshot|journal] [--first-port 10000]
//   [--netns-path /run/netns/x]
//   [--forwarding-network NAME --first-pod-address 10.88.1.0/16 [--targets FILE]]
//
// Each lease looks like a real pod's: a 64-hex container ID, eth0, namespace/name/uid, the netns
// path, pool "default" and one dynamic TCP port (first-port + i -> 8080). `snapshot` leaves them
// all in a compacted snapshot (what a long-running agent has after compaction); `journal` leaves
// them as N grant records in the journal with no snapshot (the longest replay). Writes with
// fdatasync off: the files are the same, only faster to make.
//
// With --forwarding-network the leases are what an agent-mode ADD records, so the agent installs
// and reconciles their forwards: a forwarding record (that network, snat on, one IPv4 pod address
// each, first-pod-address + i with its prefix length: distinct, because masquerade elements are
// keyed by pod address and two owners may not share a key) and the identity of --netns-path (so
// the liveness check sees live sandboxes). --targets writes "hostPort podAddress" per lease, for
// the benchmark to pick the leases it sends traffic through.

#include <sys/stat.h>

#include <condition_variable>
#include <fstream>
#include <iostream>
#include <mutex>
#include <optional>
#include <string>

#include "agent/store/lease_store.h"
#include "bench/bench_util.h"

namespace hostport::bench {
namespace {

std::string uuid() {
  const std::string hex = randomHex(32);
  return hex.substr(0, 8) + '-' + hex.substr(8, 4) + '-' + hex.substr(12, 4) + '-' +
         hex.substr(16, 4) + '-' + hex.substr(20);
}

/// What makes a generated lease one whose forwards the agent writes (--forwarding-network).
struct ForwardingShape {
  std::string network;
  IpPrefix firstPod;  // lease i gets firstPod.address + i, with firstPod.length
  NetnsId netnsId;
};

std::optional<ForwardingShape> forwardingShape(const Args& args, long count) {
  if (!args.has("forwarding-network")) return std::nullopt;
  auto first = IpPrefix::parse(args.get("first-pod-address"));
  if (!first || first->address.family() != Family::kIPv4) {
    die("--first-pod-address: an IPv4 address with its prefix length, such as 10.88.1.0/16");
  }
  const IpAddress last = ipv4Plus(first->address, count - 1);
  if (last < first->address || last > first->lastAddress()) {
    die("--first-pod-address: " + std::to_string(count) + " addresses do not fit in " +
        first->network().str());
  }
  ForwardingShape shape{args.get("forwarding-network"), *first, {}};
  struct stat info {};
  if (const std::string netns = args.get("netns-path");
      !netns.empty() && ::stat(netns.c_str(), &info) == 0) {
    shape.netnsId = {static_cast<uint64_t>(info.st_dev), static_cast<uint64_t>(info.st_ino)};
  }
  return shape;
}

Lease makeLease(long index, long firstPort, const std::string& netns,
                const std::optional<ForwardingShape>& shape) {
  Lease lease;
  lease.key = {randomHex(64), "eth0"};
  lease.pod = {"bench", "game-server-" + std::to_string(index), uuid()};
  lease.netns = netns.empty() ? "/var/run/netns/cni-" + uuid() : netns;
  lease.pool = "default";
  PortGrant grant;
  grant.name = "web";
  grant.protocol = PortProtocol::kTcp;
  grant.hostPort = static_cast<uint16_t>(firstPort + index);
  grant.containerPort = 8080;
  lease.ports.push_back(grant);
  if (shape) {
    Forwarding forwarding;
    forwarding.network = shape->network;
    forwarding.podV4 = IpPrefix{ipv4Plus(shape->firstPod.address, index), shape->firstPod.length};
    lease.forwarding = std::move(forwarding);
    lease.netnsId = shape->netnsId;
  }
  return lease;
}

/// Waits for `count` store callbacks; dies on the first error.
class Waiter {
 public:
  std::function<void(Result<void>)> callback() {
    {
      std::lock_guard lock(mu_);
      ++pending_;
    }
    return [this](Result<void> done) {
      if (!done) die("store: " + done.error().message);
      std::lock_guard lock(mu_);
      if (--pending_ == 0) cv_.notify_all();
    };
  }
  void wait() {
    std::unique_lock lock(mu_);
    cv_.wait(lock, [this] { return pending_ == 0; });
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  long pending_ = 0;
};

}  // namespace
}  // namespace hostport::bench

int main(int argc, char** argv) {
  using namespace hostport;
  using namespace hostport::bench;
  const Args args(argc, argv);
  if (args.has("help") || !args.has("state-dir")) {
    std::cout << "usage: hostport-bench-leasegen --state-dir DIR [--leases 50000] "
                 "[--layout snapshot|journal] [--first-port 10000] [--netns-path P] "
                 "[--forwarding-network NAME --first-pod-address A/LEN [--targets FILE]]\n";
    return args.has("help") ? 0 : 2;
  }
  const long count = args.getLong("leases", 50000);
  const long firstPort = args.getLong("first-port", 10000);
  const std::string layout = args.get("layout", "snapshot");
  if (layout != "snapshot" && layout != "journal") die("--layout: snapshot or journal");
  if (firstPort + count - 1 > 65535) die("--first-port + --leases goes past port 65535");
  agent::store::StoreOptions options;
  options.sync = false;
  auto store = agent::store::LeaseStore::open(args.get("state-dir"), options);
  if (!store) die(store.error().message);
  auto existing = (*store)->recover();
  if (!existing) die(existing.error().message);
  if (!existing->empty()) die("the state dir already holds leases");
  const auto started = Clock::now();
  Waiter waiter;
  const std::string netns = args.get("netns-path");
  const auto shape = forwardingShape(args, count);
  const auto make = [&](long i) { return makeLease(i, firstPort, netns, shape); };
  if (layout == "journal") {
    for (long i = 0; i < count; ++i) {
      (*store)->submit({agent::store::JournalRecord::Kind::kGrant, make(i)}, waiter.callback());
    }
  } else {
    std::vector<Lease> leases;
    leases.reserve(static_cast<std::size_t>(count));
    for (long i = 0; i < count; ++i) leases.push_back(make(i));
    (*store)->submitCompaction(std::move(leases), waiter.callback());
  }
  waiter.wait();
  if (shape && args.has("targets")) {
    std::ofstream targets(args.get("targets"));
    for (long i = 0; i < count; ++i) {
      targets << firstPort + i << ' ' << ipv4Plus(shape->firstPod.address, i).str() << '\n';
    }
    if (!targets.flush()) die("cannot write " + args.get("targets"));
  }
  const auto stats = (*store)->stats();
  std::cerr << "wrote " << count << " leases (" << layout << ", journal bytes "
            << (*store)->journalBytes() << ", generation " << stats.generation << ") in "
            << static_cast<long>(msSince(started)) << " ms\n";
  return 0;
}
