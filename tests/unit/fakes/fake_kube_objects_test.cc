#include "tests/fakes/fake_kube_objects.h"

#include <gtest/gtest.h>

#include "tests/support/result_assertions.h"

namespace hostport::kube {
namespace {

using nlohmann::json;

constexpr const char* kPod = "/api/v1/namespaces/games/pods/server-0";
constexpr const char* kNode = "/api/v1/nodes/node-a";
constexpr const char* kMerge = "application/merge-patch+json";
constexpr const char* kJsonPatch = "application/json-patch+json";

class FakeKubeObjectsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_OK(objects_.put(kPod, {{"metadata", {{"uid", "uid-1"}}},
                                  {"spec", {{"nodeName", "node-a"}}},
                                  {"status", {{"phase", "Running"}}}}));
    ASSERT_OK(objects_.put(kNode, {{"metadata", json::object()},
                                   {"spec", json::object()},
                                   {"status", {{"capacity", {{"cpu", "4"}}}}}}));
  }

  json stored(std::string_view path) { return objects_.get(path).value_or(json()); }
  std::string version(const char* path) {
    return stored(path)["metadata"]["resourceVersion"].get<std::string>();
  }

  FakeKubeObjects objects_;
};

TEST(KubeObjectPathTest, TakesApartCoreGroupAndNamespacedPaths) {
  const auto pod = parseKubeObjectPath("/api/v1/namespaces/games/pods/server-0/status");
  ASSERT_TRUE(pod);
  EXPECT_EQ(pod->object, "/api/v1/namespaces/games/pods/server-0");
  EXPECT_EQ(pod->resource, "pods");
  EXPECT_EQ(pod->namespace_, "games");
  EXPECT_EQ(pod->name, "server-0");
  EXPECT_TRUE(pod->status);

  const auto node = parseKubeObjectPath("/api/v1/nodes/node-a");
  ASSERT_TRUE(node);
  EXPECT_EQ(node->object, "/api/v1/nodes/node-a");
  EXPECT_EQ(node->namespace_, "");
  EXPECT_FALSE(node->status);

  const auto lease = parseKubeObjectPath("/apis/coordination.k8s.io/v1/namespaces/n/leases/l");
  ASSERT_TRUE(lease);
  EXPECT_EQ(lease->resource, "leases");
  EXPECT_EQ(lease->name, "l");
}

TEST(KubeObjectPathTest, NamesNoObjectForCollectionsOtherSubresourcesAndStrangePaths) {
  EXPECT_FALSE(parseKubeObjectPath("/api/v1/namespaces/games/pods"));
  EXPECT_FALSE(parseKubeObjectPath("/api/v1/nodes"));
  EXPECT_FALSE(parseKubeObjectPath("/api/v1/namespaces/games/pods/p/log"));
  EXPECT_FALSE(parseKubeObjectPath("/api/v1/nodes//status"));
  EXPECT_FALSE(parseKubeObjectPath("/version"));
  EXPECT_FALSE(parseKubeObjectPath("api/v1/nodes/a"));
}

TEST(KubeStatusTest, HasTheShapeOfAKubernetesStatus) {
  EXPECT_EQ(kubeStatus(401, "Unauthorized"), json::parse(R"({"kind":"Status","apiVersion":"v1",
      "metadata":{},"status":"Failure","message":"Unauthorized","reason":"Unauthorized",
      "code":401})"));
  EXPECT_EQ(kubeStatus(422, "x")["reason"], "Invalid");
  EXPECT_EQ(kubeStatus(429, "x")["reason"], "TooManyRequests");
  EXPECT_FALSE(kubeStatus(418, "x").contains("reason"));
}

TEST_F(FakeKubeObjectsTest, PutFillsNameNamespaceUidAndResourceVersion) {
  const json pod = stored(kPod);
  EXPECT_EQ(pod["metadata"]["name"], "server-0");
  EXPECT_EQ(pod["metadata"]["namespace"], "games");
  EXPECT_EQ(pod["metadata"]["uid"], "uid-1");
  EXPECT_TRUE(pod["metadata"]["resourceVersion"].is_string());
  const json node = stored(kNode);
  EXPECT_FALSE(node["metadata"].contains("namespace"));
  EXPECT_EQ(node["metadata"]["uid"].get<std::string>().size(), 36u);  // UUID format
  EXPECT_FALSE(objects_.put("/api/v1/nodes/node-a/status", json::object()));
  EXPECT_FALSE(objects_.put(kNode, json::array()));
}

TEST_F(FakeKubeObjectsTest, GetOfAMissingObjectIsNotFoundWithDetails) {
  const FakeKubeAnswer answer = objects_.serve("GET", "/api/v1/namespaces/games/pods/x", "", "");
  EXPECT_EQ(answer.status, 404u);
  EXPECT_EQ(answer.body["reason"], "NotFound");
  EXPECT_EQ(answer.body["message"], "pods \"x\" not found");
  EXPECT_EQ(answer.body["details"]["name"], "x");
}

TEST_F(FakeKubeObjectsTest, MergePatchAddsAndRemovesKeysAndBumpsResourceVersion) {
  const std::string before = version(kPod);
  FakeKubeAnswer answer =
      objects_.serve("PATCH", kPod, kMerge, R"({"metadata":{"annotations":{"a":"1","b":"2"}}})");
  ASSERT_EQ(answer.status, 200u) << answer.body;
  const std::string between = version(kPod);
  EXPECT_GT(std::stoull(between), std::stoull(before));
  answer = objects_.serve("PATCH", kPod, "application/merge-patch+json; charset=utf-8",
                          R"({"metadata":{"annotations":{"a":null}}})");
  ASSERT_EQ(answer.status, 200u) << answer.body;
  EXPECT_EQ(answer.body["metadata"]["annotations"], json({{"b", "2"}}));
  EXPECT_EQ(answer.body, stored(kPod));
  EXPECT_EQ(stored(kPod)["metadata"]["uid"], "uid-1");
  EXPECT_EQ(std::stoull(version(kPod)), std::stoull(between) + 1);
}

TEST_F(FakeKubeObjectsTest, APatchThatChangesNothingKeepsTheResourceVersion) {
  const std::string patch = R"({"metadata":{"annotations":{"a":"1"}}})";
  ASSERT_EQ(objects_.serve("PATCH", kPod, kMerge, patch).status, 200u);
  const std::string once = version(kPod);
  ASSERT_EQ(objects_.serve("PATCH", kPod, kMerge, patch).status, 200u);
  EXPECT_EQ(version(kPod), once);
}

TEST_F(FakeKubeObjectsTest, JsonPatchAppliesAddReplaceRemoveMoveAndCopyWithEscapedPointers) {
  const FakeKubeAnswer answer = objects_.serve("PATCH", kPod, kJsonPatch, R"([
      {"op":"test","path":"/metadata/uid","value":"uid-1"},
      {"op":"add","path":"/metadata/annotations","value":{}},
      {"op":"add","path":"/metadata/annotations/hostport.io~1assigned","value":"{}"},
      {"op":"add","path":"/metadata/annotations/tilde~0key","value":"t"},
      {"op":"copy","from":"/metadata/annotations/tilde~0key","path":"/metadata/annotations/c"},
      {"op":"move","from":"/metadata/annotations/c","path":"/metadata/annotations/m"},
      {"op":"replace","path":"/spec/nodeName","value":"node-b"},
      {"op":"remove","path":"/metadata/annotations/tilde~0key"}])");
  ASSERT_EQ(answer.status, 200u) << answer.body;
  EXPECT_EQ(stored(kPod)["metadata"]["annotations"],
            json({{"hostport.io/assigned", "{}"}, {"m", "t"}}));
  EXPECT_EQ(stored(kPod)["spec"]["nodeName"], "node-b");
}

TEST_F(FakeKubeObjectsTest, AFailedJsonPatchTestIsInvalidAndChangesNothing) {
  const json before = stored(kPod);
  const FakeKubeAnswer answer = objects_.serve("PATCH", kPod, kJsonPatch, R"([
      {"op":"add","path":"/metadata/annotations","value":{"a":"1"}},
      {"op":"test","path":"/metadata/uid","value":"uid-2"}])");
  EXPECT_EQ(answer.status, 422u);
  EXPECT_EQ(answer.body["reason"], "Invalid");
  EXPECT_EQ(stored(kPod), before);
}

TEST_F(FakeKubeObjectsTest, RemovingAPathThatIsNotThereIsInvalid) {
  const FakeKubeAnswer answer =
      objects_.serve("PATCH", kPod, kJsonPatch, R"([{"op":"remove","path":"/metadata/nope"}])");
  EXPECT_EQ(answer.status, 422u);
}

TEST_F(FakeKubeObjectsTest, MalformedPatchesAreBadRequests) {
  EXPECT_EQ(objects_.serve("PATCH", kPod, kJsonPatch, "{not json").status, 400u);
  EXPECT_EQ(objects_.serve("PATCH", kPod, kJsonPatch, R"({"op":"add"})").status, 400u);
}

TEST_F(FakeKubeObjectsTest, StrategicMergeAndUnknownPatchTypesAreUnsupported) {
  const FakeKubeAnswer answer =
      objects_.serve("PATCH", kPod, "application/strategic-merge-patch+json", "{}");
  EXPECT_EQ(answer.status, 415u);
  EXPECT_EQ(answer.body["reason"], "UnsupportedMediaType");
  EXPECT_EQ(objects_.serve("PATCH", kPod, "application/apply-patch+yaml", "{}").status, 415u);
  EXPECT_EQ(objects_.serve("PATCH", kPod, "", "{}").status, 415u);
}

TEST_F(FakeKubeObjectsTest, AWriteWithAnotherResourceVersionOrUidIsAConflict) {
  const json before = stored(kPod);
  FakeKubeAnswer answer = objects_.serve(
      "PATCH", kPod, kMerge, R"({"metadata":{"resourceVersion":"1","annotations":{"a":"1"}}})");
  EXPECT_EQ(answer.status, 409u);
  EXPECT_EQ(answer.body["reason"], "Conflict");
  answer = objects_.serve("PATCH", kPod, kMerge, R"({"metadata":{"uid":"other"}})");
  EXPECT_EQ(answer.status, 409u);
  EXPECT_EQ(stored(kPod), before);

  const json current = {
      {"metadata", {{"resourceVersion", version(kPod)}, {"labels", {{"l", "v"}}}}}};
  answer = objects_.serve("PATCH", kPod, kMerge, current.dump());
  EXPECT_EQ(answer.status, 200u);
  EXPECT_EQ(stored(kPod)["metadata"]["labels"]["l"], "v");
}

TEST_F(FakeKubeObjectsTest, APatchOfTheMainResourceKeepsTheStatus) {
  const FakeKubeAnswer answer = objects_.serve(
      "PATCH", kNode, kMerge,
      R"({"metadata":{"labels":{"l":"v"}},"status":{"capacity":{"hostport.io/default":"9"}}})");
  ASSERT_EQ(answer.status, 200u) << answer.body;
  EXPECT_EQ(stored(kNode)["metadata"]["labels"]["l"], "v");
  EXPECT_EQ(stored(kNode)["status"], json({{"capacity", {{"cpu", "4"}}}}));
}

TEST_F(FakeKubeObjectsTest, APatchOfStatusChangesOnlyTheStatus) {
  const FakeKubeAnswer answer = objects_.serve(
      "PATCH", "/api/v1/nodes/node-a/status", kMerge,
      R"({"metadata":{"labels":{"l":"v"}},"status":{"capacity":{"hostport.io/default":"9"}}})");
  ASSERT_EQ(answer.status, 200u) << answer.body;
  EXPECT_FALSE(stored(kNode)["metadata"].contains("labels"));
  EXPECT_EQ(stored(kNode)["status"]["capacity"],
            json({{"cpu", "4"}, {"hostport.io/default", "9"}}));
}

TEST_F(FakeKubeObjectsTest, PutReplacesAnObjectButKeepsItsUidAndStatus) {
  json pod = stored(kPod);
  pod["spec"]["nodeName"] = "node-c";
  pod["status"]["phase"] = "Failed";
  pod["metadata"].erase("uid");
  const FakeKubeAnswer answer = objects_.serve("PUT", kPod, "application/json", pod.dump());
  ASSERT_EQ(answer.status, 200u) << answer.body;
  EXPECT_EQ(stored(kPod)["spec"]["nodeName"], "node-c");
  EXPECT_EQ(stored(kPod)["status"]["phase"], "Running");
  EXPECT_EQ(stored(kPod)["metadata"]["uid"], "uid-1");
  // The resourceVersion it carried is now stale.
  EXPECT_EQ(objects_.serve("PUT", kPod, "application/json", pod.dump()).status, 409u);
}

TEST_F(FakeKubeObjectsTest, AWriteCannotRenameTheObject) {
  EXPECT_EQ(objects_.serve("PATCH", kPod, kMerge, R"({"metadata":{"name":"other"}})").status, 400u);
  EXPECT_EQ(objects_.serve("PATCH", kPod, kMerge, R"({"metadata":{"namespace":"other"}})").status,
            400u);
}

TEST_F(FakeKubeObjectsTest, ARecreatedObjectGetsANewUidAndANewerResourceVersion) {
  const std::string before = version(kPod);
  ASSERT_TRUE(objects_.erase(kPod));
  EXPECT_FALSE(objects_.erase(kPod));
  EXPECT_EQ(objects_.serve("PATCH", kPod, kMerge, "{}").status, 404u);
  ASSERT_OK(objects_.put(kPod, json::object()));
  EXPECT_NE(stored(kPod)["metadata"]["uid"], "uid-1");
  EXPECT_GT(std::stoull(version(kPod)), std::stoull(before));
}

TEST_F(FakeKubeObjectsTest, PostCreatesOnceThenAnswersAlreadyExists) {
  constexpr std::string_view kSecrets = "/api/v1/namespaces/hostport/secrets";
  const std::string secret = R"({"metadata":{"name":"tls"},"data":{"a":"b"}})";
  const auto created = objects_.serve("POST", kSecrets, "application/json", secret);
  ASSERT_EQ(created.status, 201u) << created.body.dump();
  EXPECT_EQ(created.body["metadata"]["namespace"], "hostport");
  EXPECT_FALSE(created.body["metadata"]["uid"].get<std::string>().empty());
  EXPECT_EQ(stored(std::string(kSecrets) + "/tls")["data"], json({{"a", "b"}}));

  const auto again = objects_.serve("POST", kSecrets, "application/json",
                                    R"({"metadata":{"name":"tls"},"data":{"a":"c"}})");
  EXPECT_EQ(again.status, 409u);
  EXPECT_EQ(again.body["reason"], "AlreadyExists");
  EXPECT_EQ(again.body["message"], "secrets \"tls\" already exists");
  EXPECT_EQ(stored(std::string(kSecrets) + "/tls")["data"], json({{"a", "b"}})) << "unchanged";

  EXPECT_EQ(objects_.serve("POST", kSecrets, "", R"({"metadata":{}})").status, 422u);
  EXPECT_EQ(objects_.serve("POST", kSecrets, "", "[]").status, 400u);
  EXPECT_EQ(objects_.serve("POST", kSecrets, "", R"({"metadata":{"name":"x","namespace":"other"}})")
                .status,
            400u);
  EXPECT_EQ(objects_.serve("POST", "/version", "", R"({"metadata":{"name":"x"}})").status, 404u);
}

TEST_F(FakeKubeObjectsTest, DeleteRemovesTheObjectUnlessAPreconditionFails) {
  constexpr std::string_view kLease = "/apis/coordination.k8s.io/v1/namespaces/hostport/leases/a";
  ASSERT_OK(objects_.put(kLease, {{"spec", {{"holderIdentity", "games/server-0"}}}}));
  const std::string uid = stored(kLease)["metadata"]["uid"];
  const std::string rv = stored(kLease)["metadata"]["resourceVersion"];

  const auto staleUid = objects_.serve("DELETE", kLease, "application/json",
                                       R"({"preconditions":{"uid":"another"}})");
  EXPECT_EQ(staleUid.status, 409u);
  EXPECT_EQ(staleUid.body["message"],
            "Operation cannot be fulfilled on leases \"a\": Precondition failed: UID in "
            "precondition: another, UID in object meta: " +
                uid);
  const auto staleVersion = objects_.serve("DELETE", kLease, "application/json",
                                           R"({"preconditions":{"resourceVersion":"1"}})");
  EXPECT_EQ(staleVersion.status, 409u);
  EXPECT_TRUE(objects_.get(kLease).has_value()) << "a failed precondition deletes nothing";

  const auto deleted =
      objects_.serve("DELETE", kLease, "application/json",
                     json({{"preconditions", {{"uid", uid}, {"resourceVersion", rv}}}}).dump());
  ASSERT_EQ(deleted.status, 200u) << deleted.body.dump();
  EXPECT_EQ(deleted.body["status"], "Success");
  EXPECT_EQ(deleted.body["details"]["uid"], uid);
  EXPECT_FALSE(objects_.get(kLease).has_value());
  EXPECT_EQ(objects_.serve("DELETE", kLease, "", "").status, 404u);
  EXPECT_EQ(objects_.serve("DELETE", kPod, "", "").status, 200u) << "no DeleteOptions: deleted";
}

TEST_F(FakeKubeObjectsTest, OtherMethodsAndPathsAreRefused) {
  EXPECT_EQ(objects_.serve("DELETE", std::string(kPod) + "/status", "", "").status, 405u);
  EXPECT_EQ(objects_.serve("POST", kPod, "", "").status, 405u);
  EXPECT_EQ(objects_.serve("GET", "/api/v1/namespaces/games/pods", "", "").status, 404u);
}

}  // namespace
}  // namespace hostport::kube
