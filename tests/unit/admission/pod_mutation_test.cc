// The mutating webhook's patches: applied to the pod they were made for, each result is what the
// scheduler and the node need, a second pass changes nothing (reinvocationPolicy IfNeeded), and
// every patched pod passes the Kubernetes schema (tests/manifests/validate.cjs).
#include "admission/pod_mutation.h"

#include <gtest/gtest.h>

#include <fstream>

#include "tests/support/result_assertions.h"
#include "tests/support/subprocess.h"
#include "tests/support/temp_dir.h"
#include "tests/unit/admission/review_samples.h"

namespace hostport::admission {
namespace {

using nlohmann::json;

class PodMutationTest : public ::testing::Test {
 protected:
  /// The pod after the answer's patch, and the answer.
  std::pair<json, AdmissionResponse> mutate(const json& pod, const MutationOptions& options = {}) {
    auto request = decodeAdmissionReview(samples::podReview(pod).dump());
    EXPECT_OK(request);
    auto answer = mutatePod(*request, pools_, options);
    EXPECT_TRUE(answer.allowed);
    json patched = pod.patch(answer.patch);
    patched_.push_back(patched);
    return {std::move(patched), std::move(answer)};
  }

  /// Every patched pod goes through the schema check once the test is done.
  void TearDown() override {
    if (patched_.empty() || HasFailure()) return;
    hostport::test::TempDir dir;
    const std::string file = dir.path() + "/patched-pods.yaml";
    std::ofstream out(file);
    for (std::size_t i = 0; i < patched_.size(); ++i) {
      json pod = patched_[i];
      pod["metadata"]["name"] = "patched-" + std::to_string(i);
      out << "---\n" << pod.dump(2) << "\n";
    }
    out.close();
    hostport::test::Command command;
    command.argv = {"/usr/bin/node", HOSTPORT_VALIDATE_CJS, file};
    ASSERT_OK_AND_ASSIGN(const auto checked, hostport::test::runCommand(command));
    EXPECT_TRUE(checked.ok()) << checked.describe();
    EXPECT_NE(checked.out.find(std::to_string(patched_.size()) + " objects, 0 invalid"),
              std::string::npos)
        << checked.describe();
  }

  static json requestsOf(const json& pod, std::size_t container = 0) {
    return pod["spec"]["containers"][container]["resources"].value("requests", json::object());
  }
  static json limitsOf(const json& pod, std::size_t container = 0) {
    return pod["spec"]["containers"][container]["resources"].value("limits", json::object());
  }

  agent::core::Allocator pools_ = samples::samplePools();
  std::vector<json> patched_;
};

TEST_F(PodMutationTest, AsksTheSchedulerForThePortsThePodTakesFromItsPool) {
  const json pod = samples::samplePod(
      {{"hostport.io/ports", "rtp=7000-7009/udp, game=7100/udp"}, {"hostport.io/pool", "games"}});
  const auto [patched, answer] = mutate(pod);
  EXPECT_EQ(requestsOf(patched), (json{{"hostport.io/games", "11"}}));
  EXPECT_EQ(limitsOf(patched), (json{{"hostport.io/games", "11"}}));
  EXPECT_TRUE(answer.warnings.empty());
  // The pointer escapes the resource name's slash.
  EXPECT_EQ(answer.patch,
            json::parse(R"([{"op":"add","path":"/spec/containers/0/resources/requests",
                             "value":{"hostport.io/games":"11"}},
                            {"op":"add","path":"/spec/containers/0/resources/limits",
                             "value":{"hostport.io/games":"11"}}])"));
}

TEST_F(PodMutationTest, ASecondPassChangesNothing) {
  const json pod = samples::samplePod({{"hostport.io/ports", "web=8080"}});
  const auto [patched, first] = mutate(pod);
  EXPECT_EQ(requestsOf(patched), (json{{"hostport.io/default", "1"}}));
  const auto [again, second] = mutate(patched);
  EXPECT_TRUE(second.patch.empty()) << second.patch.dump();
  EXPECT_EQ(again, patched);
}

TEST_F(PodMutationTest, CountsAStaticHostPortInThePoolsRanges) {
  json pod = samples::samplePod({{"hostport.io/ports", "web=8080"}});
  pod["spec"]["containers"][0]["ports"] = {{{"containerPort", 80}, {"hostPort", 40500}},
                                           {{"containerPort", 81}, {"hostPort", 8081}}};
  const auto [patched, answer] = mutate(pod);
  EXPECT_EQ(requestsOf(patched), (json{{"hostport.io/default", "2"}}));
}

TEST_F(PodMutationTest, AHostNetworkPodAsksForItsBlockAndNotForItsOwnHostPorts) {
  json pod = samples::samplePod(
      {{"hostport.io/ports", "game/udp, rtp*4/udp"}, {"hostport.io/pool", "games"}});
  pod["spec"]["hostNetwork"] = true;
  // Its own socket's port, which the kubelet requires equal to the containerPort: not hostport's.
  pod["spec"]["containers"][0]["ports"] = {
      {{"containerPort", 30500}, {"hostPort", 30500}, {"protocol", "UDP"}}};
  const auto [patched, answer] = mutate(pod);
  EXPECT_EQ(requestsOf(patched), (json{{"hostport.io/games", "5"}}));
  EXPECT_EQ(limitsOf(patched), (json{{"hostport.io/games", "5"}}));
}

TEST_F(PodMutationTest, AddsToTheResourcesAContainerAlreadyHas) {
  json pod = samples::samplePod({{"hostport.io/ports", "web=8080"}});
  pod["spec"]["containers"][0]["resources"] = {{"requests", {{"cpu", "100m"}}}};
  const auto [patched, answer] = mutate(pod);
  EXPECT_EQ(requestsOf(patched), (json{{"cpu", "100m"}, {"hostport.io/default", "1"}}));
  EXPECT_EQ(limitsOf(patched), (json{{"hostport.io/default", "1"}}));
}

TEST_F(PodMutationTest, CorrectsAWrongAmountWithAWarningAndLeavesARightOneAlone) {
  json pod = samples::samplePod(
      {{"hostport.io/ports", "rtp=7000-7002/udp"}, {"hostport.io/pool", "games"}});
  pod["spec"]["containers"][0]["resources"] = {{"requests", {{"hostport.io/games", "2"}}},
                                               {"limits", {{"hostport.io/games", "3"}}}};
  const auto [patched, answer] = mutate(pod);
  EXPECT_EQ(requestsOf(patched), (json{{"hostport.io/games", "3"}}));
  EXPECT_EQ(limitsOf(patched), (json{{"hostport.io/games", "3"}}));
  ASSERT_EQ(answer.warnings.size(), 1u);
  EXPECT_EQ(answer.warnings[0],
            "container \"app\" requests hostport.io/games: \"2\" corrected to 3, the ports the pod "
            "takes from the pool");
}

TEST_F(PodMutationTest, MovesTheRequestToTheNamedContainerAndDropsAPoolNotAsked) {
  json pod = samples::samplePod(
      {{"hostport.io/ports", "web=8080"}, {"hostport.io/resource-container", "server"}});
  pod["spec"]["containers"][0]["resources"] = {
      {"requests", {{"hostport.io/default", "1"}, {"hostport.io/games", "4"}}},
      {"limits", {{"hostport.io/default", "1"}, {"hostport.io/games", "4"}}}};
  pod["spec"]["containers"].push_back({{"name", "server"}, {"image", "registry.example/s:1"}});
  const auto [patched, answer] = mutate(pod);
  EXPECT_EQ(requestsOf(patched, 0), json::object());
  EXPECT_EQ(limitsOf(patched, 0), json::object());
  EXPECT_EQ(requestsOf(patched, 1), (json{{"hostport.io/default", "1"}}));
  EXPECT_EQ(limitsOf(patched, 1), (json{{"hostport.io/default", "1"}}));
  EXPECT_EQ(answer.warnings.size(), 4u);
}

TEST_F(PodMutationTest, ReadsTheQuantitiesTheApiServerWrites) {
  EXPECT_EQ(parseWholeQuantity("3"), 3u);
  EXPECT_EQ(parseWholeQuantity("2k"), 2000u);
  EXPECT_EQ(parseWholeQuantity("1Ki"), 1024u);
  EXPECT_EQ(parseWholeQuantity("500m"), std::nullopt);
  EXPECT_EQ(parseWholeQuantity("1.5"), std::nullopt);
  EXPECT_EQ(parseWholeQuantity("1e3"), std::nullopt);
  EXPECT_EQ(parseWholeQuantity(""), std::nullopt);
  EXPECT_EQ(parseWholeQuantity("-1"), std::nullopt);
}

TEST_F(PodMutationTest, GivesAnOperatorStylePodItsPortsAnnotation) {
  json pod =
      samples::samplePod({{"hostport.io/enabled", "true"}, {"hostport.io/base-port", "30000"}});
  pod["spec"]["containers"][0]["ports"] = {
      {{"name", "game"}, {"containerPort", 7777}, {"protocol", "UDP"}},
      {{"name", "metrics"}, {"containerPort", 9090}, {"hostPort", 9090}},
      {{"containerPort", 8080}}};
  const auto [patched, answer] = mutate(pod);
  EXPECT_EQ(patched["metadata"]["annotations"]["hostport.io/ports"], "game=7777/udp");
  EXPECT_EQ(requestsOf(patched), (json{{"hostport.io/default", "1"}}));
  ASSERT_EQ(answer.warnings.size(), 1u);
  EXPECT_EQ(answer.warnings[0],
            "hostport.io/base-port is not read: the ranges of the pool (agent.yaml) say where "
            "ports come from");
}

TEST_F(PodMutationTest, LeavesAPodItCannotJudgeForValidationToRefuse) {
  const auto [patched, answer] = mutate(samples::samplePod({{"hostport.io/ports", "web=99999"}}));
  EXPECT_TRUE(answer.patch.empty());
  patched_.clear();  // nothing was patched
}

TEST_F(PodMutationTest, CanLeaveTheResourceRequestsOut) {
  const json pod = samples::samplePod({{"hostport.io/ports", "web=8080"}});
  const auto [patched, answer] = mutate(pod, {.resourceRequests = false});
  EXPECT_TRUE(answer.patch.empty());
}

}  // namespace
}  // namespace hostport::admission
