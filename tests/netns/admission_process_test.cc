// hostport-admission, the built binary, in a network namespace of the test's own with the fake
// API server started there: it keeps its CA and serving certificate in the Secret and the
// webhooks' caBundle, answers reviews over TLS to a client that trusts only that CA, counts them
// on its plain-HTTP metrics listener and stops on SIGTERM with exit 0; two replicas started at
// once end with one CA; with cert-manager's files it runs with no API server at all; an API
// server it cannot reach keeps it from listening, never from stopping; a bad flag exits 2
// naming the flag and the value.

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>

#include <algorithm>
#include <fstream>
#include <memory>
#include <optional>
#include <set>
#include <string>

#include "admission/webhook_certificates.h"
#include "kube/base64.h"
#include "kube/https_transport.h"
#include "tests/fakes/fake_kube_apiserver.h"
#include "tests/support/netns.h"
#include "tests/support/plain_http.h"
#include "tests/support/result_assertions.h"
#include "tests/support/server_process.h"
#include "tests/support/subprocess.h"
#include "tests/support/temp_dir.h"
#include "tests/support/wait.h"

#ifndef HOSTPORT_ADMISSION_PATH
#error "HOSTPORT_ADMISSION_PATH must name the hostport-admission binary"
#endif

namespace hostport::test {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;
using namespace std::chrono_literals;

constexpr std::string_view kSecret = "/api/v1/namespaces/hostport/secrets/hostport-admission-tls";
constexpr std::string_view kValidating =
    "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations/hostport-admission";
constexpr std::string_view kMutating =
    "/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations/hostport-admission";
// What the API server checks the serving certificate against: <service>.<namespace>.svc.
constexpr const char* kServiceName = "hostport-admission.hostport.svc";
// The netns is the test's own, so fixed ports cannot collide with anything.
constexpr uint16_t kWebhookPort = 8443;
constexpr uint16_t kMetricsPort = 9443;

// The agents' file: "default" for anyone; "games" udp only, games-* namespaces, 16 ports a pod.
constexpr const char* kAgentYaml = R"(pools:
  default:
    ranges: ["40000-40999"]
  games:
    ranges: ["30000-30999"]
    protocols: [udp]
    namespaces: ["games-*"]
    maxPortsPerPod: 16
)";

json podReview(const json& annotations) {
  const json pod = {
      {"apiVersion", "v1"},
      {"kind", "Pod"},
      {"metadata", {{"name", "game-0"}, {"namespace", "games-eu"}, {"annotations", annotations}}},
      {"spec", {{"containers", {{{"name", "app"}, {"image", "game:1.0"}}}}}}};
  return {{"apiVersion", "admission.k8s.io/v1"},
          {"kind", "AdmissionReview"},
          {"request",
           {{"uid", "705ab4f5-6393-11e8-b7cc-42010a800002"},
            {"kind", {{"group", ""}, {"version", "v1"}, {"kind", "Pod"}}},
            {"resource", {{"group", ""}, {"version", "v1"}, {"resource", "pods"}}},
            {"namespace", "games-eu"},
            {"operation", "CREATE"},
            {"object", pod}}}};
}

class AdmissionProcessTest : public ::testing::Test {
 protected:
  void SetUp() override {
    HOSTPORT_SKIP_UNLESS_ROOT();
    auto netns = Netns::create();
    ASSERT_OK(netns);
    netns_.emplace(std::move(*netns));
    std::ofstream(agentYaml()) << kAgentYaml;
  }

  std::string agentYaml() const { return dir_.path() + "/agent.yaml"; }

  /// The fake API server, serving the netns, with the two webhook configurations the manifests
  /// create; its kubeconfig in the temp dir.
  void startApiServer() {
    ASSERT_OK_AND_ASSIGN(auto started,
                         netns_->run([] { return kube::FakeKubeApiServer::start(); }));
    ASSERT_OK(started);
    api_ = std::move(*started);
    const json webhooks = {
        {"webhooks", {{{"name", "pods.hostport.io"}, {"clientConfig", json::object()}}}}};
    ASSERT_OK(api_->putObject(kValidating, webhooks));
    ASSERT_OK(api_->putObject(kMutating, webhooks));
    ASSERT_OK_AND_ASSIGN(const auto kubeconfig, api_->writeKubeconfig(dir_.path()));
    kubeconfig_ = kubeconfig.string();
  }

  /// The CA the Secret holds, PEM; an error while there is no Secret yet.
  Result<std::string> secretCa() const {
    const auto secret = api_->object(kSecret);
    if (!secret) return fail(ErrorCode::kNotFound, "no Secret yet");
    return kube::decodeBase64((*secret)["data"]["ca.crt"].get<std::string>(), "ca.crt");
  }

  /// One request to the webhook port, from inside the netns, by a client that trusts only
  /// `caPem` and checks the Service's name, as the API server does.
  Result<kube::ApiResponse> exchange(const std::string& caPem, const kube::ApiRequest& request,
                                     uint16_t port = kWebhookPort) const {
    kube::ClusterConfig config;
    config.host = "127.0.0.1";
    config.port = port;
    config.caPem = caPem;
    config.tlsServerName = kServiceName;
    HOSTPORT_TRY(auto client, kube::HttpsTransport::create(config));
    HOSTPORT_TRY(auto answer, netns_->run([&] { return client->exchange(request, "", 5000ms); }));
    return answer;
  }

  /// POSTs `review` to `path`; its "response", or an error naming the status.
  Result<json> review(const std::string& caPem, std::string_view path, const json& body) const {
    HOSTPORT_TRY(const auto answer,
                 exchange(caPem, {"POST", std::string(path), "application/json", body.dump()}));
    if (answer.status != 200) {
      return fail(ErrorCode::kUnavailable,
                  "HTTP " + std::to_string(answer.status) + ": " + answer.body);
    }
    return json::parse(answer.body)["response"];
  }

  /// The server under test in the netns with `args` after the binary and --config; ready once
  /// GET /readyz answers a client trusting `trusted()` (the CA, once there is one), or at once
  /// without `trusted`.
  std::unique_ptr<ServerProcess> admission(std::vector<std::string> args,
                                           std::function<Result<std::string>()> trusted,
                                           uint16_t port = kWebhookPort) {
    args.insert(args.begin(), {HOSTPORT_ADMISSION_PATH, "--config", agentYaml()});
    const std::string name = "hostport-admission-" + std::to_string(port);
    ServerSpec spec{.name = name,
                    .argv = std::move(args),
                    .netnsPath = netns_->path(),
                    .logPath = dir_.path() + "/" + name + ".log"};
    if (trusted) {
      spec.ready = [this, trusted = std::move(trusted), port]() -> Result<void> {
        HOSTPORT_TRY(const std::string ca, trusted());
        HOSTPORT_TRY(const auto answer, exchange(ca, {"GET", "/readyz", "", ""}, port));
        if (answer.status == 200) return {};
        return fail(ErrorCode::kUnavailable, "/readyz: HTTP " + std::to_string(answer.status));
      };
    }
    return std::make_unique<ServerProcess>(std::move(spec));
  }

  std::vector<std::string> secretModeArgs(uint16_t port = kWebhookPort) const {
    return {"--kubeconfig",      kubeconfig_,
            "--listen",          "127.0.0.1:" + std::to_string(port),
            "--metrics-address", "127.0.0.1:" + std::to_string(kMetricsPort + port - kWebhookPort),
            "--threads",         "2"};
  }

  std::optional<Netns> netns_;
  TempDir dir_;
  std::unique_ptr<kube::FakeKubeApiServer> api_;
  std::string kubeconfig_;
};

TEST_F(AdmissionProcessTest, KeepsItsCertificatesAnswersOverTlsCountsAndStopsOnSigterm) {
  ASSERT_NO_FATAL_FAILURE(startApiServer());
  auto server = admission(secretModeArgs(), [this] { return secretCa(); });
  ASSERT_OK(server->start());
  ASSERT_OK_AND_ASSIGN(const std::string ca, secretCa());

  // The caBundle of both configurations is the Secret's CA, as the API server must trust it.
  const std::string caBundle = api_->object(kSecret).value()["data"]["ca.crt"];
  for (const auto path : {kValidating, kMutating}) {
    EXPECT_EQ(api_->object(path).value()["webhooks"][0]["clientConfig"].value("caBundle", ""),
              caBundle)
        << path;
  }

  ASSERT_OK_AND_ASSIGN(const json refused,
                       review(ca, "/validate", podReview({{"hostport.io/ports", "web=0"}})));
  EXPECT_EQ(refused["allowed"], false) << refused.dump();
  EXPECT_THAT(refused["status"]["message"].get<std::string>(),
              HasSubstr("annotation hostport.io/ports"));
  ASSERT_OK_AND_ASSIGN(const json patched,
                       review(ca, "/mutate",
                              podReview({{"hostport.io/ports", "rtp=7000-7009/udp"},
                                         {"hostport.io/pool", "games"}})));
  EXPECT_EQ(patched["allowed"], true) << patched.dump();
  ASSERT_EQ(patched["patchType"], "JSONPatch") << patched.dump();
  const json patch =
      json::parse(kube::decodeBase64(patched["patch"].get<std::string>(), "patch").value());
  EXPECT_THAT(patch.dump(), HasSubstr(R"("hostport.io/games":"10")")) << patch.dump();

  ASSERT_OK_AND_ASSIGN(const std::string metrics,
                       plainHttpExchange(*netns_, kMetricsPort, "GET", "/metrics"));
  EXPECT_THAT(
      metrics,
      HasSubstr(R"(hostport_admission_reviews_total{webhook="validate",outcome="refused"} 1)"));
  EXPECT_THAT(
      metrics,
      HasSubstr(R"(hostport_admission_reviews_total{webhook="mutate",outcome="patched"} 1)"));
  EXPECT_THAT(metrics, HasSubstr("hostport_kube_requests_total"));

  ASSERT_OK_AND_ASSIGN(const std::string ended, server->kill(SIGTERM));
  EXPECT_EQ(ended, "exit 0") << server->describe();
  EXPECT_THAT(server->runLog(), HasSubstr("admission.stopping signal=15"));
}

TEST_F(AdmissionProcessTest, TwoReplicasClaimAClusterPoolsPortsAsLeasesOneLeadsTheRepair) {
  std::ofstream(agentYaml()) << kAgentYaml << "  global:\n    ranges: [\"42000-42009\"]\n"
                             << "    scope: cluster\n";
  ASSERT_NO_FATAL_FAILURE(startApiServer());
  constexpr uint16_t kSecondPort = kWebhookPort + 1;
  auto first = admission(secretModeArgs(), [this] { return secretCa(); });
  ASSERT_OK(first->start());
  auto second = admission(
      secretModeArgs(kSecondPort), [this] { return secretCa(); }, kSecondPort);
  ASSERT_OK(second->start());
  ASSERT_OK_AND_ASSIGN(const std::string ca, secretCa());

  std::set<std::string> ports;
  for (int i = 0; i < 10; ++i) {
    json body = podReview({{"hostport.io/ports", "game=7777/udp"}, {"hostport.io/pool", "global"}});
    const std::string name = "game-" + std::to_string(i);
    body["request"]["name"] = name;
    body["request"]["object"]["metadata"]["name"] = name;
    ASSERT_OK_AND_ASSIGN(const auto answer,
                         exchange(ca, {"POST", "/claim", "application/json", body.dump()},
                                  i % 2 == 0 ? kWebhookPort : kSecondPort));
    ASSERT_EQ(answer.status, 200u) << answer.body;
    const json response = json::parse(answer.body)["response"];
    ASSERT_EQ(response["allowed"], true) << response.dump();
    const std::string patch =
        kube::decodeBase64(response["patch"].get<std::string>(), "patch").value();
    EXPECT_THAT(patch, HasSubstr("hostport.io~1claim-holder")) << patch;
    for (uint32_t port = 42000; port <= 42009; ++port) {
      const auto lease = api_->object(
          "/apis/coordination.k8s.io/v1/namespaces/hostport/leases/global." + std::to_string(port));
      if (lease && (*lease)["spec"]["holderIdentity"] == "games-eu/" + name) {
        ports.insert(std::to_string(port));
      }
    }
  }
  EXPECT_EQ(ports.size(), 10u) << "ten pods, ten Leases, ten ports";

  // The eleventh finds the pool full: refused, and the pod waits for a port.
  json body = podReview({{"hostport.io/ports", "game=7777/udp"}, {"hostport.io/pool", "global"}});
  ASSERT_OK_AND_ASSIGN(const json full, review(ca, "/claim", body));
  EXPECT_EQ(full["allowed"], false);
  EXPECT_THAT(full["status"]["message"].get<std::string>(),
              HasSubstr("cluster pool \"global\" has no free port"));

  // One replica leads the repair loop, and says so on its metrics.
  const auto pages = [&] {
    std::vector<std::string> out;
    for (const uint16_t metrics : {kMetricsPort, static_cast<uint16_t>(kMetricsPort + 1)}) {
      out.push_back(plainHttpExchange(*netns_, metrics, "GET", "/metrics").value_or(""));
    }
    return out;
  };
  const auto leaders = [&] {
    std::string which;
    for (const auto& page : pages()) {
      which += page.find("\nhostport_admission_repair_leader 1\n") != std::string::npos ? "1" : "0";
    }
    return which;
  };
  EXPECT_TRUE(waitUntil([&] {
    const std::string now = leaders();
    return now == "10" || now == "01";
  })) << "one leader, not "
      << leaders();
  for (const auto& page : pages()) {
    EXPECT_THAT(
        page,
        HasSubstr(R"(hostport_admission_reviews_total{webhook="claim",outcome="patched"} 5)"));
  }
  for (auto* server : {first.get(), second.get()}) {
    ASSERT_OK_AND_ASSIGN(const std::string ended, server->kill(SIGTERM));
    EXPECT_EQ(ended, "exit 0") << server->describe();
  }
}

TEST_F(AdmissionProcessTest, TwoReplicasRacingForAnEmptySecretServeItsOneCa) {
  ASSERT_NO_FATAL_FAILURE(startApiServer());
  constexpr uint16_t kSecondPort = kWebhookPort + 1;
  // Both started at once, neither waited for: they race to create the Secret.
  auto first = admission(secretModeArgs(), nullptr);
  auto second = admission(secretModeArgs(kSecondPort), nullptr, kSecondPort);
  ASSERT_OK(first->start());
  ASSERT_OK(second->start());
  const json body = podReview({{"hostport.io/ports", "web=8080"}});
  for (const uint16_t port : {kWebhookPort, kSecondPort}) {
    // Each answers a client that trusts only the CA the Secret ended with.
    EXPECT_TRUE(waitUntil(
        [&] {
          auto ca = secretCa();
          auto answer =
              ca ? exchange(*ca, {"POST", "/validate", "application/json", body.dump()}, port)
                 : Result<kube::ApiResponse>(std::unexpected(ca.error()));
          return answer && answer->status == 200;
        },
        15s))
        << port << ": " << first->describe() << "\n"
        << second->describe();
  }
  // One of them created the Secret; the other took it as it found it (never a second CA).
  const std::vector<kube::FakeKubeRequest> requests = api_->requests();
  const auto creates =
      std::count_if(requests.begin(), requests.end(), [](const kube::FakeKubeRequest& request) {
        return request.method == "POST" && request.path.ends_with("/secrets") &&
               request.status == 201;
      });
  EXPECT_EQ(creates, 1);
}

TEST_F(AdmissionProcessTest, WithCertManagersFilesItNeedsNoApiServer) {
  ASSERT_OK_AND_ASSIGN(const auto made, admission::renew(std::nullopt, admission::Renewal::kAll,
                                                         admission::serviceDnsNames(
                                                             "hostport-admission", "hostport")));
  const std::string certFile = dir_.path() + "/tls.crt";
  const std::string keyFile = dir_.path() + "/tls.key";
  std::ofstream(certFile) << made.serving.certificatePem;
  std::ofstream(keyFile) << made.serving.privateKeyPem;
  const std::string ca = made.ca.certificatePem;
  // No --kubeconfig, and not in a pod: there is no cluster to reach.
  auto server = admission({"--tls-cert-file", certFile, "--tls-key-file", keyFile, "--listen",
                           "127.0.0.1:" + std::to_string(kWebhookPort), "--metrics-address",
                           "127.0.0.1:" + std::to_string(kMetricsPort)},
                          [ca] { return Result<std::string>(ca); });
  ASSERT_OK(server->start());
  ASSERT_OK_AND_ASSIGN(const json allowed,
                       review(ca, "/validate", podReview({{"hostport.io/ports", "web=8080"}})));
  EXPECT_EQ(allowed["allowed"], true) << allowed.dump();
  ASSERT_OK_AND_ASSIGN(const std::string metrics,
                       plainHttpExchange(*netns_, kMetricsPort, "GET", "/metrics"));
  EXPECT_THAT(metrics, HasSubstr("HTTP/1.1 200"));
  EXPECT_THAT(
      metrics,
      HasSubstr(R"(hostport_admission_reviews_total{webhook="validate",outcome="allowed"} 1)"));
  EXPECT_THAT(server->runLog(), HasSubstr("certificates=files"));
  ASSERT_OK_AND_ASSIGN(const std::string ended, server->kill(SIGTERM));
  EXPECT_EQ(ended, "exit 0") << server->describe();
}

TEST_F(AdmissionProcessTest, AnApiServerItCannotReachKeepsItFromListeningNotFromStopping) {
  ASSERT_NO_FATAL_FAILURE(startApiServer());
  api_.reset();  // its kubeconfig stays, naming a port where nothing listens now
  auto server = admission(secretModeArgs(), nullptr);  // it cannot become ready
  ASSERT_OK(server->start());
  EXPECT_TRUE(server->waitForLog("admission.certificate_failed")) << server->describe();
  const auto answer = plainHttpExchange(*netns_, kWebhookPort, "GET", "/readyz");
  ASSERT_FALSE(answer) << "it listens without a certificate: " << *answer;
  EXPECT_THAT(answer.error().message, HasSubstr("Connection refused"));
  // Before it listens it holds nothing to hand over, so SIGTERM's default ending is the right one.
  ASSERT_OK_AND_ASSIGN(const std::string ended, server->kill(SIGTERM));
  EXPECT_EQ(ended, "killed by signal 15") << server->describe();
}

TEST_F(AdmissionProcessTest, ABadFlagExitsTwoNamingTheFlagAndTheValue) {
  ASSERT_OK_AND_ASSIGN(const CommandResult run,
                       runCommand({.argv = {HOSTPORT_ADMISSION_PATH, "--config", agentYaml(),
                                            "--listen", "everywhere:8443"},
                                   .netnsPath = netns_->path()}));
  EXPECT_EQ(run.exitCode, 2) << run.describe();
  EXPECT_THAT(run.err, HasSubstr("admission.config_invalid"));
  EXPECT_THAT(run.err, HasSubstr("--listen"));
  EXPECT_THAT(run.err, HasSubstr("everywhere:8443"));

  ASSERT_OK_AND_ASSIGN(const CommandResult help,
                       runCommand({.argv = {HOSTPORT_ADMISSION_PATH, "--help"}}));
  EXPECT_EQ(help.exitCode, 0) << help.describe();
  for (const char* flag : {"--config", "--kubeconfig", "--namespace", "--service", "--secret",
                           "--listen", "--metrics-address", "--tls-cert-file"}) {
    EXPECT_THAT(help.out, HasSubstr(flag));
  }
}

}  // namespace
}  // namespace hostport::test
