// hostport-bench-claims: cluster pools' claims at admission (issue 27), per second and their
// latency, through 1 and 2 hostport-admission replicas against the fake API server on loopback.
//
//   --admission PATH --fake-apiserver PATH --dir DIR [--netns-path P] [--replicas 1,2]
//   [--claims 1000,10000] [--strategies lowest,random] [--clients 16]
//
// For each strategy, replica count R and claim count N, from nothing: the fake API server (the
// tests' own, tests/fakes, as a process), R servers with the cluster pool "global" (20,000 ports)
// on 127.0.0.1:9443+i with cert-manager's files (the claims still go through the API server),
// each ready and its claims listed. Then --clients threads, each with one kept-alive TLS
// connection to server (thread mod R), POST /claim reviews of pods "claim-<n>" until N are
// claimed; each timed from the request written to the whole answer read. One line each:
// {"strategy","replicas","claims","clients","seconds","claimsPerSecond","latencyMs":{summary},
//  "distinctPorts","failures","firstError","loadAverage"}.
// A failure is a transport error, a status other than 200, or an answer not allowed or without
// its patch; distinctPorts must equal claims.

#include <signal.h>
#include <sys/wait.h>

#include <atomic>
#include <filesystem>
#include <iostream>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

#include "bench/admission_site.h"
#include "bench/bench_util.h"
#include "kube/base64.h"

namespace hostport::bench {
namespace {

using nlohmann::json;

constexpr uint16_t kFirstPort = 9443;

std::string agentYaml(const std::string& strategy) {
  return "pools:\n  default:\n    ranges: [\"40000-40999\"]\n  global:\n    ranges: "
         "[\"20000-39999\"]\n    scope: cluster\n    strategy: " +
         strategy + "\n";
}

void stop(int pid, const std::string& what, const std::string& logPath) {
  ::kill(pid, SIGTERM);
  int status = 0;
  ::waitpid(pid, &status, 0);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    die(what + " did not exit 0 on SIGTERM; log:\n" + readFile(logPath));
  }
}

/// The claimed port an answer's patch gives allocated-game; "" when there is none.
std::string claimedPort(const json& response) {
  if (!response.contains("patch")) return "";
  auto decoded = kube::decodeBase64(response["patch"].get<std::string>(), "patch");
  if (!decoded) return "";
  for (const json& op : json::parse(*decoded, nullptr, false)) {
    const std::string path = op.value("path", "");
    if (path.ends_with("allocated-game")) return op.value("value", json("")).get<std::string>();
    if (path == "/metadata/annotations" && op["value"].contains("hostport.io/allocated-game")) {
      return op["value"]["hostport.io/allocated-game"].get<std::string>();
    }
  }
  return "";
}

json runOnce(const Args& args, const std::string& strategy, long replicas, long claims,
             long clients) {
  const std::string dir = args.get("dir") + "/" + strategy + "-" + std::to_string(replicas) + "-" +
                          std::to_string(claims);
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir + "/api");
  const std::string apiLog = dir + "/api.log";
  const int api = startServer({args.get("fake-apiserver"), "--dir", dir + "/api"}, apiLog);
  const auto waited = Clock::now();
  while (!std::filesystem::exists(dir + "/api/ready")) {
    if (msSince(waited) > 30'000)
      die("the fake API server did not start; log:\n" + readFile(apiLog));
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  const std::string caPem = prepareAdmission(dir, agentYaml(strategy));
  std::vector<int> servers;
  for (long i = 0; i < replicas; ++i) {
    const auto port = static_cast<uint16_t>(kFirstPort + i);
    const std::string log = dir + "/admission-" + std::to_string(i) + ".log";
    servers.push_back(
        startServer({args.get("admission"), "--config", dir + "/agent.yaml", "--tls-cert-file",
                     dir + "/tls.crt", "--tls-key-file", dir + "/tls.key", "--kubeconfig",
                     dir + "/api/kubeconfig", "--listen", "127.0.0.1:" + std::to_string(port),
                     "--metrics-address", "", "--log-level", "warn"},
                    log));
    waitAdmissionReady(servers.back(), caPem, port, log);
  }

  std::vector<std::unique_ptr<kube::HttpsTransport>> connections;
  for (long c = 0; c < clients; ++c) {
    connections.push_back(admissionClient(caPem, static_cast<uint16_t>(kFirstPort + c % replicas)));
  }
  std::mutex mutex;
  std::vector<double> samples;
  std::set<std::string> ports;
  std::string firstError;
  std::atomic<long> next{0};
  std::atomic<long> failures{0};
  const json pod = deploymentPod("global");
  const auto started = Clock::now();
  {
    std::vector<std::jthread> threads;
    for (long c = 0; c < clients; ++c) {
      threads.emplace_back([&, c] {
        kube::HttpsTransport& https = *connections[static_cast<std::size_t>(c)];
        std::vector<double> mine;
        std::vector<std::string> got;
        for (long n = next++; n < claims; n = next++) {
          const std::string name = "claim-" + std::to_string(n);
          json asked = pod;
          asked["metadata"].erase("generateName");
          asked["metadata"]["name"] = name;
          json body = review(asked, name);
          body["request"]["name"] = name;
          const auto begin = Clock::now();
          auto answer = https.exchange({"POST", "/claim", "application/json", body.dump()}, "",
                                       std::chrono::seconds(20));
          const double ms = msSince(begin);
          std::string why;
          std::string port;
          if (!answer) {
            why = answer.error().message;
          } else if (answer->status != 200) {
            why = "HTTP " + std::to_string(answer->status) + ": " + answer->body;
          } else {
            const json response =
                json::parse(answer->body, nullptr, false).value("response", json());
            port = claimedPort(response);
            if (!response.value("allowed", false) || port.empty()) {
              why = "unexpected answer: " + answer->body.substr(0, 300);
            }
          }
          if (!why.empty()) {
            ++failures;
            std::lock_guard lock(mutex);
            if (firstError.empty()) firstError = why;
            continue;
          }
          mine.push_back(ms);
          got.push_back(port);
        }
        std::lock_guard lock(mutex);
        samples.insert(samples.end(), mine.begin(), mine.end());
        ports.insert(got.begin(), got.end());
      });
    }
  }
  const double elapsed = msSince(started) / 1000.0;
  for (std::size_t i = 0; i < servers.size(); ++i) {
    stop(servers[i], "hostport-admission", dir + "/admission-" + std::to_string(i) + ".log");
  }
  stop(api, "fake-kube-apiserver", apiLog);
  return {{"strategy", strategy},
          {"replicas", replicas},
          {"claims", claims},
          {"clients", clients},
          {"loadAverage", loadAverage()},
          {"seconds", elapsed},
          {"claimsPerSecond", static_cast<double>(samples.size()) / elapsed},
          {"latencyMs", json::parse(summaryJson(samples))},
          {"distinctPorts", ports.size()},
          {"failures", failures.load()},
          {"firstError", firstError}};
}

}  // namespace
}  // namespace hostport::bench

int main(int argc, char** argv) {
  using namespace hostport::bench;
  const Args args(argc, argv);
  if (args.has("help") || !args.has("admission") || !args.has("fake-apiserver") ||
      !args.has("dir")) {
    std::cout
        << "usage: hostport-bench-claims --admission PATH --fake-apiserver PATH --dir DIR "
           "[--netns-path P] [--replicas 1,2] [--claims 1000,10000] [--strategies lowest,random] "
           "[--clients 16]\n";
    return args.has("help") ? 0 : 2;
  }
  std::vector<std::string> strategies;
  const std::string list = args.get("strategies", "lowest,random");
  for (std::size_t start = 0; start <= list.size();) {
    const auto comma = list.find(',', start);
    strategies.push_back(list.substr(start, comma == std::string::npos ? comma : comma - start));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  const long clients = args.getLong("clients", 16);
  // Every process started from here on is in the netns (the ports are fixed: 9443 and up).
  if (args.has("netns-path")) joinNetnsOrDie(args.get("netns-path"));
  for (const auto& strategy : strategies) {
    for (const long replicas : parseList(args.get("replicas", "1,2"), "--replicas")) {
      for (const long claims : parseList(args.get("claims", "1000,10000"), "--claims")) {
        std::cout << runOnce(args, strategy, replicas, claims, clients).dump() << std::endl;
      }
    }
  }
  return 0;
}
