#include "bench/admission_site.h"

#include <signal.h>
#include <sys/wait.h>

#include <fstream>
#include <thread>

#include "admission/webhook_certificates.h"
#include "bench/bench_util.h"

namespace hostport::bench {

using nlohmann::json;

json deploymentPod(std::string_view pool) {
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
  return {{"apiVersion", "v1"},
          {"kind", "Pod"},
          {"metadata",
           {{"generateName", "game-7d9c6b5f4-"},
            {"namespace", "games-eu"},
            {"labels", {{"app", "game"}, {"pod-template-hash", "7d9c6b5f4"}}},
            {"annotations", {{"hostport.io/ports", "game=7777/udp"}, {"hostport.io/pool", pool}}},
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

std::unique_ptr<kube::HttpsTransport> admissionClient(const std::string& caPem, uint16_t port) {
  kube::ClusterConfig config;
  config.host = "127.0.0.1";
  config.port = port;
  config.caPem = caPem;
  config.tlsServerName = kAdmissionServiceName;
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

std::string prepareAdmission(const std::string& dir, std::string_view agentYaml) {
  auto made = admission::renew(std::nullopt, admission::Renewal::kAll,
                               admission::serviceDnsNames("hostport-admission", "hostport"));
  if (!made) die("certificates: " + made.error().message);
  writeFile(dir + "/tls.crt", made->serving.certificatePem);
  writeFile(dir + "/tls.key", made->serving.privateKeyPem);
  writeFile(dir + "/agent.yaml", std::string(agentYaml));
  return made->ca.certificatePem;
}

void waitAdmissionReady(int pid, const std::string& caPem, uint16_t port,
                        const std::string& logPath) {
  const auto started = Clock::now();
  while (true) {
    int status = 0;
    if (::waitpid(pid, &status, WNOHANG) == pid) {
      die("hostport-admission exited before it was ready; log:\n" + readFile(logPath));
    }
    auto answer = admissionClient(caPem, port)
                      ->exchange({"GET", "/readyz", "", ""}, "", std::chrono::seconds(1));
    if (answer && answer->status == 200) return;
    if (msSince(started) > 30'000) {
      ::kill(pid, SIGKILL);
      die("hostport-admission was not ready after 30 s; log:\n" + readFile(logPath));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}

}  // namespace hostport::bench
