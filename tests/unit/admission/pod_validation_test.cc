// The validating webhook's decisions: what the node would refuse of a pod alone is refused at
// creation in the node's words; what only the node can know is not judged.
#include "admission/pod_validation.h"

#include <gtest/gtest.h>

#include "tests/support/result_assertions.h"
#include "tests/unit/admission/review_samples.h"

namespace hostport::admission {
namespace {

using nlohmann::json;

class PodValidationTest : public ::testing::Test {
 protected:
  AdmissionResponse validate(const json& review) {
    auto request = decodeAdmissionReview(review.dump());
    EXPECT_OK(request);
    return validatePod(*request, pools_);
  }
  AdmissionResponse create(json annotations, json containers = nullptr) {
    json pod = samples::samplePod(std::move(annotations));
    if (!containers.is_null()) pod["spec"]["containers"] = std::move(containers);
    return validate(samples::podReview(pod));
  }

  agent::core::Allocator pools_ = samples::samplePools();
};

TEST_F(PodValidationTest, AllowsAWellFormedRequestAndEchoesTheUid) {
  const auto answer =
      create({{"hostport.io/ports", "game=7000/udp"}, {"hostport.io/pool", "games"}});
  EXPECT_TRUE(answer.allowed) << answer.message;
  EXPECT_EQ(answer.uid, "705ab4f5-6393-11e8-b7cc-42010a800002");
  EXPECT_TRUE(answer.warnings.empty());
  EXPECT_TRUE(answer.patch.empty());
}

TEST_F(PodValidationTest, RefusesAMalformedAnnotationInThePluginsWords) {
  const auto answer = create({{"hostport.io/ports", "rtp=20000-19000/udp"}});
  EXPECT_FALSE(answer.allowed);
  EXPECT_EQ(answer.code, 400);
  EXPECT_EQ(answer.message,
            "annotation hostport.io/ports: bad entry \"rtp=20000-19000/udp\": range end 19000 is "
            "below its start 20000");
  const auto sticky = create({{"hostport.io/ports", "a=80"}, {"hostport.io/sticky", "yes"}});
  EXPECT_FALSE(sticky.allowed);
  EXPECT_NE(sticky.message.find("annotation hostport.io/sticky"), std::string::npos)
      << sticky.message;
}

TEST_F(PodValidationTest, RefusesWhatThePoolsRefuseInTheAgentsWords) {
  const auto unknown = create({{"hostport.io/ports", "a=80"}, {"hostport.io/pool", "media"}});
  EXPECT_EQ(unknown.code, 400);
  EXPECT_EQ(unknown.message, "unknown pool \"media\"");

  const auto protocol = create({{"hostport.io/ports", "a=80/tcp"}, {"hostport.io/pool", "games"}});
  EXPECT_EQ(protocol.code, 400);
  EXPECT_EQ(protocol.message, "port \"a\" asks for tcp but pool \"games\" allows only udp");

  json review = samples::podReview(
      samples::samplePod({{"hostport.io/ports", "a=7000/udp"}, {"hostport.io/pool", "games"}}));
  review["request"]["namespace"] = "web";
  const auto outsider = validate(review);
  EXPECT_FALSE(outsider.allowed);
  EXPECT_EQ(outsider.code, 403);
  EXPECT_EQ(outsider.message,
            "pool \"games\" does not allow namespace \"web\" (namespaces: games-*)");

  const auto greedy =
      create({{"hostport.io/ports", "rtp=7000-7016/udp"}, {"hostport.io/pool", "games"}});
  EXPECT_EQ(greedy.code, 403);
  EXPECT_EQ(greedy.message,
            "pool \"games\" allows at most 16 ports per pod: pod \"games-eu/game-0\" holds 0 and "
            "asks for 17 (maxPortsPerPod)");
}

TEST_F(PodValidationTest, AStaticHostPortInAPoolsRangeAnswersToThatPool) {
  json containers = json::array(
      {{{"name", "app"},
        {"ports", {{{"containerPort", 80}, {"hostPort", 30080}, {"protocol", "TCP"}}}}}});
  // The default pool serves the request; the port lies in games', which allows udp alone and
  // games-* namespaces: the namespace passes, and a static claim's protocol is not a pool's to
  // judge (the agent checks it against the host).
  const auto answer = create(json::object(), containers);
  EXPECT_TRUE(answer.allowed) << answer.message;
  json review = samples::podReview(samples::samplePod());
  review["request"]["object"]["spec"]["containers"] = containers;
  review["request"]["namespace"] = "web";
  const auto outsider = validate(review);
  EXPECT_EQ(outsider.code, 403);
  EXPECT_EQ(outsider.message,
            "pool \"games\" does not allow namespace \"web\" (namespaces: games-*)");
}

TEST_F(PodValidationTest, NeverJudgesWhatOnlyTheNodeKnows) {
  // 16 ports is the pod quota: another pod holding ports, or the host's sockets, are the node's.
  const auto answer =
      create({{"hostport.io/ports", "rtp=7000-7015/udp"}, {"hostport.io/pool", "games"}});
  EXPECT_TRUE(answer.allowed) << answer.message;
  // A static hostPort outside every pool is the node's to check against its sockets.
  const auto outside = create(
      json::object(),
      json::array({{{"name", "app"}, {"ports", {{{"containerPort", 80}, {"hostPort", 8080}}}}}}));
  EXPECT_TRUE(outside.allowed) << outside.message;
}

TEST_F(PodValidationTest, RefusesAResourceContainerThatIsNotThere) {
  const auto answer =
      create({{"hostport.io/ports", "a=80"}, {"hostport.io/resource-container", "sidecar"}});
  EXPECT_EQ(answer.code, 400);
  EXPECT_EQ(answer.message,
            "annotation hostport.io/resource-container: \"sidecar\" names no container of the pod "
            "(its containers: app)");
}

TEST_F(PodValidationTest, AHostNetworkPodIsJudgedInItsOwnForm) {
  json pod = samples::samplePod({{"hostport.io/ports", "a=80"}});
  pod["spec"]["hostNetwork"] = true;
  const auto refused = validate(samples::podReview(pod));
  EXPECT_FALSE(refused.allowed);
  EXPECT_EQ(refused.code, 400);
  EXPECT_EQ(refused.message,
            "annotation hostport.io/ports: bad entry \"a=80\": a hostNetwork pod names no "
            "containerPort (its process binds the host port itself): write \"a\", or \"a*N\" "
            "for a block of N ports");
  pod["metadata"]["annotations"]["hostport.io/ports"] = "a, rtp*4/udp";
  const auto allowed = validate(samples::podReview(pod));
  EXPECT_TRUE(allowed.allowed) << allowed.message;
  EXPECT_TRUE(allowed.warnings.empty());
  // The pool's rules hold for it as for any pod: 20 ports alone exceed games' 16 a pod.
  pod["metadata"]["annotations"] = {{"hostport.io/ports", "rtp*20/udp"},
                                    {"hostport.io/pool", "games"}};
  const auto overQuota = validate(samples::podReview(pod));
  EXPECT_FALSE(overQuota.allowed);
  EXPECT_EQ(overQuota.code, 403);
}

TEST_F(PodValidationTest, AnUpdateThatChangesARequestIsAllowedWithAWarning) {
  const json before = samples::samplePod({{"hostport.io/ports", "a=80"}});
  const json after = samples::samplePod({{"hostport.io/ports", "a=81"}, {"hostport.io/pool", "x"}});
  const auto answer = validate(samples::podReview(after, "UPDATE", before));
  EXPECT_TRUE(answer.allowed);
  ASSERT_EQ(answer.warnings.size(), 1u);
  EXPECT_EQ(answer.warnings[0],
            "hostport.io/pool, hostport.io/ports changed: ports are decided when the pod's sandbox "
            "is created, so this pod keeps the ones it has; a new pod gets the change");
}

TEST_F(PodValidationTest, TheAgentsOwnPublicationPassesWithoutAWord) {
  const json before = samples::samplePod({{"hostport.io/ports", "a=80"}});
  const json after = samples::samplePod({{"hostport.io/ports", "a=80"},
                                         {"hostport.io/allocated-a", "40000"},
                                         {"hostport.io/assigned", "{}"}});
  const auto answer = validate(samples::podReview(after, "UPDATE", before));
  EXPECT_TRUE(answer.allowed);
  EXPECT_TRUE(answer.warnings.empty());
}

TEST_F(PodValidationTest, OtherKindsAndOperationsPassUntouched) {
  json review = samples::podReview(samples::samplePod({{"hostport.io/ports", "bad"}}));
  review["request"]["operation"] = "DELETE";
  EXPECT_TRUE(validate(review).allowed);
  review = samples::podReview(samples::samplePod({{"hostport.io/ports", "bad"}}));
  review["request"]["subResource"] = "status";
  EXPECT_TRUE(validate(review).allowed);
}

TEST_F(PodValidationTest, APodThatCannotBeReadIsRefusedNamingTheField) {
  json pod = samples::samplePod();
  pod["spec"]["containers"][0]["ports"] = {{{"containerPort", 70000}}};
  const auto answer = validate(samples::podReview(pod));
  EXPECT_EQ(answer.code, 400);
  EXPECT_EQ(answer.message,
            "object.spec.containers[0].ports[0].containerPort: 70000 must be an integer 1..65535");
}

}  // namespace
}  // namespace hostport::admission
