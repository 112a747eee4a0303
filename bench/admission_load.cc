// hostport-bench-admission: hostport-admission's AdmissionReviews per second and their latency
// over kept-alive TLS connections, as kube-apiserver calls a webhook.
//
//   --admission PATH --netns-path P --dir DIR [--clients 1,8,32] [--seconds 5]
//   [--warmup-seconds 1] [--handshakes 50]
//
// It makes a CA and a serving certificate with the server's own code (webhook_certificates.h),
// writes them and an agents' config (two pools) to DIR, joins the netns at P and starts the server
// there on 127.0.0.1:8443 with --tls-cert-file/--tls-key-file (cert-manager's mode: no API server)
// and the default threads (one per core), and waits for GET /readyz. Then:
// - {"handshakeMs":{summary}}: --handshakes new connections, each timed from connect through the
//   TLS handshake to the answer of one GET /healthz, as the API server's first call after a
//   webhook's pod restarts;
// - per client count C, one line: C threads, each with one TLS connection of its own (the
//   kube::HttpsTransport the agent's API client uses), POST reviews back to back for --seconds,
//   alternately /validate and /mutate, of the pod of a Deployment as the API server sends it (about
//   3.2 KB with its managedFields) asking "game=7777/udp" from the "games" pool; each timed from
//   the request written to the whole answer read:
//   {"clients","seconds","reviews","reviewsPerSecond","latencyMs":{summary},"validateMs",
//    "mutateMs","reconnects","failures","firstError","serverRssKiB","serverHwmKiB"}.
// A failure is a transport error, a status other than 200, or an answer whose uid or verdict is
// not the one expected (the validate review is allowed, the mutate one patched).

#include <signal.h>
#include <sys/wait.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "bench/admission_site.h"
#include "bench/bench_util.h"
#include "kube/https_transport.h"

namespace hostport::bench {
namespace {

using nlohmann::json;

constexpr uint16_t kPort = 8443;

constexpr const char* kAgentYaml = R"(pools:
  default:
    ranges: ["40000-40999"]
  games:
    ranges: ["30000-30999"]
    protocols: [udp]
    namespaces: ["games-*"]
    maxPortsPerPod: 16
)";

json handshakes(const std::string& caPem, long count) {
  std::vector<double> samples;
  for (long i = 0; i < count; ++i) {
    auto https = admissionClient(caPem, kPort);
    const auto begin = Clock::now();
    auto answer = https->exchange({"GET", "/healthz", "", ""}, "", std::chrono::seconds(5));
    if (!answer || answer->status != 200) die("GET /healthz failed on a new connection");
    samples.push_back(msSince(begin));
  }
  return {{"handshakeMs", json::parse(summaryJson(samples))}};
}

struct ClientSamples {
  std::vector<double> validate;
  std::vector<double> mutate;
  long failures = 0;
  int connections = 0;
};

json runLoad(const std::string& caPem, long clients, double seconds, int serverPid) {
  std::mutex mutex;
  std::string firstError;
  std::vector<ClientSamples> samples(static_cast<std::size_t>(clients));
  std::vector<std::unique_ptr<kube::HttpsTransport>> connections;
  // Every connection is open (and its handshake done) before the clock starts.
  for (long c = 0; c < clients; ++c) {
    connections.push_back(admissionClient(caPem, kPort));
    auto answer =
        connections.back()->exchange({"GET", "/healthz", "", ""}, "", std::chrono::seconds(5));
    if (!answer || answer->status != 200) die("GET /healthz failed before the load");
  }
  const json pod = deploymentPod("games");
  const auto started = Clock::now();
  const auto deadline =
      started + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
  {
    std::vector<std::jthread> threads;
    for (long c = 0; c < clients; ++c) {
      threads.emplace_back([&, c] {
        kube::HttpsTransport& https = *connections[static_cast<std::size_t>(c)];
        ClientSamples& mine = samples[static_cast<std::size_t>(c)];
        json body = review(pod, "");
        const auto failed = [&](const std::string& why) {
          ++mine.failures;
          std::lock_guard lock(mutex);
          if (firstError.empty()) firstError = why;
        };
        for (long i = 0; Clock::now() < deadline; ++i) {
          const bool mutate = i % 2 == 1;
          const std::string uid = std::to_string(c) + "-" + std::to_string(i);
          body["request"]["uid"] = uid;
          const std::string text = body.dump();
          const auto begin = Clock::now();
          auto answer =
              https.exchange({"POST", mutate ? "/mutate" : "/validate", "application/json", text},
                             "", std::chrono::seconds(10));
          const double ms = msSince(begin);
          if (!answer) {
            failed(answer.error().message);
            continue;
          }
          if (answer->status != 200) {
            failed("HTTP " + std::to_string(answer->status) + ": " + answer->body);
            continue;
          }
          const json response = json::parse(answer->body, nullptr, false).value("response", json());
          const bool expected = response.value("uid", "") == uid &&
                                response.value("allowed", false) &&
                                response.contains("patch") == mutate;
          if (!expected) {
            failed("unexpected answer: " + answer->body.substr(0, 300));
            continue;
          }
          (mutate ? mine.mutate : mine.validate).push_back(ms);
        }
        mine.connections = https.connections();
      });
    }
  }
  const double elapsed = msSince(started) / 1000.0;
  std::vector<double> all, validate, mutate;
  long failures = 0;
  int reconnects = 0;
  for (const ClientSamples& mine : samples) {
    validate.insert(validate.end(), mine.validate.begin(), mine.validate.end());
    mutate.insert(mutate.end(), mine.mutate.begin(), mine.mutate.end());
    failures += mine.failures;
    reconnects += mine.connections - 1;
  }
  all = validate;
  all.insert(all.end(), mutate.begin(), mutate.end());
  return {{"clients", clients},
          {"loadAverage", loadAverage()},
          {"seconds", elapsed},
          {"reviews", all.size()},
          {"reviewsPerSecond", static_cast<double>(all.size()) / elapsed},
          {"reviewBytes", review(pod, "0-0").dump().size()},
          {"latencyMs", json::parse(summaryJson(all))},
          {"validateMs", json::parse(summaryJson(validate))},
          {"mutateMs", json::parse(summaryJson(mutate))},
          {"reconnects", reconnects},
          {"failures", failures},
          {"firstError", firstError},
          {"serverRssKiB", procStatusKiB(serverPid, "VmRSS")},
          {"serverHwmKiB", procStatusKiB(serverPid, "VmHWM")}};
}

}  // namespace
}  // namespace hostport::bench

int main(int argc, char** argv) {
  using namespace hostport::bench;
  const Args args(argc, argv);
  if (args.has("help") || !args.has("admission") || !args.has("netns-path") || !args.has("dir")) {
    std::cout << "usage: hostport-bench-admission --admission PATH --netns-path P --dir DIR "
                 "[--clients 1,8,32] [--seconds 5] [--warmup-seconds 1] [--handshakes 50]\n";
    return args.has("help") ? 0 : 2;
  }
  const std::string dir = args.get("dir");
  std::filesystem::create_directories(dir);
  const std::string caPem = prepareAdmission(dir, kAgentYaml);
  // Every thread made from here on, and the server, are in the netns.
  joinNetnsOrDie(args.get("netns-path"));
  const std::string logPath = dir + "/admission.log";
  const int pid = startServer(
      {args.get("admission"), "--config", dir + "/agent.yaml", "--tls-cert-file", dir + "/tls.crt",
       "--tls-key-file", dir + "/tls.key", "--listen", "127.0.0.1:" + std::to_string(kPort),
       "--metrics-address", "", "--log-level", "warn"},
      logPath);
  waitAdmissionReady(pid, caPem, kPort, logPath);
  std::cout << handshakes(caPem, args.getLong("handshakes", 50)).dump() << std::endl;
  (void)runLoad(caPem, 1, args.getDouble("warmup-seconds", 1), pid);
  for (const long clients : parseList(args.get("clients", "1,8,32"), "--clients")) {
    std::cout << runLoad(caPem, clients, args.getDouble("seconds", 5), pid).dump() << std::endl;
  }
  ::kill(pid, SIGTERM);
  int status = 0;
  ::waitpid(pid, &status, 0);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    die("hostport-admission did not exit 0 on SIGTERM; log:\n" + readFile(logPath));
  }
  return 0;
}
