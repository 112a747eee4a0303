// hostport-bench-cni: CNI ADD/DEL latency and new-connection rate with N mappings installed,
// for one plugin (hostport standalone, hostport with its agent, or Debian's portmap).
//
// The plugin is run as a runtime runs the second plugin of a conflist: a fresh process with the
// CNI_* environment, the network config with prevResult and runtimeConfig on stdin, inside the
// node netns (this program joins --node-netns first, so every child inherits it).
//
// prevResult: the real result of Debian's `bridge` ADD for one pod netns (--prev-result), made
// once by scripts/bench.sh. Measured ADD/DEL samples reuse it with a distinct container ID each
// (ADD, then DEL, so only one of them holds the pod IP at a time). The N mappings already
// installed are made by the same plugin's ADD, in bulk: --bulk mappings per ADD (one fabricated
// pod per ADD: a distinct container ID, and the prevResult with its IP rewritten to a distinct
// address of the bridge subnet, so no two pods share an IP as they would not on a real node).
//
// Sizes past one protocol's port space go on in UDP: N = 65,535 fills TCP, N = 131,070 fills TCP
// and then UDP. A few ports of each protocol are kept for the measurement itself (the measured
// samples' window and the datapath's port, at the top of the space), so a full space holds
// 65,535 minus those; "installed" says how many of each protocol are in place at a size.
//
// For each size N (ascending) it prints one JSON object per line on stdout:
//   {"plugin":..,"n":N,"installed":{"tcp":..,"udp":..},"prepopulate":{"adds":..,"seconds":..},
//    "add":{summary},"del":{summary},"datapath":{...}|null}
// and a final {"plugin":..,"done":true,"stoppedAt":N|null,"reason":..} line. Progress goes to
// stderr. A failed plugin run aborts with its output: a benchmark of failures means nothing.
//
// Two other modes share the plugin invocation: --cold-add (one ADD and its DEL in a node netns
// that bench.sh has just made: the first ADD on a fresh node) and --churn-seconds (ADD+DEL pairs
// at a fixed rate after prepopulating to the one size given, bench/cni_churn.h).

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "bench/bench_util.h"
#include "bench/cni_churn.h"

namespace hostport::bench {
namespace {

using json = nlohmann::json;

constexpr const char* kSearchPath = "/usr/sbin:/usr/bin:/sbin:/bin";
constexpr const char* kCniVersion = "1.0.0";  // the newest Debian's portmap 1.1.1 speaks

enum class Kind { kHostport, kHostportAgent, kPortmap };

struct Options {
  Kind kind = Kind::kHostport;
  std::string kindName;
  std::string plugin;
  std::string podNetns;
  std::string network = "hpbench";
  json prevResult;
  std::vector<long> sizes;
  long samples = 20;
  long bulk = 10;
  std::string agentSocket;
  double budgetSeconds = 0;  // 0: no limit
  // datapath
  std::string tcpClient;
  std::string nodeIp = "192.0.2.1";
  int containerPort = 8080;
  double tcpSeconds = 0;  // 0: no datapath measurement
  long tcpThreads = 2;
  long tcpRounds = 3;
  long udpSamples = 0;  // UDP requests per direction and round; 0: no UDP datapath
  double maxAddMs = 0;  // stop before the next size once ADD p50 is above this (0: never)
  // Ports: prepopulation from firstHostPort up, skipping the ones the measurement needs.
  long firstHostPort = 1;
  long sampleHostPort = 65530;  // measured samples cycle through kSampleWindow ports from here
  long datapathHostPort = 65535;
  std::string stateDir;  // --plugin-state-dir: the standalone plugin's stateDir
  // bursts (--burst): after each size's paced pairs, B ADDs back to back, then their B DELs
  std::vector<long> bursts;
  // churn
  ChurnOptions churn;
};

constexpr long kSampleWindow = 4;
/// Burst pods take fabricated addresses from here on (10.88.201.x...), past prepopulation's.
constexpr long kBurstAddressBase = 50000;
constexpr long kChurnAddresses = 1000;
constexpr long kPortSpace = 65535;  // host ports per protocol (and host IP)
enum Protocol { kTcp = 0, kUdp = 1 };
const char* const kProtocolNames[] = {"tcp", "udp"};

struct Pod {
  std::string containerId;
  std::string name;
  json prevResult;
};

class Bench {
 public:
  explicit Bench(Options options) : o_(std::move(options)) {}
  int run();
  /// One ADD and its DEL of a fabricated pod (--cold-add): {"addMs","delMs"}.
  int coldAdd();
  /// Prepopulates to the one size, then ADD+DEL pairs at a fixed rate (--churn-seconds).
  int churn();

 private:
  struct Mapping {
    long hostPort;
    int containerPort;
    Protocol protocol;
  };
  json config(const Pod& pod, const std::vector<Mapping>& mappings, const std::string& annotation,
              const json& prevResult) const;
  RunResult invoke(const std::string& verb, const Pod& pod, const std::string& stdinText) const;
  /// ADD then returns the stdin to use for its DEL (libcni gives DEL the cached result).
  std::pair<RunResult, std::string> add(const Pod& pod, const std::vector<Mapping>& mappings,
                                        const std::string& annotation) const;
  Pod fabricatedPod(long index) const;
  bool reserved(long port) const;
  /// Host ports of one protocol that prepopulation may fill.
  long capacity() const;
  /// Mappings of each protocol at nominal size n: TCP first, then UDP on top.
  std::pair<long, long> targetsFor(long n) const;
  /// Seconds it took, or nullopt when the budget ran out first (what was installed stays).
  std::optional<double> prepopulate(long n);
  bool prepopulateProtocol(Protocol protocol, long target, Clock::time_point started);
  json measureLatency(long n);
  /// For each burst size B: B ADDs back to back, then the B DELs back to back, as a node drain
  /// or a rollout makes them; a static kind takes the B ports below the sample window.
  json measureBursts();
  /// The ports below the sample window that bursts take (prepopulation leaves them free).
  long burstPorts() const;
  json measureDatapath(long n);
  json clientRun(const std::vector<std::string>& args) const;
  std::string podIp() const;

  Options o_;
  long installed_[2] = {0, 0};  // mappings of each protocol installed by prepopulation so far
  long nextPort_[2] = {0, 0};   // the next host port prepopulation takes, per protocol
  long prepopAdds_ = 0;
  long sampleCounter_ = 0;
  std::optional<Clock::time_point> deadline_;
  double lastAddMs_ = 0;  // of --budget-seconds, from the start of run()
};

json Bench::config(const Pod& pod, const std::vector<Mapping>& mappings,
                   const std::string& annotation, const json& prevResult) const {
  (void)pod;
  json conf = {{"cniVersion", kCniVersion}, {"name", o_.network}};
  if (o_.kind == Kind::kPortmap) {
    conf["type"] = "portmap";
    conf["capabilities"] = {{"portMappings", true}};
    conf["snat"] = true;
  } else {
    conf["type"] = "hostport";
    conf["capabilities"] = {{"portMappings", true}, {"io.kubernetes.cri.pod-annotations", true}};
    conf["agentSocket"] = o_.kind == Kind::kHostportAgent ? o_.agentSocket : "";
    // Never the node's own dirs: next to the agent's socket, or bench.sh's temp dir standalone
    // (where the netlink keeper lives).
    conf["stateDir"] = o_.stateDir;
    if (o_.kind == Kind::kHostportAgent) {
      const auto dir = std::filesystem::path(o_.agentSocket).parent_path();
      conf["stateDir"] = (dir / "cni-state").string();
      conf["releaseSpool"] = (dir / "released").string();
    }
  }
  json runtimeConfig = json::object();
  if (!mappings.empty()) {
    json list = json::array();
    for (const Mapping& mapping : mappings) {
      list.push_back({{"hostPort", mapping.hostPort},
                      {"containerPort", mapping.containerPort},
                      {"protocol", kProtocolNames[mapping.protocol]}});
    }
    runtimeConfig["portMappings"] = list;
  }
  if (!annotation.empty()) {
    runtimeConfig["io.kubernetes.cri.pod-annotations"] = {{"hostport.io/ports", annotation}};
  }
  if (!runtimeConfig.empty()) conf["runtimeConfig"] = runtimeConfig;
  conf["prevResult"] = prevResult;
  return conf;
}

RunResult Bench::invoke(const std::string& verb, const Pod& pod,
                        const std::string& stdinText) const {
  const std::map<std::string, std::string> env = {
      {"PATH", kSearchPath},
      {"CNI_COMMAND", verb},
      {"CNI_CONTAINERID", pod.containerId},
      {"CNI_NETNS", o_.podNetns},
      {"CNI_IFNAME", "eth0"},
      {"CNI_PATH", "/usr/lib/cni"},
      {"CNI_ARGS", "IgnoreUnknown=1;K8S_POD_NAMESPACE=bench;K8S_POD_NAME=" + pod.name +
                       ";K8S_POD_INFRA_CONTAINER_ID=" + pod.containerId +
                       ";K8S_POD_UID=" + pod.containerId.substr(0, 8)},
  };
  return runProgram({o_.plugin}, env, stdinText);
}

std::pair<RunResult, std::string> Bench::add(const Pod& pod, const std::vector<Mapping>& mappings,
                                             const std::string& annotation) const {
  const std::string stdinText = config(pod, mappings, annotation, pod.prevResult).dump();
  RunResult result = invoke("ADD", pod, stdinText);
  if (!result.ok()) die(o_.kindName + " ADD " + pod.containerId + " failed: " + result.describe());
  json cached = json::parse(result.out, nullptr, false);
  if (cached.is_discarded() || !cached.is_object()) cached = pod.prevResult;
  return {result, config(pod, mappings, annotation, cached).dump()};
}

Pod Bench::fabricatedPod(long index) const {
  Pod pod{"b" + randomHex(63), "prepop-" + std::to_string(index), o_.prevResult};
  // 10.88.1.1 onwards: outside host-local's range (10.88.0.x) of the bridge's 10.88.0.0/16.
  const long third = 1 + index / 250;
  const long fourth = 1 + index % 250;
  if (third > 255) die("too many fabricated pods for 10.88.0.0/16; raise --bulk");
  for (auto& ip : pod.prevResult["ips"]) {
    const std::string address = ip.value("address", "");
    if (address.find(':') != std::string::npos) continue;
    ip["address"] = "10.88." + std::to_string(third) + "." + std::to_string(fourth) + "/16";
  }
  return pod;
}

long Bench::burstPorts() const {
  return o_.bursts.empty() ? 0 : *std::ranges::max_element(o_.bursts);
}

bool Bench::reserved(long port) const {
  return (port >= o_.sampleHostPort - burstPorts() && port < o_.sampleHostPort + kSampleWindow) ||
         port == o_.datapathHostPort;
}

long Bench::capacity() const {
  long ports = 0;
  for (long port = o_.firstHostPort; port <= kPortSpace; ++port) ports += reserved(port) ? 0 : 1;
  return ports;
}

std::pair<long, long> Bench::targetsFor(long n) const {
  const long cap = capacity();
  return {std::min(n, cap), std::min(std::max(0L, n - kPortSpace), cap)};
}

bool Bench::prepopulateProtocol(Protocol protocol, long target, Clock::time_point started) {
  long& installed = installed_[protocol];
  long& next = nextPort_[protocol];
  if (next == 0) next = o_.firstHostPort;
  while (installed < target) {
    if (deadline_ && Clock::now() > *deadline_) return false;
    const long count = std::min(o_.bulk, target - installed);
    const Pod pod = fabricatedPod(prepopAdds_);
    std::vector<Mapping> mappings;
    std::string annotation;
    const std::string suffix = protocol == kUdp ? "/udp" : "";
    for (long i = 0; i < count; ++i) {
      if (o_.kind == Kind::kHostportAgent) {
        // The agent picks the host ports (its pool is the whole space but for the kept ones).
        annotation += (i ? ", p" : "p") + std::to_string(i) + "=" +
                      std::to_string(o_.containerPort + i) + suffix;
        continue;
      }
      while (next <= kPortSpace && reserved(next)) ++next;
      if (next > kPortSpace) die("host ports past 65535; lower the sizes");
      mappings.push_back({next++, o_.containerPort, protocol});
    }
    lastAddMs_ = add(pod, mappings, annotation).first.wallMs;
    installed += count;
    ++prepopAdds_;
    if (prepopAdds_ % 500 == 0) {
      std::cerr << "  " << o_.kindName << ": " << installed_[kTcp] << " tcp + " << installed_[kUdp]
                << " udp mappings installed (" << static_cast<long>(msSince(started) / 1000)
                << " s; this ADD " << static_cast<long>(lastAddMs_) << " ms, ~"
                << static_cast<long>(lastAddMs_ * static_cast<double>(target - installed) /
                                     static_cast<double>(o_.bulk) / 1000)
                << " s more of " << kProtocolNames[protocol] << " at that pace)\n";
    }
  }
  return true;
}

std::optional<double> Bench::prepopulate(long n) {
  const auto started = Clock::now();
  const auto [tcp, udp] = targetsFor(n);
  if (!prepopulateProtocol(kTcp, tcp, started) || !prepopulateProtocol(kUdp, udp, started)) {
    return std::nullopt;
  }
  return msSince(started) / 1000.0;
}

json Bench::measureLatency(long n) {
  std::vector<double> adds;
  std::vector<double> dels;
  for (long s = 0; s < o_.samples; ++s) {
    Pod pod{"s" + randomHex(63), "sample-" + std::to_string(sampleCounter_), o_.prevResult};
    const long hostPort = o_.sampleHostPort + (sampleCounter_++ % kSampleWindow);
    std::vector<Mapping> mappings;
    std::string annotation;
    if (o_.kind == Kind::kHostportAgent) {
      annotation = "web=" + std::to_string(o_.containerPort);
    } else {
      mappings.push_back({hostPort, o_.containerPort, kTcp});
    }
    auto [added, delStdin] = add(pod, mappings, annotation);
    adds.push_back(added.wallMs);
    RunResult deleted = invoke("DEL", pod, delStdin);
    if (!deleted.ok()) die(o_.kindName + " DEL failed: " + deleted.describe());
    dels.push_back(deleted.wallMs);
  }
  std::cerr << "  " << o_.kindName << " N=" << n << ": ADD p50 " << percentile(adds, 50)
            << " ms, DEL p50 " << percentile(dels, 50) << " ms\n";
  return {{"add", json::parse(summaryJson(adds))},
          {"del", json::parse(summaryJson(dels))},
          {"addSamplesMs", adds},
          {"delSamplesMs", dels}};
}

json Bench::measureBursts() {
  json bursts = json::array();
  for (const long size : o_.bursts) {
    if (o_.kind == Kind::kHostportAgent && installed_[kTcp] + size > capacity() + burstPorts()) {
      bursts.push_back({{"size", size}, {"skipped", "the agent's pool has too few free ports"}});
      continue;
    }
    std::vector<Pod> pods;
    std::vector<std::string> delStdins;
    std::vector<double> adds;
    std::vector<double> dels;
    for (long i = 0; i < size; ++i) {
      // An address of its own, as pods of a drain have: pods sharing one would share its
      // masquerade element too.
      Pod pod = fabricatedPod(kBurstAddressBase + i);
      pod.containerId = "u" + randomHex(63);
      pod.name = "burst-" + std::to_string(sampleCounter_++);
      pods.push_back(std::move(pod));
      std::vector<Mapping> mappings;
      std::string annotation;
      if (o_.kind == Kind::kHostportAgent) {
        annotation = "web=" + std::to_string(o_.containerPort);
      } else {
        mappings.push_back({o_.sampleHostPort - size + i, o_.containerPort, kTcp});
      }
      auto [added, delStdin] = add(pods.back(), mappings, annotation);
      adds.push_back(added.wallMs);
      delStdins.push_back(std::move(delStdin));
    }
    for (long i = 0; i < size; ++i) {
      RunResult deleted = invoke("DEL", pods[i], delStdins[i]);
      if (!deleted.ok()) die(o_.kindName + " DEL in a burst failed: " + deleted.describe());
      dels.push_back(deleted.wallMs);
    }
    std::cerr << "  " << o_.kindName << " burst of " << size << ": ADD p50 " << percentile(adds, 50)
              << " ms, DEL p50 " << percentile(dels, 50) << " ms\n";
    bursts.push_back({{"size", size},
                      {"add", json::parse(summaryJson(adds))},
                      {"del", json::parse(summaryJson(dels))}});
  }
  return bursts;
}

json Bench::clientRun(const std::vector<std::string>& args) const {
  // Fresh conntrack per round, so earlier rounds' entries never fill the table.
  (void)runProgram({"/usr/sbin/conntrack", "-F"}, {{"PATH", kSearchPath}}, "");
  std::vector<std::string> argv = {o_.tcpClient};
  argv.insert(argv.end(), args.begin(), args.end());
  const RunResult result = runProgram(argv, {{"PATH", kSearchPath}}, "");
  if (!result.ok()) die("datapath client failed: " + result.describe());
  return json::parse(result.out);
}

std::string Bench::podIp() const {
  for (const auto& ip : o_.prevResult["ips"]) {
    const std::string address = ip.value("address", "");
    if (address.find(':') == std::string::npos) return address.substr(0, address.find('/'));
  }
  return {};
}

namespace {

double median(const std::vector<double>& values) { return percentile(values, 50); }
double minOf(const std::vector<double>& v) {
  return v.empty() ? 0.0 : *std::ranges::min_element(v);
}
double maxOf(const std::vector<double>& v) {
  return v.empty() ? 0.0 : *std::ranges::max_element(v);
}

}  // namespace

json Bench::measureDatapath(long n) {
  if (o_.tcpSeconds <= 0 || o_.kind == Kind::kHostportAgent) return nullptr;
  Pod pod{"d" + randomHex(63), "datapath", o_.prevResult};
  const long hostPort = o_.datapathHostPort;
  std::vector<Mapping> mappings = {{hostPort, o_.containerPort, kTcp}};
  if (o_.udpSamples > 0) mappings.push_back({hostPort, o_.containerPort, kUdp});
  auto [added, delStdin] = add(pod, mappings, "");
  (void)added;
  // Alternate rounds through the host port and straight to the pod IP (no DNAT rule consulted):
  // the ratio of the two cancels most of the machine's background load.
  const std::string direct = podIp();
  const std::string port = std::to_string(hostPort);
  const std::string podPort = std::to_string(o_.containerPort);
  std::vector<double> viaHostPort, directRate, ratios;
  std::vector<double> udpVia50, udpVia99, udpDirect50, udpDirect99, udpRatios, udpRatios99;
  long udpLost = 0;
  json rounds = json::array();
  for (long r = 0; r < o_.tcpRounds; ++r) {
    const std::vector<std::string> tcp = {"--seconds", std::to_string(o_.tcpSeconds), "--threads",
                                          std::to_string(o_.tcpThreads)};
    const auto tcpTo = [&](const std::string& ip, const std::string& p) {
      std::vector<std::string> args = {"client", "--ip", ip, "--port", p};
      args.insert(args.end(), tcp.begin(), tcp.end());
      return clientRun(args);
    };
    json hp = tcpTo(o_.nodeIp, port);
    json dir = tcpTo(direct, podPort);
    viaHostPort.push_back(hp.value("connectionsPerSecond", 0.0));
    directRate.push_back(dir.value("connectionsPerSecond", 0.0));
    if (directRate.back() > 0) ratios.push_back(viaHostPort.back() / directRate.back());
    json round = {{"hostPort", hp}, {"direct", dir}};
    if (o_.udpSamples > 0) {
      const auto udpTo = [&](const std::string& ip, const std::string& p) {
        return clientRun({"udp", "--ip", ip, "--port", p, "--samples",
                          std::to_string(o_.udpSamples), "--first-source-port", "20000"});
      };
      json uhp = udpTo(o_.nodeIp, port);
      json udir = udpTo(direct, podPort);
      udpLost += uhp.value("lost", 0L) + udir.value("lost", 0L);
      udpVia50.push_back(uhp["rttUs"].value("p50", 0.0) / 1000);
      udpVia99.push_back(uhp["rttUs"].value("p99", 0.0) / 1000);
      udpDirect50.push_back(udir["rttUs"].value("p50", 0.0) / 1000);
      udpDirect99.push_back(udir["rttUs"].value("p99", 0.0) / 1000);
      if (udpDirect50.back() > 0) udpRatios.push_back(udpVia50.back() / udpDirect50.back());
      if (udpDirect99.back() > 0) udpRatios99.push_back(udpVia99.back() / udpDirect99.back());
      round["udpHostPort"] = uhp;
      round["udpDirect"] = udir;
    }
    rounds.push_back(round);
  }
  RunResult deleted = invoke("DEL", pod, delStdin);
  if (!deleted.ok()) die(o_.kindName + " DEL failed: " + deleted.describe());
  std::cerr << "  " << o_.kindName << " N=" << n << ": " << static_cast<long>(median(viaHostPort))
            << " conn/s via hostPort, " << static_cast<long>(median(directRate))
            << " conn/s direct to the pod";
  if (!udpVia50.empty()) {
    std::cerr << "; UDP first packet p50 " << median(udpVia50) << " ms via hostPort, "
              << median(udpDirect50) << " ms direct";
  }
  std::cerr << "\n";
  json out = {{"connectionsPerSecond", median(viaHostPort)},
              {"directConnectionsPerSecond", median(directRate)},
              {"ratioToDirect", median(ratios)},
              {"ratioMin", minOf(ratios)},
              {"ratioMax", maxOf(ratios)},
              {"rounds", rounds},
              {"secondsPerRound", o_.tcpSeconds},
              {"threads", o_.tcpThreads},
              {"udp", nullptr}};
  if (!udpVia50.empty()) {
    // Medians over the rounds of each round's p50 and p99.
    out["udp"] = {{"samplesPerRound", o_.udpSamples},
                  {"p50Ms", median(udpVia50)},
                  {"p99Ms", median(udpVia99)},
                  {"directP50Ms", median(udpDirect50)},
                  {"directP99Ms", median(udpDirect99)},
                  {"ratioToDirect", median(udpRatios)},
                  {"ratioMin", minOf(udpRatios)},
                  {"ratioMax", maxOf(udpRatios)},
                  {"p99RatioToDirect", median(udpRatios99)},
                  {"lost", udpLost}};
  }
  return out;
}

int Bench::run() {
  const auto started = Clock::now();
  if (o_.budgetSeconds > 0) {
    deadline_ = started + std::chrono::duration_cast<Clock::duration>(
                              std::chrono::duration<double>(o_.budgetSeconds));
  }
  std::optional<long> stoppedAt;
  std::string reason;
  // (N, seconds per prepopulation ADD at N): to predict whether the next size fits the budget.
  std::vector<std::pair<double, double>> addCost;
  for (std::size_t i = 0; i < o_.sizes.size(); ++i) {
    const long n = o_.sizes[i];
    const long have = installed_[kTcp] + installed_[kUdp];
    const long want = targetsFor(n).first + targetsFor(n).second;
    if (want < have) die("--sizes must ascend");
    if (o_.budgetSeconds > 0 && !addCost.empty()) {
      // Predict the ADD cost at N by a line through the measured points, then the time to
      // prepopulate up to N and to take the samples there.
      const auto [n0, t0] = addCost.front();
      const auto [n1, t1] = addCost.back();
      const double slope = n1 > n0 ? std::max(0.0, (t1 - t0) / (n1 - n0)) : 0.0;
      const auto cost = [&](double at) { return t1 + slope * (at - n1); };
      const double adds = std::ceil(static_cast<double>(want - have) / o_.bulk);
      const double predicted =
          adds * (cost(static_cast<double>(have)) + cost(static_cast<double>(want))) / 2 +
          static_cast<double>(o_.samples) * 2.2 * cost(static_cast<double>(want)) +
          (o_.tcpSeconds > 0 ? 2.0 * o_.tcpRounds * (o_.tcpSeconds + 0.2) : 0.0);
      const double left = o_.budgetSeconds - msSince(started) / 1000.0;
      if (predicted > left) {
        stoppedAt = n;
        char text[200];
        std::snprintf(text, sizeof text,
                      "N=%ld predicted to take %.0f s (ADD at N ~%.0f ms) but %.0f s of the "
                      "%.0f s budget are left",
                      n, predicted, cost(static_cast<double>(want)) * 1000, std::max(0.0, left),
                      o_.budgetSeconds);
        reason = text;
        std::cerr << "  " << o_.kindName << ": stopping before " << reason << "\n";
        break;
      }
    }
    const long addsBefore = prepopAdds_;
    const std::optional<double> prepopSeconds = prepopulate(n);
    if (!prepopSeconds) {
      // A prediction from too few sizes can be far off: the budget is also kept while
      // prepopulating.
      stoppedAt = n;
      char text[240];
      std::snprintf(text, sizeof text,
                    "the %.0f s budget ran out while prepopulating N=%ld: %ld of %ld mappings "
                    "installed after %.0f s, the last ADDs taking %.0f ms",
                    o_.budgetSeconds, n, installed_[kTcp] + installed_[kUdp], want,
                    msSince(started) / 1000.0, lastAddMs_);
      reason = text;
      std::cerr << "  " << o_.kindName << ": stopping: " << reason << "\n";
      break;
    }
    json latency = measureLatency(n);
    const double p50 = latency["add"]["p50"].get<double>() / 1000.0;
    addCost.emplace_back(static_cast<double>(want), p50);
    json line = {{"plugin", o_.kindName},
                 {"n", n},
                 {"installed", {{"tcp", installed_[kTcp]}, {"udp", installed_[kUdp]}}},
                 {"bulk", o_.bulk},
                 {"loadAverage", loadAverage()},
                 {"prepopulate", {{"adds", prepopAdds_ - addsBefore}, {"seconds", *prepopSeconds}}},
                 {"add", latency["add"]},
                 {"del", latency["del"]},
                 {"addSamplesMs", latency["addSamplesMs"]},
                 {"delSamplesMs", latency["delSamplesMs"]},
                 {"datapath", measureDatapath(n)}};
    if (!o_.bursts.empty()) line["burst"] = measureBursts();
    std::cout << line.dump() << std::endl;
    if (o_.maxAddMs > 0 && p50 * 1000 > o_.maxAddMs && i + 1 < o_.sizes.size()) {
      stoppedAt = o_.sizes[i + 1];
      char text[200];
      std::snprintf(text, sizeof text,
                    "ADD p50 at N=%ld was %.0f ms, past the %.0f ms this benchmark bears", n,
                    p50 * 1000, o_.maxAddMs);
      reason = text;
      std::cerr << "  " << o_.kindName << ": stopping: " << reason << "\n";
      break;
    }
  }
  json done = {{"plugin", o_.kindName},
               {"done", true},
               {"seconds", msSince(started) / 1000.0},
               {"stoppedAt", stoppedAt ? json(*stoppedAt) : json(nullptr)},
               {"reason", reason}};
  std::cout << done.dump() << std::endl;
  return 0;
}

int Bench::coldAdd() {
  const Pod pod = fabricatedPod(0);
  std::vector<Mapping> mappings;
  std::string annotation;
  if (o_.kind == Kind::kHostportAgent) {
    annotation = "web=" + std::to_string(o_.containerPort);
  } else {
    mappings.push_back({o_.sampleHostPort, o_.containerPort, kTcp});
  }
  auto [added, delStdin] = add(pod, mappings, annotation);
  const RunResult deleted = invoke("DEL", pod, delStdin);
  if (!deleted.ok()) die(o_.kindName + " DEL failed: " + deleted.describe());
  std::cout << json{{"addMs", added.wallMs}, {"delMs", deleted.wallMs}}.dump() << std::endl;
  return 0;
}

int Bench::churn() {
  if (o_.sizes.size() != 1) die("--churn-seconds takes one size in --sizes");
  if (o_.kind != Kind::kHostportAgent) die("--churn-seconds: --kind hostport-agent only");
  const long n = o_.sizes.front();
  const double prepopSeconds = prepopulate(n).value_or(-1);
  std::cerr << "  " << o_.kindName << " churn: " << o_.churn.pairsPerSecond << " pairs/s for "
            << o_.churn.seconds << " s with N=" << n << " (" << o_.churn.workers << " workers)\n";
  const json churned = runChurn(o_.churn, [this](long sequence) {
    PairResult result;
    // Pods in flight at once must not share an address, as on a node (masquerade elements are
    // keyed by it): each pair is a fabricated pod of its own, from addresses past the
    // prepopulated ones, reused a thousand pairs later.
    Pod pod = fabricatedPod(prepopAdds_ + sequence % kChurnAddresses);
    pod.containerId = "c" + randomHex(63);
    pod.name = "churn-" + std::to_string(sequence);
    const std::vector<Mapping> mappings;  // the agent picks the port
    const std::string annotation = "web=" + std::to_string(o_.containerPort);
    const std::string stdinText = config(pod, mappings, annotation, pod.prevResult).dump();
    const RunResult added = invoke("ADD", pod, stdinText);
    result.addMs = added.wallMs;
    if (!added.ok()) {
      result.error = "ADD: " + added.describe();
      return result;
    }
    json cached = json::parse(added.out, nullptr, false);
    if (cached.is_discarded() || !cached.is_object()) cached = pod.prevResult;
    const RunResult deleted = invoke("DEL", pod, config(pod, mappings, annotation, cached).dump());
    result.delMs = deleted.wallMs;
    if (!deleted.ok()) result.error = "DEL: " + deleted.describe();
    return result;
  });
  json line = {{"plugin", o_.kindName},
               {"n", n},
               {"installed", {{"tcp", installed_[kTcp]}, {"udp", installed_[kUdp]}}},
               {"prepopulate", {{"adds", prepopAdds_}, {"seconds", prepopSeconds}}},
               {"churn", churned}};
  std::cout << line.dump() << std::endl;
  return 0;
}

void usage() {
  std::cout <<
      R"(usage: hostport-bench-cni --kind hostport|hostport-agent|portmap --plugin PATH
         --node-netns PATH --pod-netns PATH --prev-result FILE [options]

  --sizes 0,1000,65535    mappings installed before each measurement (ascending; past 65535
                          the TCP space is full and UDP goes on top)
  --samples 20            ADD+DEL pairs measured at each size
  --bulk 10               mappings per prepopulation ADD (one fabricated pod each)
  --agent-socket PATH     hostport-agent's control socket (kind hostport-agent)
  --plugin-state-dir DIR  the standalone plugin's stateDir (kind hostport): its netlink keeper
  --budget-seconds S      skip the sizes predicted to end after S seconds (0: no limit)
  --network NAME          the network name in the config (default hpbench)
  --tcp-client PATH       hostport-bench-tcp; with --tcp-seconds > 0 also measure the datapath
  --tcp-seconds S --tcp-threads T --tcp-rounds R --node-ip IP --container-port P
  --udp-samples K         also UDP first-packet latency: K requests per direction and round
  --max-add-ms MS         stop before the next size once ADD p50 is above MS (0: never)
  --burst 15,100,1000     after each size's pairs, B ADDs back to back then their B DELs, for
                          each B (a static kind takes the B ports below the sample window, which
                          prepopulation then leaves free)
  --first-host-port 1 --sample-host-port 65530 (4 ports) --datapath-host-port 65535
  --cold-add              one ADD and its DEL of one pod, printed as {"addMs","delMs"}
  --churn-seconds S       after prepopulating to the one size in --sizes, ADD+DEL pairs at
                          --churn-rate 200 per second by --churn-workers 8 threads for S s,
                          reported per --churn-window 10 s with the memory of --agent-pid and
                          the size of --state-dir at each window's end

or: hostport-bench-cni --exec-floor PROGRAM [--samples 100]
  runs PROGRAM with CNI_COMMAND=VERSION and empty stdin, as the runtime would, and prints
  {"program":..,"wallMs":{summary}}: the cost of a process start here, with no work in it.
)";
}

/// Process start and exit alone: the floor under every CNI call on this machine.
int execFloor(const std::string& program, long samples) {
  std::vector<double> wall;
  for (long i = 0; i < samples; ++i) {
    const RunResult run =
        runProgram({program}, {{"CNI_COMMAND", "VERSION"}, {"PATH", kSearchPath}}, "");
    if (!run.ok()) die(program + " VERSION failed: " + run.describe());
    wall.push_back(run.wallMs);
  }
  std::cout << json{{"program", program}, {"wallMs", json::parse(summaryJson(wall))}}.dump()
            << std::endl;
  return 0;
}

}  // namespace
}  // namespace hostport::bench

int main(int argc, char** argv) {
  using namespace hostport::bench;
  const Args args(argc, argv);
  if (args.has("help") || argc == 1) {
    usage();
    return argc == 1 ? 2 : 0;
  }
  if (args.has("exec-floor"))
    return execFloor(args.get("exec-floor"), args.getLong("samples", 100));
  Options o;
  o.kindName = args.get("kind", "hostport");
  if (o.kindName == "hostport") {
    o.kind = Kind::kHostport;
  } else if (o.kindName == "hostport-agent") {
    o.kind = Kind::kHostportAgent;
  } else if (o.kindName == "portmap") {
    o.kind = Kind::kPortmap;
  } else {
    die("--kind: hostport, hostport-agent or portmap");
  }
  o.plugin = args.get("plugin");
  o.podNetns = args.get("pod-netns");
  const std::string nodeNetns = args.get("node-netns");
  const std::string prevResultPath = args.get("prev-result");
  if (o.plugin.empty() || o.podNetns.empty() || nodeNetns.empty() || prevResultPath.empty()) {
    die("--plugin, --pod-netns, --node-netns and --prev-result are required");
  }
  {
    FILE* file = std::fopen(prevResultPath.c_str(), "r");
    if (file == nullptr) die("cannot read " + prevResultPath);
    std::string text;
    char buffer[4096];
    std::size_t n = 0;
    while ((n = std::fread(buffer, 1, sizeof buffer, file)) > 0) text.append(buffer, n);
    std::fclose(file);
    o.prevResult = nlohmann::json::parse(text, nullptr, false);
    if (!o.prevResult.is_object()) die(prevResultPath + " holds no JSON object");
    o.prevResult["cniVersion"] = kCniVersion;
  }
  o.network = args.get("network", o.network);
  o.sizes = parseList(args.get("sizes", "0,1000,65535"), "--sizes");
  o.samples = args.getLong("samples", o.samples);
  o.bulk = std::max(1L, args.getLong("bulk", o.bulk));
  o.agentSocket = args.get("agent-socket");
  if (o.kind == Kind::kHostportAgent && o.agentSocket.empty()) die("--agent-socket is required");
  o.budgetSeconds = args.getDouble("budget-seconds", 0);
  o.tcpClient = args.get("tcp-client");
  o.tcpSeconds = o.tcpClient.empty() ? 0 : args.getDouble("tcp-seconds", 0);
  o.tcpThreads = args.getLong("tcp-threads", o.tcpThreads);
  o.tcpRounds = std::max(1L, args.getLong("tcp-rounds", o.tcpRounds));
  o.nodeIp = args.get("node-ip", o.nodeIp);
  o.containerPort = static_cast<int>(args.getLong("container-port", o.containerPort));
  o.udpSamples = args.getLong("udp-samples", 0);
  o.maxAddMs = args.getDouble("max-add-ms", 0);
  if (args.has("burst")) o.bursts = parseList(args.get("burst"), "--burst");
  o.stateDir = args.get("plugin-state-dir");
  if (o.kind == Kind::kHostport && o.stateDir.empty()) {
    die("--plugin-state-dir is required for --kind hostport (never the node's own dir)");
  }
  o.firstHostPort = std::max(1L, args.getLong("first-host-port", o.firstHostPort));
  o.sampleHostPort = args.getLong("sample-host-port", o.sampleHostPort);
  o.datapathHostPort = args.getLong("datapath-host-port", o.datapathHostPort);
  const long burstPorts = o.bursts.empty() ? 0 : *std::ranges::max_element(o.bursts);
  if (o.sampleHostPort - burstPorts < 1 || o.sampleHostPort + kSampleWindow - 1 > kPortSpace ||
      o.datapathHostPort < 1 || o.datapathHostPort > kPortSpace) {
    die("--sample-host-port and --datapath-host-port must leave their ports within 1..65535");
  }
  o.churn.pairsPerSecond = args.getDouble("churn-rate", o.churn.pairsPerSecond);
  o.churn.seconds = args.getDouble("churn-seconds", 0);
  o.churn.windowSeconds = std::max(1.0, args.getDouble("churn-window", o.churn.windowSeconds));
  o.churn.workers = std::max(1L, args.getLong("churn-workers", o.churn.workers));
  o.churn.agentPid = static_cast<pid_t>(args.getLong("agent-pid", 0));
  o.churn.stateDir = args.get("state-dir");
  joinNetnsOrDie(nodeNetns);
  Bench bench(std::move(o));
  if (args.has("cold-add")) return bench.coldAdd();
  if (args.has("churn-seconds")) return bench.churn();
  return bench.run();
}
