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

#include "admission/webhook_certificates.h"
#include "bench/bench_util.h"
#include "kube/https_transport.h"

namespace hostport::bench {
namespace {

using nlohmann::json;

constexpr const char* kServiceName = "hostport-admission.hostport.svc";
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

/// A pod of a Deployment as kube-apiserver sends it to a CREATE webhook: defaulted, with its
/// managedFields, a projected service-account volume and the usual tolerations.
json deploymentPod() {
  const json fields = {
      {"f:metadata",
       {{"f:annotations", {{"f:hostport.io/ports", json::object()}}},
        {"f:generateName", json::object()},
        {"f:labels", {{"f:app", json::object()}, {"f:pod-template-hash", json::object()}}},
        {"f:ownerReferences", {{"k:{\"uid\":\"0c9a3e57\"}", json::object()}}}}},
      {"f:spec",
       {{"f:containers",
         {{"k:{\"name\":\"app\"}",
           {{"f:env", {{"k:{\"name\":\"GAME_MODE\"}", json::object()}}},
            {"f:image", json::object()},
            {"f:ports", {{"k:{\"containerPort\":7777,\"protocol\":\"UDP\"}", json::object()}}},
            {"f:resources", {{"f:limits", json::object()}, {"f:requests", json::object()}}}}}}},
        {"f:restartPolicy", json::object()},
        {"f:terminationGracePeriodSeconds", json::object()}}}};
  return {
      {"apiVersion", "v1"},
      {"kind", "Pod"},
      {"metadata",
       {{"generateName", "game-7d9c6b5f4-"},
        {"namespace", "games-eu"},
        {"labels", {{"app", "game"}, {"pod-template-hash", "7d9c6b5f4"}}},
        {"annotations", {{"hostport.io/ports", "game=7777/udp"}, {"hostport.io/pool", "games"}}},
        {"ownerReferences",
         {{{"apiVersion", "apps/v1"},
           {"kind", "ReplicaSet"},
           {"name", "game-7d9c6b5f4"},
           {"uid", "0c9a3e57-59a4-4b1e-9f7e-3d6c2b8e1a40"},
           {"controller", true},
           {"blockOwnerDeletion", true}}}},
        {"managedFields",
         {{{"manager", "kube-controller-manager"},
           {"operation", "Update"},
           {"apiVersion", "v1"},
           {"time", "2026-11-29T08:00:00Z"},
           {"fieldsType", "FieldsV1"},
           {"fieldsV1", fields}}}}}},
      {"spec",
       {{"containers",
         {{{"name", "app"},
           {"image", "registry.example/game:1.4.2"},
           {"args", {"--listen", "0.0.0.0:7777"}},
           {"env", {{{"name", "GAME_MODE"}, {"value", "ranked"}}}},
           {"ports", {{{"name", "game"}, {"containerPort", 7777}, {"protocol", "UDP"}}}},
           {"resources",
            {{"limits", {{"cpu", "2"}, {"memory", "2Gi"}}},
             {"requests", {{"cpu", "1"}, {"memory", "1Gi"}}}}},
           {"readinessProbe",
            {{"tcpSocket", {{"port", 9090}}},
             {"periodSeconds", 5},
             {"timeoutSeconds", 1},
             {"successThreshold", 1},
             {"failureThreshold", 3}}},
           {"volumeMounts",
            {{{"name", "kube-api-access-x7k2p"},
              {"readOnly", true},
              {"mountPath", "/var/run/secrets/kubernetes.io/serviceaccount"}}}},
           {"terminationMessagePath", "/dev/termination-log"},
           {"terminationMessagePolicy", "File"},
           {"imagePullPolicy", "IfNotPresent"}}}},
        {"volumes",
         {{{"name", "kube-api-access-x7k2p"},
           {"projected",
            {{"sources",
              {{{"serviceAccountToken", {{"expirationSeconds", 3607}, {"path", "token"}}}},
               {{"configMap",
                 {{"name", "kube-root-ca.crt"},
                  {"items", {{{"key", "ca.crt"}, {"path", "ca.crt"}}}}}}},
               {{"downwardAPI",
                 {{"items",
                   {{{"path", "namespace"},
                     {"fieldRef",
                      {{"apiVersion", "v1"}, {"fieldPath", "metadata.namespace"}}}}}}}}}}},
             {"defaultMode", 420}}}}}},
        {"restartPolicy", "Always"},
        {"terminationGracePeriodSeconds", 30},
        {"dnsPolicy", "ClusterFirst"},
        {"serviceAccountName", "default"},
        {"serviceAccount", "default"},
        {"securityContext", json::object()},
        {"schedulerName", "default-scheduler"},
        {"tolerations",
         {{{"key", "node.kubernetes.io/not-ready"},
           {"operator", "Exists"},
           {"effect", "NoExecute"},
           {"tolerationSeconds", 300}},
          {{"key", "node.kubernetes.io/unreachable"},
           {"operator", "Exists"},
           {"effect", "NoExecute"},
           {"tolerationSeconds", 300}}}},
        {"priority", 0},
        {"enableServiceLinks", true},
        {"preemptionPolicy", "PreemptLowerPriority"}}},
      {"status", {{"phase", "Pending"}, {"qosClass", "Burstable"}}}};
}

json review(const json& pod, const std::string& uid) {
  return {{"apiVersion", "admission.k8s.io/v1"},
          {"kind", "AdmissionReview"},
          {"request",
           {{"uid", uid},
            {"kind", {{"group", ""}, {"version", "v1"}, {"kind", "Pod"}}},
            {"resource", {{"group", ""}, {"version", "v1"}, {"resource", "pods"}}},
            {"requestKind", {{"group", ""}, {"version", "v1"}, {"kind", "Pod"}}},
            {"requestResource", {{"group", ""}, {"version", "v1"}, {"resource", "pods"}}},
            {"namespace", "games-eu"},
            {"operation", "CREATE"},
            {"userInfo",
             {{"username", "system:serviceaccount:kube-system:replicaset-controller"},
              {"uid", "5b6f0e2c"},
              {"groups", {"system:serviceaccounts", "system:authenticated"}}}},
            {"object", pod},
            {"oldObject", nullptr},
            {"dryRun", false},
            {"options", {{"apiVersion", "meta.k8s.io/v1"}, {"kind", "CreateOptions"}}}}}};
}

std::unique_ptr<kube::HttpsTransport> client(const std::string& caPem) {
  kube::ClusterConfig config;
  config.host = "127.0.0.1";
  config.port = kPort;
  config.caPem = caPem;
  config.tlsServerName = kServiceName;
  auto transport = kube::HttpsTransport::create(config);
  if (!transport) die("TLS client: " + transport.error().message);
  return std::move(*transport);
}

void writeFile(const std::string& path, const std::string& text) {
  std::ofstream file(path);
  file << text;
  file.close();
  if (!file) die("cannot write " + path);
}

/// The server's certificate files and its config in `dir`; the CA's PEM, which clients trust.
std::string prepare(const std::string& dir) {
  auto made = admission::renew(std::nullopt, admission::Renewal::kAll,
                               admission::serviceDnsNames("hostport-admission", "hostport"));
  if (!made) die("certificates: " + made.error().message);
  writeFile(dir + "/tls.crt", made->serving.certificatePem);
  writeFile(dir + "/tls.key", made->serving.privateKeyPem);
  writeFile(dir + "/agent.yaml", kAgentYaml);
  return made->ca.certificatePem;
}

void waitReady(int pid, const std::string& caPem, const std::string& logPath) {
  const auto started = Clock::now();
  while (true) {
    int status = 0;
    if (::waitpid(pid, &status, WNOHANG) == pid) {
      die("hostport-admission exited before it was ready; log:\n" + readFile(logPath));
    }
    auto answer = client(caPem)->exchange({"GET", "/readyz", "", ""}, "", std::chrono::seconds(1));
    if (answer && answer->status == 200) return;
    if (msSince(started) > 30'000) {
      ::kill(pid, SIGKILL);
      die("hostport-admission was not ready after 30 s; log:\n" + readFile(logPath));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}

json handshakes(const std::string& caPem, long count) {
  std::vector<double> samples;
  for (long i = 0; i < count; ++i) {
    auto https = client(caPem);
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
    connections.push_back(client(caPem));
    auto answer =
        connections.back()->exchange({"GET", "/healthz", "", ""}, "", std::chrono::seconds(5));
    if (!answer || answer->status != 200) die("GET /healthz failed before the load");
  }
  const json pod = deploymentPod();
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
  const std::string caPem = prepare(dir);
  // Every thread made from here on, and the server, are in the netns.
  joinNetnsOrDie(args.get("netns-path"));
  const std::string logPath = dir + "/admission.log";
  const int pid = startServer(
      {args.get("admission"), "--config", dir + "/agent.yaml", "--tls-cert-file", dir + "/tls.crt",
       "--tls-key-file", dir + "/tls.key", "--listen", "127.0.0.1:" + std::to_string(kPort),
       "--metrics-address", "", "--log-level", "warn"},
      logPath);
  waitReady(pid, caPem, logPath);
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
