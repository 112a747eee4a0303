// The cluster sees the ports (issue 13), with the real plugin and agent on a simulated node and the
// fake Kubernetes API server (tests/fakes/fake_kube_apiserver.h) listening in the node's netns:
// the annotation's documented shape, a re-created pod of the same name left alone, a publication
// owed across a SIGKILL, 429/500 storms under the configured QPS, the Node's capacity following a
// host process, ADD going on while the API server does not answer, and the watch of the node's
// own pods (issue 25): hostNetwork pods get their ports, and read them from the pod socket, known
// by their cgroup (a real one, below a parent of the test's own); one publication per pod; Warning
// Events; a lease whose pod the API deleted while its sandbox stays is released after the grace,
// and one whose pod the watch cannot vouch for is kept.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <thread>

#include "agent/csi/csi_driver.h"
#include "agent/csi/volume_files.h"
#include "tests/fakes/fake_kube_apiserver.h"
#include "tests/fakes/fake_kubelet_csi.h"
#include "tests/netns/agent_plugin_fixture.h"
#include "tests/support/file_text.h"
#include "tests/support/pod_caller.h"
#include "tests/support/pod_cgroup.h"
#include "tests/support/temp_dir.h"
#include "tests/support/wait.h"

namespace hostport::test {
namespace {

using namespace std::chrono_literals;
using kube::FakeKubeApiServer;
using kube::FakeKubeFault;
using ::testing::HasSubstr;
using ::testing::Not;

constexpr const char* kNode = "node-1";
constexpr const char* kNamespace = "default";  // cni_node.cc's K8S_POD_NAMESPACE

class AgentPublicationTest : public AgentPluginTest {
 protected:
  /// The fake API server, listening in the node's netns, where the agent reaches it.
  void startApiServer() {
    ASSERT_OK(runInNetnsPath(nodeNetns().path(), [&] {
      auto started = FakeKubeApiServer::start();
      ASSERT_OK(started);
      api_ = std::move(*started);
    }));
    ASSERT_NE(api_, nullptr);
    api_->putNode(kNode);
    auto kubeconfig = api_->writeKubeconfig(kubeDir_.path());
    ASSERT_OK(kubeconfig);
    kubeconfig_ = kubeconfig->string();
  }

  /// The agent with `yaml` as its config file, publishing to the fake as node-1.
  void startPublishingAgent(const std::string& yaml = "capacitySeconds: 1\n") {
    ASSERT_OK_AND_ASSIGN(
        agent_,
        AgentProcess::start(HOSTPORT_AGENT_PATH, nodeNetns(),
                            {.portRange = kSmallPool,
                             .configYaml = yaml,
                             .extraArgs = {"--kubeconfig", kubeconfig_, "--node-name", kNode}}));
  }

  /// A pod object for the pod the plugin is about to add, with the UID its ADD carries, bound to
  /// this node.
  Pod* podInCluster(const std::string& label) {
    auto pod = node().createPod(label);
    if (!pod) {
      ADD_FAILURE() << pod.error().message;
      return nullptr;
    }
    api_->putPod(kNamespace, label, (*pod)->uid, {}, kNode);
    return *pod;
  }

  /// A pod object scheduled to `node`, as the API server holds it once the scheduler bound it.
  void putPodOn(const std::string& name, const std::string& node) {
    ASSERT_OK(api_->putObject(
        podPath(name), {{"apiVersion", "v1"},
                        {"kind", "Pod"},
                        {"spec", {{"nodeName", node}, {"containers", nlohmann::json::array()}}},
                        {"status", {{"phase", "Running"}}}}));
  }

  /// A hostNetwork pod on this node asking `ports` (a hostNetwork pod's hostport.io/ports).
  void putHostNetworkPod(const std::string& name, const std::string& uid, const std::string& ports,
                         const std::string& phase = "Running") {
    ASSERT_OK(api_->putObject(
        podPath(name),
        {{"apiVersion", "v1"},
         {"kind", "Pod"},
         {"metadata", {{"uid", uid}, {"annotations", {{"hostport.io/ports", ports}}}}},
         {"spec",
          {{"nodeName", kNode}, {"hostNetwork", true}, {"containers", nlohmann::json::array()}}},
         {"status", {{"phase", phase}}}}));
  }

  /// The lease of the hostNetwork pod `uid` within 10 s, or nullopt.
  std::optional<Lease> hostNetworkLease(const std::string& uid, bool present = true) {
    std::optional<Lease> found;
    waitUntil([&] {
      auto lease = client().get({"hostnetwork-" + uid, "host"});
      found = lease ? std::optional<Lease>(*lease) : std::nullopt;
      return found.has_value() == present;
    });
    return found;
  }

  /// Whether the agent's /metrics holds `line` within 10 s.
  bool metricsShow(const std::string& line) {
    return waitUntil([&] {
      auto page = client().getText("/metrics");
      return page && page->find(line) != std::string::npos;
    });
  }

  /// The Events POSTed about pod `name`, once there are `count` (waiting up to 10 s).
  std::vector<nlohmann::json> eventsAbout(const std::string& name, std::size_t count = 1) {
    std::vector<nlohmann::json> events;
    waitUntil([&] {
      events.clear();
      for (const auto& request : api_->requests()) {
        if (request.method != "POST" || !request.target.ends_with("/events")) continue;
        auto event = nlohmann::json::parse(request.body, nullptr, false);
        if (!event.is_discarded() && event["involvedObject"]["name"] == name) {
          events.push_back(std::move(event));
        }
      }
      return events.size() >= count;
    });
    return events;
  }

  std::string podPath(const std::string& label) const {
    return std::string("/api/v1/namespaces/") + kNamespace + "/pods/" + label;
  }

  /// The pod's annotations once `key` is among them (waiting up to 10 s), or null.
  nlohmann::json annotationsOnceSet(const std::string& label, const std::string& key) {
    nlohmann::json annotations;
    waitUntil([&] {
      const auto pod = api_->object(podPath(label));
      if (pod && pod->contains("metadata") && (*pod)["metadata"].contains("annotations") &&
          (*pod)["metadata"]["annotations"].contains(key)) {
        annotations = (*pod)["metadata"]["annotations"];
      }
      return !annotations.is_null();
    });
    return annotations;
  }

  std::unique_ptr<FakeKubeApiServer> api_;
  TempDir kubeDir_;
  std::string kubeconfig_;
};

TEST_F(AgentPublicationTest, AGrantIsPublishedOnThePodInTheDocumentedShape) {
  ASSERT_NO_FATAL_FAILURE(startApiServer());
  ASSERT_NO_FATAL_FAILURE(startPublishingAgent());
  Pod* pod = podInCluster("gs-0");
  ASSERT_NE(pod, nullptr);
  ASSERT_OK(node().add(*pod, withAgent("web=8080, voice=5000/udp")));
  const uint16_t web = grantedPort(*pod, "web", PortProtocol::kTcp);
  const uint16_t voice = grantedPort(*pod, "voice", PortProtocol::kUdp);

  const auto annotations = annotationsOnceSet("gs-0", "hostport.io/assigned");
  ASSERT_FALSE(annotations.is_null()) << agent_->log();
  EXPECT_EQ(annotations["hostport.io/allocated-web"], std::to_string(web));
  EXPECT_EQ(annotations["hostport.io/allocated-voice"], std::to_string(voice));
  const auto assigned =
      nlohmann::json::parse(annotations["hostport.io/assigned"].get<std::string>());
  EXPECT_EQ(assigned["node"], kNode);
  EXPECT_EQ(assigned["ports"]["web"],
            (nlohmann::json{{"hostPort", web}, {"protocol", "tcp"}, {"containerPort", 8080}}));
  EXPECT_EQ(assigned["ports"]["voice"],
            (nlohmann::json{{"hostPort", voice}, {"protocol", "udp"}, {"containerPort", 5000}}));
  // One merge patch, with the pod's UID as its precondition.
  const auto requests = api_->requests();
  const auto patch = std::ranges::find_if(requests, [](const auto& request) {
    return request.method == "PATCH" && request.target.find("/pods/gs-0") != std::string::npos;
  });
  ASSERT_NE(patch, requests.end());
  EXPECT_EQ(patch->contentType, "application/merge-patch+json");
  EXPECT_EQ(nlohmann::json::parse(patch->body)["metadata"]["uid"], pod->uid);
}

TEST_F(AgentPublicationTest, APodWithTwoAttachmentsIsPublishedOnceWithBoth) {
  ASSERT_NO_FATAL_FAILURE(startApiServer());
  // A settle longer than two ADDs take on a loaded machine: "once" is then certain.
  ASSERT_NO_FATAL_FAILURE(startPublishingAgent("capacitySeconds: 0\npublishSettleMs: 3000\n"));
  Pod* pod = podInCluster("gs-2");
  ASSERT_NE(pod, nullptr);
  ASSERT_OK(node().add(*pod, withAgent("web=8080")));
  const uint16_t eth0 = grantedPort(*pod, "web", PortProtocol::kTcp);
  // A second network in the same sandbox, as Multus adds one: bridge and hostport run again for
  // net1.
  pod->ifname = "net1";
  pod->bridgeResult = nullptr;
  ASSERT_OK(node().add(*pod, withAgent("web=8080")));
  const uint16_t net1 = grantedPort(*pod, "web", PortProtocol::kTcp);
  ASSERT_NE(eth0, net1);

  const auto annotations = annotationsOnceSet("gs-2", "hostport.io/assigned");
  ASSERT_FALSE(annotations.is_null()) << agent_->log();
  EXPECT_EQ(annotations["hostport.io/allocated-web"], std::to_string(eth0));
  const auto assigned =
      nlohmann::json::parse(annotations["hostport.io/assigned"].get<std::string>());
  EXPECT_EQ(assigned["ports"]["web"]["hostPort"], eth0);
  EXPECT_EQ(assigned["interfaces"]["eth0"]["web"]["hostPort"], eth0);
  EXPECT_EQ(assigned["interfaces"]["net1"]["web"]["hostPort"], net1);
  const auto requests = api_->requests();
  EXPECT_EQ(std::ranges::count_if(requests,
                                  [](const auto& request) {
                                    return request.method == "PATCH" &&
                                           request.target.find("/pods/gs-2") != std::string::npos;
                                  }),
            1)
      << agent_->log();
}

TEST_F(AgentPublicationTest, AnotherPodOfTheSameNameIsNeverPatched) {
  ASSERT_NO_FATAL_FAILURE(startApiServer());
  ASSERT_NO_FATAL_FAILURE(startPublishingAgent());
  Pod* pod = podInCluster("gs-1");
  ASSERT_NE(pod, nullptr);
  // The pod object was deleted and re-created (a new UID) before the old sandbox's ADD published.
  api_->putPod(kNamespace, "gs-1", "00000000-0000-4000-8000-0000000000aa");
  ASSERT_OK(node().add(*pod, withAgent("web=8080")));
  ASSERT_TRUE(api_->waitForRequests(1, 10s)) << agent_->log();
  EXPECT_TRUE(agent_->waitForLog("publish.dropped")) << agent_->describe();
  EXPECT_TRUE(agent_->waitForLog("reason=uid_mismatch")) << agent_->describe();
  const auto stored = api_->object(podPath("gs-1"));
  ASSERT_TRUE(stored);
  EXPECT_FALSE((*stored)["metadata"].contains("annotations") &&
               (*stored)["metadata"]["annotations"].contains("hostport.io/assigned"))
      << stored->dump();
}

TEST_F(AgentPublicationTest, APublicationOwedWhenTheAgentIsKilledIsSentAfterItsRestart) {
  ASSERT_NO_FATAL_FAILURE(startApiServer());
  // Every PATCH fails until the faults run out: the publication stays owed.
  api_->injectFault(FakeKubeFault::answer(503).forMethod("PATCH").repeated(1000));
  ASSERT_NO_FATAL_FAILURE(startPublishingAgent());
  Pod* pod = podInCluster("gs-2");
  ASSERT_NE(pod, nullptr);
  ASSERT_OK(node().add(*pod, withAgent("web=8080")));
  ASSERT_TRUE(api_->waitForRequests(1, 10s)) << agent_->log();
  ASSERT_OK(agent_->kill(SIGKILL));
  api_->clearFaults();
  api_->clearRequests();
  ASSERT_OK(agent_->restart());
  EXPECT_FALSE(annotationsOnceSet("gs-2", "hostport.io/allocated-web").is_null()) << agent_->log();
}

TEST_F(AgentPublicationTest, StormsOf429And500AreRiddenOutAtTheConfiguredRate) {
  ASSERT_NO_FATAL_FAILURE(startApiServer());
  api_->injectFault(FakeKubeFault::answer(429, 1).forMethod("PATCH").repeated(2));
  api_->injectFault(FakeKubeFault::answer(500).forMethod("PATCH").repeated(2));
  ASSERT_NO_FATAL_FAILURE(startPublishingAgent("capacitySeconds: 0\napiQps: 2\napiBurst: 1\n"));
  Pod* pod = podInCluster("gs-3");
  ASSERT_NE(pod, nullptr);
  ASSERT_OK(node().add(*pod, withAgent("web=8080")));
  EXPECT_FALSE(annotationsOnceSet("gs-3", "hostport.io/allocated-web").is_null()) << agent_->log();
  // Five PATCHes in all, never two closer than the rate allows (2 a second, burst 1), and the
  // retries after a 429 not before its Retry-After.
  std::vector<kube::FakeKubeRequest> patches;
  for (const auto& request : api_->requests()) {
    if (request.method == "PATCH") patches.push_back(request);
  }
  ASSERT_EQ(patches.size(), 5u);
  for (std::size_t i = 1; i < patches.size(); ++i) {
    EXPECT_GE(patches[i].received - patches[i - 1].received, 450ms) << i;
  }
  EXPECT_GE(patches[1].received - patches[0].received, 950ms) << "Retry-After: 1";
}

TEST_F(AgentPublicationTest, TheNodesCapacityFollowsAHostProcessBindingAPoolPort) {
  ASSERT_NO_FATAL_FAILURE(startApiServer());
  ASSERT_NO_FATAL_FAILURE(startPublishingAgent());
  const auto capacity = [&]() -> std::string {
    const auto stored = api_->object("/api/v1/nodes/node-1");
    if (!stored) return "";
    return (*stored)["status"]["capacity"].value("hostport.io/default", "");
  };
  const auto becomes = [&](const std::string& wanted) {
    waitUntil([&] { return capacity() == wanted; });
    return capacity();
  };
  EXPECT_EQ(becomes("20"), "20") << agent_->log();  // kSmallPool: 41000-41019
  auto held = holdPortOnHost(nodeNetns(), Transport::kTcp, 41005);
  ASSERT_OK(held);
  EXPECT_EQ(becomes("19"), "19") << agent_->log();
  const auto node = api_->object("/api/v1/nodes/node-1");
  ASSERT_TRUE(node);
  EXPECT_EQ((*node)["status"]["allocatable"]["hostport.io/default"], "19");
  held->reset();
  EXPECT_EQ(becomes("20"), "20");
}

TEST_F(AgentPublicationTest, AddGoesOnWhileTheApiServerDoesNotAnswer) {
  ASSERT_NO_FATAL_FAILURE(startApiServer());
  // The pod's PATCH hangs for 20 s: ADD must not wait for it.
  api_->injectFault(FakeKubeFault::slow(20s).on("/api/v1/namespaces/").forMethod("PATCH"));
  ASSERT_NO_FATAL_FAILURE(startPublishingAgent("capacitySeconds: 0\n"));
  Pod* pod = podInCluster("gs-4");
  ASSERT_NE(pod, nullptr);
  ASSERT_OK(node().add(*pod, withAgent("web=8080")));
  EXPECT_NE(grantedPort(*pod, "web", PortProtocol::kTcp), 0);
  // ADD has returned. Once the PATCH has reached the fake, it is still unanswered: ADD did not
  // wait for the publication.
  const auto patch = [&]() -> std::optional<kube::FakeKubeRequest> {
    for (const auto& request : api_->requests()) {
      if (request.method == "PATCH") return request;
    }
    return std::nullopt;
  };
  waitUntil([&] { return patch().has_value(); });
  ASSERT_TRUE(patch()) << agent_->log();
  EXPECT_EQ(patch()->status, 0u) << "answered before ADD returned";
}

TEST_F(AgentPublicationTest, AddSucceedsWhileTheApiServerIsDown) {
  ASSERT_NO_FATAL_FAILURE(startApiServer());
  ASSERT_NO_FATAL_FAILURE(startPublishingAgent("capacitySeconds: 0\n"));
  api_.reset();  // nothing listens on its port any more
  Pod* pod = addAgentPod("gs-5", "web=8080");
  ASSERT_NE(pod, nullptr);
  EXPECT_NE(grantedPort(*pod, "web", PortProtocol::kTcp), 0);
  EXPECT_TRUE(agent_->waitForLog("publish.failed")) << agent_->describe();
  EXPECT_TRUE(agent_->waitForLog("reason=unavailable")) << agent_->describe();
}

TEST_F(AgentPublicationTest, WatchesThePodsOfItsNodeAndNoOther) {
  ASSERT_NO_FATAL_FAILURE(startApiServer());
  ASSERT_NO_FATAL_FAILURE(putPodOn("mine-0", kNode));
  ASSERT_NO_FATAL_FAILURE(putPodOn("other-0", "node-2"));
  ASSERT_NO_FATAL_FAILURE(startPublishingAgent("capacitySeconds: 0\n"));
  EXPECT_TRUE(agent_->waitForLog("kube.watch_listed pods=1")) << agent_->describe();
  EXPECT_TRUE(metricsShow("hostport_node_pods 1")) << agent_->describe();
  ASSERT_TRUE(waitUntil([&] { return api_->openWatches() == 1; })) << agent_->describe();
  ASSERT_NO_FATAL_FAILURE(putPodOn("mine-1", kNode));
  ASSERT_NO_FATAL_FAILURE(putPodOn("other-1", "node-2"));
  EXPECT_TRUE(metricsShow("hostport_node_pods 2")) << agent_->describe();
  EXPECT_TRUE(
      metricsShow(R"(hostport_kube_watch_events_total{collection="/api/v1/pods",type="ADDED"} 1)"));
  api_->deleteObject(podPath("mine-0"));
  EXPECT_TRUE(metricsShow("hostport_node_pods 1")) << agent_->describe();
  for (const auto& request : api_->requests()) {
    if (request.path != "/api/v1/pods") continue;
    EXPECT_THAT(request.target, HasSubstr("fieldSelector=spec.nodeName%3Dnode-1"))
        << request.target;
  }
}

TEST_F(AgentPublicationTest, WithWatchPodsOffThereIsNoWatch) {
  ASSERT_NO_FATAL_FAILURE(startApiServer());
  ASSERT_NO_FATAL_FAILURE(startPublishingAgent("capacitySeconds: 0\nwatchPods: false\n"));
  ASSERT_TRUE(agent_->waitForLog("kube.publication_on")) << agent_->describe();
  EXPECT_THAT(agent_->runLog(), HasSubstr("watch_pods=false"));
  ASSERT_OK_AND_ASSIGN(const std::string metrics, client().getText("/metrics"));
  EXPECT_THAT(metrics, Not(HasSubstr("hostport_node_pods")));
  EXPECT_THAT(metrics, Not(HasSubstr("hostport_kube_watch_")));
}

TEST_F(AgentPublicationTest, AHostNetworkPodGetsItsPortsLeasedPublishedAndReleased) {
  ASSERT_NO_FATAL_FAILURE(startApiServer());
  ASSERT_NO_FATAL_FAILURE(startPublishingAgent("capacitySeconds: 0\n"));
  ASSERT_TRUE(agent_->waitForLog("kube.watch_listed")) << agent_->describe();
  ASSERT_NO_FATAL_FAILURE(putHostNetworkPod("relay-0", "uid-relay-0", "game/udp, rtp*4/udp"));
  const auto lease = hostNetworkLease("uid-relay-0");
  ASSERT_TRUE(lease.has_value()) << agent_->describe();
  EXPECT_EQ(lease->pod.name, "relay-0");
  EXPECT_FALSE(lease->forwarding.has_value()) << "the pod binds the port itself";
  ASSERT_EQ(lease->ports.size(), 2u);
  EXPECT_EQ(lease->ports[1].count, 4);
  // Published on the pod like any other: allocated-<name>, and no containerPort.
  const auto annotations = annotationsOnceSet("relay-0", "hostport.io/assigned");
  ASSERT_FALSE(annotations.is_null()) << agent_->describe();
  EXPECT_EQ(annotations["hostport.io/allocated-game"], std::to_string(lease->ports[0].hostPort));
  const auto assigned =
      nlohmann::json::parse(annotations["hostport.io/assigned"].get<std::string>());
  EXPECT_FALSE(assigned["ports"]["game"].contains("containerPort")) << assigned.dump();
  EXPECT_EQ(assigned["ports"]["rtp"]["count"], 4);

  // A change the agent reads (its phase) asks nothing again: the lease is held. Another pod's
  // grant, asked after it, shows the change was heard.
  ASSERT_NO_FATAL_FAILURE(
      putHostNetworkPod("relay-0", "uid-relay-0", "game/udp, rtp*4/udp", "Pending"));
  ASSERT_NO_FATAL_FAILURE(putHostNetworkPod("relay-2", "uid-relay-2", "game/udp"));
  // Grants are logged once durable, in the order asked: relay-2's comes after any of relay-0's.
  ASSERT_TRUE(agent_->waitForLog("alloc.granted key=hostnetwork-uid-relay-2/"))
      << agent_->describe();
  const std::string log = agent_->runLog();
  std::size_t grants = 0;
  for (auto at = log.find("alloc.granted key=hostnetwork-uid-relay-0/"); at != std::string::npos;
       at = log.find("alloc.granted key=hostnetwork-uid-relay-0/", at + 1)) {
    ++grants;
  }
  EXPECT_EQ(grants, 1u) << log;

  // Finished: the ports are free again.
  ASSERT_NO_FATAL_FAILURE(
      putHostNetworkPod("relay-0", "uid-relay-0", "game/udp, rtp*4/udp", "Succeeded"));
  EXPECT_FALSE(hostNetworkLease("uid-relay-0", false).has_value()) << agent_->describe();
  EXPECT_TRUE(agent_->waitForLog("via=pod_gone")) << agent_->describe();

  // Another, deleted from the API: released too.
  ASSERT_NO_FATAL_FAILURE(putHostNetworkPod("relay-1", "uid-relay-1", "game/udp"));
  ASSERT_TRUE(hostNetworkLease("uid-relay-1").has_value()) << agent_->describe();
  api_->deleteObject(podPath("relay-1"));
  EXPECT_FALSE(hostNetworkLease("uid-relay-1", false).has_value()) << agent_->describe();
}

TEST_F(AgentPublicationTest, AHostNetworkPodOfAClusterPoolIsLeasedThePortsItsClaimNames) {
  ASSERT_NO_FATAL_FAILURE(startApiServer());
  ASSERT_NO_FATAL_FAILURE(
      startPublishingAgent("capacitySeconds: 0\npools:\n  default:\n    ranges: [\"41000-41019\"]\n"
                           "  global:\n    ranges: [\"41100-41119\"]\n    scope: cluster\n"));
  ASSERT_TRUE(agent_->waitForLog("kube.watch_listed")) << agent_->describe();
  // As the admission server leaves it: the claims as hostPort == containerPort.
  const nlohmann::json ports = {
      {{"containerPort", 41113}, {"hostPort", 41113}, {"protocol", "UDP"}},
      {{"containerPort", 41105}, {"hostPort", 41105}, {"protocol", "UDP"}},
      {{"containerPort", 41106}, {"hostPort", 41106}, {"protocol", "UDP"}}};
  ASSERT_OK(api_->putObject(
      podPath("arena-0"),
      {{"apiVersion", "v1"},
       {"kind", "Pod"},
       {"metadata",
        {{"uid", "uid-arena-0"},
         {"annotations",
          {{"hostport.io/ports", "game/udp, rtp*2/udp"}, {"hostport.io/pool", "global"}}}}},
       {"spec",
        {{"nodeName", kNode},
         {"hostNetwork", true},
         {"containers", {{{"name", "server"}, {"ports", ports}}}}}},
       {"status", {{"phase", "Running"}}}}));
  const auto lease = hostNetworkLease("uid-arena-0");
  ASSERT_TRUE(lease.has_value()) << agent_->describe();
  ASSERT_EQ(lease->ports.size(), 2u);
  EXPECT_EQ(lease->ports[0].name, "game");
  EXPECT_EQ(lease->ports[0].hostPort, 41113);
  EXPECT_EQ(lease->ports[1].name, "rtp");
  EXPECT_EQ(lease->ports[1].hostPort, 41105);
  EXPECT_EQ(lease->ports[1].count, 2);

  // Without its claim (no admission): refused, told on the pod, nothing leased.
  ASSERT_OK(api_->putObject(
      podPath("stray-1"),
      {{"apiVersion", "v1"},
       {"kind", "Pod"},
       {"metadata",
        {{"uid", "uid-stray-1"},
         {"annotations", {{"hostport.io/ports", "game/udp"}, {"hostport.io/pool", "global"}}}}},
       {"spec",
        {{"nodeName", kNode}, {"hostNetwork", true}, {"containers", nlohmann::json::array()}}},
       {"status", {{"phase", "Running"}}}}));
  EXPECT_TRUE(agent_->waitForLog("asks cluster pool \\\"global\\\"")) << agent_->describe();
  EXPECT_FALSE(hostNetworkLease("uid-stray-1", false).has_value());
}

TEST_F(AgentPublicationTest, AHostNetworkPodWithAContainerPortIsToldTheRightForm) {
  ASSERT_NO_FATAL_FAILURE(startApiServer());
  ASSERT_NO_FATAL_FAILURE(startPublishingAgent("capacitySeconds: 0\n"));
  ASSERT_TRUE(agent_->waitForLog("kube.watch_listed")) << agent_->describe();
  ASSERT_NO_FATAL_FAILURE(putHostNetworkPod("relay-0", "uid-relay-0", "game=7777/udp"));
  EXPECT_TRUE(agent_->waitForLog("alloc.host_network_refused")) << agent_->describe();
  EXPECT_THAT(agent_->runLog(), HasSubstr("a hostNetwork pod names no containerPort"));
  ASSERT_OK_AND_ASSIGN(const auto leases, client().list("", ""));
  EXPECT_TRUE(leases.empty());
  // No sandbox failed, so the kubelet says nothing: the agent's Warning Event does, once.
  const auto events = eventsAbout("relay-0");
  ASSERT_EQ(events.size(), 1u) << agent_->describe();
  EXPECT_EQ(events[0]["type"], "Warning");
  EXPECT_EQ(events[0]["reason"], "HostPortsNotGranted");
  EXPECT_EQ(events[0]["involvedObject"]["uid"], "uid-relay-0");
  EXPECT_THAT(events[0]["message"].get<std::string>(), HasSubstr("names no containerPort"));
  EXPECT_TRUE(api_->object("/api/v1/namespaces/default/events/" +
                           events[0]["metadata"]["name"].get<std::string>()))
      << "stored by the API server";
}

TEST_F(AgentPublicationTest, AHostNetworkPodThePoolCannotServeGetsAWarningEvent) {
  ASSERT_NO_FATAL_FAILURE(startApiServer());
  ASSERT_NO_FATAL_FAILURE(startPublishingAgent("capacitySeconds: 0\n"));
  ASSERT_NO_FATAL_FAILURE(putHostNetworkPod("relay-0", "uid-relay-0", "rtp*100/udp"));
  const auto events = eventsAbout("relay-0");
  ASSERT_EQ(events.size(), 1u) << agent_->describe();
  EXPECT_EQ(events[0]["reason"], "HostPortsNotGranted");
  EXPECT_THAT(events[0]["message"].get<std::string>(), HasSubstr("hostport.io/ports could not"));
}

TEST_F(AgentPublicationTest, APodThatTakesMorePortsThanItRequestsGetsAWarningEventOnce) {
  ASSERT_NO_FATAL_FAILURE(startApiServer());
  ASSERT_NO_FATAL_FAILURE(startPublishingAgent("capacitySeconds: 0\n"));
  // Created with its request (a pod's resources are set at creation): on this node, asking one
  // port of the default pool where it takes two.
  auto created = node().createPod("gs-3");
  ASSERT_OK(created);
  Pod* pod = *created;
  nlohmann::json object = {{"apiVersion", "v1"},
                           {"kind", "Pod"},
                           {"metadata", {{"uid", pod->uid}}},
                           {"spec",
                            {{"nodeName", kNode},
                             {"containers",
                              {{{"name", "main"},
                                {"resources",
                                 {{"requests", {{"hostport.io/default", "1"}}},
                                  {"limits", {{"hostport.io/default", "1"}}}}}}}}}},
                           {"status", {{"phase", "Running"}}}};
  ASSERT_OK(api_->putObject(podPath("gs-3"), object));
  ASSERT_OK(node().add(*pod, withAgent("web=8080, voice=5000/udp")));
  const auto events = eventsAbout("gs-3");
  ASSERT_EQ(events.size(), 1u) << agent_->describe();
  EXPECT_EQ(events[0]["reason"], "HostPortsNotRequested");
  EXPECT_THAT(events[0]["message"].get<std::string>(),
              HasSubstr("takes 2 ports of pool default but requests 1 hostport.io/default"));
  EXPECT_TRUE(agent_->waitForLog("alloc.request_below_ports")) << agent_->describe();
  // The pod changing in what the agent reads tells it nothing new.
  object["metadata"]["annotations"] = {{"hostport.io/sticky", "false"}};
  ASSERT_OK(api_->putObject(podPath("gs-3"), object));
  std::this_thread::sleep_for(500ms);
  EXPECT_EQ(eventsAbout("gs-3").size(), 1u);
}

TEST_F(AgentPublicationTest, ALeaseWhosePodTheApiDeletedIsReleasedAfterTheGraceWhileItsNetnsStays) {
  ASSERT_NO_FATAL_FAILURE(startApiServer());
  ASSERT_NO_FATAL_FAILURE(startPublishingAgent("capacitySeconds: 0\nvanishedGraceSeconds: 1\n"));
  ASSERT_TRUE(agent_->waitForLog("kube.watch_listed")) << agent_->describe();
  Pod* pod = podInCluster("gs-4");
  ASSERT_NE(pod, nullptr);
  ASSERT_OK(node().add(*pod, withAgent("web=8080")));
  ASSERT_TRUE(leaseOf(*pod).has_value());
  // Being deleted, the pod still runs: its ports stay.
  nlohmann::json terminating = *api_->object(podPath("gs-4"));
  terminating["metadata"]["deletionTimestamp"] = "2026-11-29T12:00:00Z";
  ASSERT_OK(api_->putObject(podPath("gs-4"), terminating));
  std::this_thread::sleep_for(2500ms);  // past the grace
  ASSERT_TRUE(leaseOf(*pod).has_value()) << agent_->describe();
  // Gone from the API, no DEL (a kubelet that died), the sandbox's netns still there.
  api_->deleteObject(podPath("gs-4"));
  ASSERT_TRUE(waitUntil([&] { return !leaseOf(*pod).has_value(); })) << agent_->describe();
  EXPECT_TRUE(agent_->waitForLog("alloc.pod_deleted")) << agent_->describe();
  const std::string log = agent_->runLog();
  EXPECT_THAT(log, HasSubstr("api=left_view"));
  EXPECT_THAT(log, HasSubstr("netns=alive"));
  // Logged once the release is durable, which may be after the lease left the list.
  EXPECT_TRUE(agent_->waitForLog("via=pod_gone")) << agent_->describe();
}

TEST_F(AgentPublicationTest, ALeaseWhosePodWasDeletedWhileTheAgentWasDownIsReleasedAfterTheList) {
  ASSERT_NO_FATAL_FAILURE(startApiServer());
  ASSERT_NO_FATAL_FAILURE(startPublishingAgent("capacitySeconds: 0\nvanishedGraceSeconds: 1\n"));
  Pod* pod = podInCluster("gs-5");
  ASSERT_NE(pod, nullptr);
  ASSERT_OK(node().add(*pod, withAgent("web=8080")));
  ASSERT_OK(agent_->stop());
  api_->deleteObject(podPath("gs-5"));
  ASSERT_OK(agent_->restart());
  ASSERT_TRUE(waitUntil([&] { return !leaseOf(*pod).has_value(); })) << agent_->describe();
  EXPECT_TRUE(agent_->waitForLog("api=not_listed")) << agent_->describe();
}

TEST_F(AgentPublicationTest, ALeaseWhosePodTheWatchHasNotSeenIsKept) {
  ASSERT_NO_FATAL_FAILURE(startApiServer());
  ASSERT_NO_FATAL_FAILURE(startPublishingAgent("capacitySeconds: 0\nvanishedGraceSeconds: 1\n"));
  ASSERT_TRUE(agent_->waitForLog("kube.watch_listed")) << agent_->describe();
  // Granted after the last list, for a pod the watch has not brought (here: none in the API): no
  // proof it was deleted, however long it lasts.
  auto pod = node().createPod("gs-6");
  ASSERT_OK(pod);
  ASSERT_OK(node().add(**pod, withAgent("web=8080")));
  std::this_thread::sleep_for(2500ms);
  EXPECT_TRUE(leaseOf(**pod).has_value()) << agent_->describe();
  EXPECT_THAT(agent_->runLog(), Not(HasSubstr("alloc.pod_deleted")));
}

TEST_F(AgentPublicationTest, AHostNetworkLeaseWhosePodWentWhileTheAgentWasDownIsReleased) {
  ASSERT_NO_FATAL_FAILURE(startApiServer());
  ASSERT_NO_FATAL_FAILURE(startPublishingAgent("capacitySeconds: 0\n"));
  ASSERT_NO_FATAL_FAILURE(putHostNetworkPod("relay-0", "uid-relay-0", "game/udp"));
  ASSERT_TRUE(hostNetworkLease("uid-relay-0").has_value()) << agent_->describe();
  ASSERT_OK(agent_->stop());
  api_->deleteObject(podPath("relay-0"));
  ASSERT_OK(agent_->restart());
  // Recovered from the journal, then released once the first list shows the pod is gone.
  EXPECT_FALSE(hostNetworkLease("uid-relay-0", false).has_value()) << agent_->describe();
  EXPECT_TRUE(agent_->waitForLog("via=pod_gone")) << agent_->describe();
}

/// A caller in the node's netns, as a hostNetwork pod's process is, in `cgroup` (none: a node
/// process).
Result<HttpAnswer> askAsHostNetwork(AgentProcess& agent, const Netns& node, const PodCgroup* cgroup,
                                    const std::string& target) {
  HOSTPORT_TRY(PodCaller caller,
               PodCaller::start(agent.podSocketPath(),
                                {.cgroupProcs = cgroup ? cgroup->procsPath() : std::string(),
                                 .netnsPath = node.path()}));
  return httpGet(caller.socket(), target);
}

TEST_F(AgentPublicationTest, AHostNetworkPodReadsItsPortsFromThePodSocketByItsCgroup) {
  ASSERT_NO_FATAL_FAILURE(startApiServer());
  ASSERT_NO_FATAL_FAILURE(startPublishingAgent("capacitySeconds: 0\n"));
  const std::string uids[] = {"1b4e28ba-2fa1-11d2-883f-0016d3cca427",
                              "2b4e28ba-2fa1-11d2-883f-0016d3cca427"};
  const std::pair<CgroupDriver, const char*> drivers[] = {{CgroupDriver::kSystemd, "systemd"},
                                                          {CgroupDriver::kCgroupfs, "cgroupfs"}};
  for (std::size_t i = 0; i < 2; ++i) {
    SCOPED_TRACE(drivers[i].second);
    const std::string name = "relay-" + std::to_string(i);
    ASSERT_NO_FATAL_FAILURE(putHostNetworkPod(name, uids[i], "game/udp, rtp*2/udp"));
    const auto lease = hostNetworkLease(uids[i]);
    ASSERT_TRUE(lease.has_value()) << agent_->describe();
    ASSERT_OK_AND_ASSIGN(const PodCgroup cgroup, PodCgroup::create(uids[i], drivers[i].first));

    ASSERT_OK_AND_ASSIGN(const auto self,
                         askAsHostNetwork(*agent_, nodeNetns(), &cgroup, "/v1/self"));
    ASSERT_EQ(self.status, 200u) << self.body << agent_->describe();
    const auto body = nlohmann::json::parse(self.body);
    EXPECT_EQ(body["name"], name);
    ASSERT_EQ(body["ports"].size(), 2u) << self.body;
    EXPECT_EQ(body["ports"][0]["hostPort"], lease->ports[0].hostPort);
    EXPECT_FALSE(body["ports"][0].contains("containerPort")) << self.body;
    EXPECT_EQ(body["ports"][1]["count"], 2);
    ASSERT_OK_AND_ASSIGN(const auto game,
                         askAsHostNetwork(*agent_, nodeNetns(), &cgroup, "/v1/self/ports/game"));
    EXPECT_EQ(game.body, std::to_string(lease->ports[0].hostPort) + "\n");
  }

  // A node process, in the same netns and in no pod's cgroup, is told so.
  ASSERT_OK_AND_ASSIGN(const auto node,
                       askAsHostNetwork(*agent_, nodeNetns(), nullptr, "/v1/self"));
  EXPECT_EQ(node.status, 403u) << node.body;
  EXPECT_THAT(node.body, HasSubstr("node_network"));
  // A pod the agent holds no lease for (not hostNetwork, or asking nothing) reads nothing.
  constexpr std::string_view kStranger = "3b4e28ba-2fa1-11d2-883f-0016d3cca427";
  ASSERT_OK_AND_ASSIGN(const PodCgroup stranger,
                       PodCgroup::create(kStranger, CgroupDriver::kSystemd));
  ASSERT_OK_AND_ASSIGN(const auto none,
                       askAsHostNetwork(*agent_, nodeNetns(), &stranger, "/v1/self"));
  EXPECT_EQ(none.status, 403u) << none.body;
  EXPECT_THAT(none.body, HasSubstr("no_lease"));
  EXPECT_THAT(none.body, HasSubstr("hostNetwork pod " + std::string(kStranger)));
  EXPECT_THAT(none.body, Not(HasSubstr("relay-")));
}

TEST_F(AgentPublicationTest, AStaticHostNetworkPodIsKnownByTheUidItsCgroupCarries) {
  ASSERT_NO_FATAL_FAILURE(startApiServer());
  ASSERT_NO_FATAL_FAILURE(startPublishingAgent("capacitySeconds: 0\n"));
  // A static pod's cgroup and sandbox carry the kubelet's hash of its manifest; its mirror in the
  // API has a UID of its own, and names the hash in kubernetes.io/config.mirror.
  constexpr std::string_view kHash = "5b4e28ba2fa111d2883f0016d3cca427";
  ASSERT_OK(api_->putObject(
      podPath("relay-static"),
      {{"apiVersion", "v1"},
       {"kind", "Pod"},
       {"metadata",
        {{"uid", "uid-mirror"},
         {"annotations",
          {{"hostport.io/ports", "game/udp"}, {"kubernetes.io/config.mirror", kHash}}}}},
       {"spec",
        {{"nodeName", kNode}, {"hostNetwork", true}, {"containers", nlohmann::json::array()}}},
       {"status", {{"phase", "Running"}}}}));
  const auto lease = hostNetworkLease(std::string(kHash));
  ASSERT_TRUE(lease.has_value()) << agent_->describe();
  EXPECT_EQ(lease->pod.uid, "uid-mirror") << "published on the mirror, with its UID";
  ASSERT_OK_AND_ASSIGN(const PodCgroup cgroup, PodCgroup::create(kHash, CgroupDriver::kCgroupfs));
  ASSERT_OK_AND_ASSIGN(const auto game,
                       askAsHostNetwork(*agent_, nodeNetns(), &cgroup, "/v1/self/ports/game"));
  EXPECT_EQ(game.status, 200u) << game.body;
  EXPECT_EQ(game.body, std::to_string(lease->ports[0].hostPort) + "\n");
  EXPECT_FALSE(annotationsOnceSet("relay-static", "hostport.io/assigned").is_null());
}

TEST_F(AgentPublicationTest, AHostNetworkPodThatAsksFirstIsAnsweredOnceTheWatchLeasesIt) {
  ASSERT_NO_FATAL_FAILURE(startApiServer());
  ASSERT_NO_FATAL_FAILURE(startPublishingAgent("capacitySeconds: 0\n"));
  ASSERT_TRUE(agent_->waitForLog("kube.watch_listed")) << agent_->describe();
  constexpr std::string_view kUid = "4b4e28ba-2fa1-11d2-883f-0016d3cca427";
  ASSERT_OK_AND_ASSIGN(const PodCgroup cgroup, PodCgroup::create(kUid, CgroupDriver::kSystemd));
  // The pod's process starts before the agent has seen the pod, as it may at its first start.
  ASSERT_OK_AND_ASSIGN(PodCaller caller, PodCaller::start(agent_->podSocketPath(),
                                                          {.cgroupProcs = cgroup.procsPath(),
                                                           .netnsPath = nodeNetns().path()}));
  std::optional<Result<HttpAnswer>> answer;
  std::thread asker([&] { answer = httpGet(caller.socket(), "/v1/self/ports/game?wait=60s"); });
  const bool parked = agent_->waitForLog("server.pod_waiting", 30s);
  putHostNetworkPod("relay-0", std::string(kUid), "game/tcp");
  asker.join();
  ASSERT_TRUE(parked) << agent_->describe();
  const auto lease = hostNetworkLease(std::string(kUid));
  ASSERT_TRUE(lease.has_value()) << agent_->describe();
  ASSERT_TRUE(answer.has_value());
  ASSERT_OK(*answer);
  EXPECT_EQ((*answer)->status, 200u) << (*answer)->body;
  EXPECT_EQ((*answer)->body, std::to_string(lease->ports[0].hostPort) + "\n");
}

// A hostNetwork pod's ports come from the watch, not from an ADD. Its hostport.io volume, which
// the kubelet mounts before it starts the containers, asks for them when the watch holds none:
// here the pool's one port was busy on the host when the watch asked, and is free when the
// kubelet mounts the volume. The files have the port when the publish is answered.
TEST_F(AgentPublicationTest, AHostNetworkPodsVolumeHoldsItsPortsAtItsFirstStart) {
  ASSERT_NO_FATAL_FAILURE(startApiServer());
  const TempDir kubeletDir;
  ASSERT_OK_AND_ASSIGN(
      agent_, AgentProcess::start(
                  HOSTPORT_AGENT_PATH, nodeNetns(),
                  {.portRange = std::to_string(kPoolFirst),
                   .configYaml = "capacitySeconds: 0\n",
                   .extraArgs = {"--kubeconfig", kubeconfig_, "--node-name", kNode, "--csi-driver",
                                 "true", "--kubelet-dir", kubeletDir.path()}}));
  ASSERT_TRUE(agent_->waitForLog("kube.watch_listed")) << agent_->describe();
  constexpr std::string_view kUid = "5b4e28ba-2fa1-11d2-883f-0016d3cca427";
  {
    ASSERT_OK_AND_ASSIGN(const UniqueFd held,
                         holdPortOnHost(nodeNetns(), Transport::kUdp, kPoolFirst));
    putHostNetworkPod("relay-0", std::string(kUid), "relay/udp");
    ASSERT_TRUE(agent_->waitForLog("alloc.host_network_refused")) << agent_->describe();
  }
  // The port is free now; nothing changed in the pod, so the watch does not ask again.
  FakeKubeletCsi kubelet(kubeletDir.path());
  pluginregistration::PluginInfo info;
  ASSERT_TRUE(
      kubelet.registerPlugin(agent::csi::registrationSocketPath(kubeletDir.path()), &info).ok());
  kubelet.connect(info.endpoint());
  const FakeCsiPod pod{kNamespace, "relay-0", std::string(kUid)};
  const auto published = kubelet.publish(pod, "ports");
  ASSERT_TRUE(published.ok()) << published.error_message() << agent_->describe();
  EXPECT_EQ(readText(kubelet.targetOf(pod, "ports") / agent::csi::kPortsEnvFile),
            "HOSTPORT_RELAY=" + std::to_string(kPoolFirst) + "\n")
      << agent_->describe();
}

}  // namespace
}  // namespace hostport::test
