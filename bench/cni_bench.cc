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
// For each size N (ascending) it prints one JSON object per line on stdout:
//   {"plugin":..,"n":N,"prepopulate":{"adds":..,"seconds":..},"add":{summary},"del":{summary},
//    "datapath":{...}|null}
// and a final {"plugin":..,"done":true,"stoppedAt":N|null,"reason":..} line. Progress goes to
// stderr. A failed plugin run aborts with its output: a benchmark of failures means nothing.

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
  long firstHostPort = 10000;
  long sampleHostPort = 50000;
};

struct Pod {
  std::string containerId;
  std::string name;
  json prevResult;
};

class Bench {
 public:
  explicit Bench(Options options) : o_(std::move(options)) {}
  int run();

 private:
  json config(const Pod& pod, const std::vector<std::pair<long, int>>& mappings,
              const std::string& annotation, const json& prevResult) const;
  RunResult invoke(const std::string& verb, const Pod& pod, const std::string& stdinText) const;
  /// ADD then returns the stdin to use for its DEL (libcni gives DEL the cached result).
  std::pair<RunResult, std::string> add(const Pod& pod,
                                        const std::vector<std::pair<long, int>>& mappings,
                                        const std::string& annotation) const;
  Pod fabricatedPod(long index) const;
  double prepopulate(long target);
  json measureLatency(long n);
  json measureDatapath(long n);
  json tcpRound(const std::string& ip, int port) const;

  Options o_;
  long installed_ = 0;  // mappings installed by prepopulation so far
  long prepopAdds_ = 0;
  long sampleCounter_ = 0;
};

json Bench::config(const Pod& pod, const std::vector<std::pair<long, int>>& mappings,
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
    if (o_.kind == Kind::kHostportAgent) {
      // Next to the agent's socket (a temp dir of bench.sh), never the node's own dirs.
      const auto dir = std::filesystem::path(o_.agentSocket).parent_path();
      conf["stateDir"] = (dir / "cni-state").string();
      conf["releaseSpool"] = (dir / "released").string();
    }
  }
  json runtimeConfig = json::object();
  if (!mappings.empty()) {
    json list = json::array();
    for (const auto& [hostPort, containerPort] : mappings) {
      list.push_back(
          {{"hostPort", hostPort}, {"containerPort", containerPort}, {"protocol", "tcp"}});
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

std::pair<RunResult, std::string> Bench::add(const Pod& pod,
                                             const std::vector<std::pair<long, int>>& mappings,
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

double Bench::prepopulate(long target) {
  const auto started = Clock::now();
  while (installed_ < target) {
    const long count = std::min(o_.bulk, target - installed_);
    const Pod pod = fabricatedPod(prepopAdds_);
    std::vector<std::pair<long, int>> mappings;
    std::string annotation;
    for (long i = 0; i < count; ++i) {
      const long hostPort = o_.firstHostPort + installed_ + i;
      if (hostPort > 65535) die("host ports past 65535; lower the sizes or --first-host-port");
      if (o_.kind == Kind::kHostportAgent) {
        annotation +=
            (i ? ", p" : "p") + std::to_string(i) + "=" + std::to_string(o_.containerPort + i);
      } else {
        mappings.emplace_back(hostPort, o_.containerPort);
      }
    }
    add(pod, mappings, annotation);
    installed_ += count;
    ++prepopAdds_;
    if (prepopAdds_ % 50 == 0) {
      std::cerr << "  " << o_.kindName << ": " << installed_ << "/" << target
                << " mappings installed (" << static_cast<long>(msSince(started) / 1000) << " s)\n";
    }
  }
  return msSince(started) / 1000.0;
}

json Bench::measureLatency(long n) {
  std::vector<double> adds;
  std::vector<double> dels;
  for (long s = 0; s < o_.samples; ++s) {
    Pod pod{"s" + randomHex(63), "sample-" + std::to_string(sampleCounter_), o_.prevResult};
    const long hostPort = o_.sampleHostPort + (sampleCounter_++ % 1000);
    std::vector<std::pair<long, int>> mappings;
    std::string annotation;
    if (o_.kind == Kind::kHostportAgent) {
      annotation = "web=" + std::to_string(o_.containerPort);
    } else {
      mappings.emplace_back(hostPort, o_.containerPort);
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

json Bench::tcpRound(const std::string& ip, int port) const {
  // Fresh conntrack per round, so earlier rounds' entries never fill the table.
  (void)runProgram({"/usr/sbin/conntrack", "-F"}, {{"PATH", kSearchPath}}, "");
  const RunResult result =
      runProgram({o_.tcpClient, "client", "--ip", ip, "--port", std::to_string(port), "--seconds",
                  std::to_string(o_.tcpSeconds), "--threads", std::to_string(o_.tcpThreads)},
                 {{"PATH", kSearchPath}}, "");
  if (!result.ok()) die("tcp client failed: " + result.describe());
  return json::parse(result.out);
}

json Bench::measureDatapath(long n) {
  if (o_.tcpSeconds <= 0 || o_.kind == Kind::kHostportAgent) return nullptr;
  Pod pod{"d" + randomHex(63), "datapath", o_.prevResult};
  const long hostPort = o_.sampleHostPort + 1500;
  auto [added, delStdin] = add(pod, {{hostPort, o_.containerPort}}, "");
  (void)added;
  // Alternate rounds through the host port and straight to the pod IP (no DNAT rule consulted):
  // the ratio of the two cancels most of the machine's background load.
  const std::string podIp = [&] {
    for (const auto& ip : o_.prevResult["ips"]) {
      const std::string address = ip.value("address", "");
      if (address.find(':') == std::string::npos) return address.substr(0, address.find('/'));
    }
    return std::string();
  }();
  std::vector<double> viaHostPort;
  std::vector<double> direct;
  std::vector<double> ratios;  // per round: the two halves of a round share the machine's load
  json rounds = json::array();
  for (long r = 0; r < o_.tcpRounds; ++r) {
    json hp = tcpRound(o_.nodeIp, static_cast<int>(hostPort));
    json dir = tcpRound(podIp, o_.containerPort);
    viaHostPort.push_back(hp.value("connectionsPerSecond", 0.0));
    direct.push_back(dir.value("connectionsPerSecond", 0.0));
    if (direct.back() > 0) ratios.push_back(viaHostPort.back() / direct.back());
    rounds.push_back({{"hostPort", hp}, {"direct", dir}});
  }
  RunResult deleted = invoke("DEL", pod, delStdin);
  if (!deleted.ok()) die(o_.kindName + " DEL failed: " + deleted.describe());
  const double hpMedian = percentile(viaHostPort, 50);
  const double directMedian = percentile(direct, 50);
  std::cerr << "  " << o_.kindName << " N=" << n << ": " << static_cast<long>(hpMedian)
            << " conn/s via hostPort, " << static_cast<long>(directMedian)
            << " conn/s direct to the pod\n";
  return {{"connectionsPerSecond", hpMedian},
          {"directConnectionsPerSecond", directMedian},
          {"ratioToDirect", percentile(ratios, 50)},
          {"ratioMin", ratios.empty() ? 0.0 : *std::min_element(ratios.begin(), ratios.end())},
          {"ratioMax", ratios.empty() ? 0.0 : *std::max_element(ratios.begin(), ratios.end())},
          {"rounds", rounds},
          {"secondsPerRound", o_.tcpSeconds},
          {"threads", o_.tcpThreads}};
}

int Bench::run() {
  const auto started = Clock::now();
  std::optional<long> stoppedAt;
  std::string reason;
  // (N, seconds per prepopulation ADD at N): to predict whether the next size fits the budget.
  std::vector<std::pair<double, double>> addCost;
  for (std::size_t i = 0; i < o_.sizes.size(); ++i) {
    const long n = o_.sizes[i];
    if (n < installed_) die("--sizes must ascend");
    if (o_.budgetSeconds > 0 && !addCost.empty()) {
      // Predict the ADD cost at N by a line through the measured points, then the time to
      // prepopulate up to N and to take the samples there.
      const auto [n0, t0] = addCost.front();
      const auto [n1, t1] = addCost.back();
      const double slope = n1 > n0 ? std::max(0.0, (t1 - t0) / (n1 - n0)) : 0.0;
      const auto cost = [&](double at) { return t1 + slope * (at - n1); };
      const double adds = std::ceil(static_cast<double>(n - installed_) / o_.bulk);
      const double predicted =
          adds * (cost(static_cast<double>(installed_)) + cost(static_cast<double>(n))) / 2 +
          static_cast<double>(o_.samples) * 2.2 * cost(static_cast<double>(n)) +
          (o_.tcpSeconds > 0 ? 2.0 * o_.tcpRounds * (o_.tcpSeconds + 0.2) : 0.0);
      const double left = o_.budgetSeconds - msSince(started) / 1000.0;
      if (predicted > left) {
        stoppedAt = n;
        char text[200];
        std::snprintf(text, sizeof text,
                      "N=%ld predicted to take %.0f s (ADD at N ~%.0f ms) but %.0f s of the "
                      "%.0f s budget are left",
                      n, predicted, cost(static_cast<double>(n)) * 1000, std::max(0.0, left),
                      o_.budgetSeconds);
        reason = text;
        std::cerr << "  " << o_.kindName << ": stopping before " << reason << "\n";
        break;
      }
    }
    const long addsBefore = prepopAdds_;
    const double prepopSeconds = prepopulate(n);
    json latency = measureLatency(n);
    const double p50 = latency["add"]["p50"].get<double>() / 1000.0;
    addCost.emplace_back(static_cast<double>(n), p50);
    json line = {{"plugin", o_.kindName},
                 {"n", n},
                 {"bulk", o_.bulk},
                 {"loadAverage", loadAverage()},
                 {"prepopulate", {{"adds", prepopAdds_ - addsBefore}, {"seconds", prepopSeconds}}},
                 {"add", latency["add"]},
                 {"del", latency["del"]},
                 {"addSamplesMs", latency["addSamplesMs"]},
                 {"delSamplesMs", latency["delSamplesMs"]},
                 {"datapath", measureDatapath(n)}};
    std::cout << line.dump() << std::endl;
  }
  json done = {{"plugin", o_.kindName},
               {"done", true},
               {"seconds", msSince(started) / 1000.0},
               {"stoppedAt", stoppedAt ? json(*stoppedAt) : json(nullptr)},
               {"reason", reason}};
  std::cout << done.dump() << std::endl;
  return 0;
}

void usage() {
  std::cout <<
      R"(usage: hostport-bench-cni --kind hostport|hostport-agent|portmap --plugin PATH
         --node-netns PATH --pod-netns PATH --prev-result FILE [options]

  --sizes 0,1000,5000     mappings installed before each measurement (ascending)
  --samples 20            ADD+DEL pairs measured at each size
  --bulk 10               mappings per prepopulation ADD (one fabricated pod each)
  --agent-socket PATH     hostport-agent's control socket (kind hostport-agent)
  --budget-seconds S      skip the sizes predicted to end after S seconds (0: no limit)
  --network NAME          the network name in the config (default hpbench)
  --tcp-client PATH       hostport-bench-tcp; with --tcp-seconds > 0 also measure the datapath
  --tcp-seconds S --tcp-threads T --tcp-rounds R --node-ip IP --container-port P
  --first-host-port 10000 --sample-host-port 50000

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
  o.sizes = parseList(args.get("sizes", "0,1000,5000"), "--sizes");
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
  o.firstHostPort = args.getLong("first-host-port", o.firstHostPort);
  o.sampleHostPort = args.getLong("sample-host-port", o.sampleHostPort);
  joinNetnsOrDie(nodeNetns);
  return Bench(std::move(o)).run();
}
