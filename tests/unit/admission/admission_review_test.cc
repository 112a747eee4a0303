// The AdmissionReview v1 codec: a review as kube-apiserver posts it, refused bodies, and every
// part of an answer.
#include "admission/admission_review.h"

#include <gtest/gtest.h>

#include "kube/base64.h"
#include "tests/support/result_assertions.h"
#include "tests/unit/admission/review_samples.h"

namespace hostport::admission {
namespace {

using nlohmann::json;

TEST(AdmissionReviewTest, DecodesTheFieldsOfARealReview) {
  const json pod = samples::samplePod({{"hostport.io/ports", "game=7000/udp"}});
  json review = samples::podReview(pod, "UPDATE", samples::samplePod());
  review["request"]["dryRun"] = true;
  ASSERT_OK_AND_ASSIGN(const AdmissionRequest request, decodeAdmissionReview(review.dump()));
  EXPECT_EQ(request.uid, "705ab4f5-6393-11e8-b7cc-42010a800002");
  EXPECT_EQ(request.kind, (GroupVersionKind{"", "v1", "Pod"}));
  EXPECT_EQ(request.resource, "pods");
  EXPECT_EQ(request.subResource, "");
  EXPECT_EQ(request.operation, Operation::kUpdate);
  EXPECT_EQ(request.name, "game-0");
  EXPECT_EQ(request.namespaceName, "games-eu");
  EXPECT_EQ(request.object, pod);
  EXPECT_EQ(request.oldObject, samples::samplePod());
  EXPECT_TRUE(request.dryRun);
  EXPECT_EQ(request.userName, "admin");
  EXPECT_TRUE(request.isPod());
}

TEST(AdmissionReviewTest, ASubresourceOrAnotherKindIsNotAPod) {
  json review = samples::podReview(samples::samplePod());
  review["request"]["subResource"] = "status";
  ASSERT_OK_AND_ASSIGN(auto status, decodeAdmissionReview(review.dump()));
  EXPECT_FALSE(status.isPod());
  review = samples::podReview(samples::samplePod());
  review["request"]["kind"] = {{"group", "autoscaling"}, {"version", "v1"}, {"kind", "Scale"}};
  ASSERT_OK_AND_ASSIGN(auto scale, decodeAdmissionReview(review.dump()));
  EXPECT_FALSE(scale.isPod());
}

TEST(AdmissionReviewTest, RefusesABodyThatIsNotAV1ReviewNamingTheField) {
  const auto message = [](const json& review) {
    auto decoded = decodeAdmissionReview(review.dump());
    return decoded ? std::string("decoded") : decoded.error().message;
  };
  json review = samples::podReview(samples::samplePod());
  review["apiVersion"] = "admission.k8s.io/v1beta1";
  EXPECT_EQ(message(review),
            "apiVersion: \"admission.k8s.io/v1beta1\" is not admission.k8s.io/v1 (the webhook "
            "configurations ask for v1 only)");
  review = samples::podReview(samples::samplePod());
  review["request"].erase("uid");
  EXPECT_EQ(message(review), "request.uid: missing");
  review = samples::podReview(samples::samplePod());
  review["request"]["operation"] = "PATCH";
  EXPECT_EQ(message(review),
            "request.operation: \"PATCH\" is not CREATE, UPDATE, DELETE or CONNECT");
  review = samples::podReview(samples::samplePod());
  review["request"]["object"] = "pod";
  EXPECT_EQ(message(review), "request.object: \"pod\" must be an object");
  review = samples::podReview(samples::samplePod());
  review.erase("request");
  EXPECT_EQ(message(review), "request: missing");

  EXPECT_EQ(decodeAdmissionReview("{").error().code, ErrorCode::kDecode);
  EXPECT_EQ(decodeAdmissionReview(std::string(kMaxReviewBytes + 1, ' ')).error().code,
            ErrorCode::kDecode);
  const std::string deep = R"({"request":)" + std::string(kMaxReviewDepth + 1, '[') +
                           std::string(kMaxReviewDepth + 1, ']') + "}";
  EXPECT_EQ(decodeAdmissionReview(deep).error().code, ErrorCode::kDecode);
}

TEST(AdmissionReviewTest, AnAllowingAnswerEchoesTheUidAndNothingElse) {
  const json answer = json::parse(encodeAdmissionReview(AdmissionResponse::allow("u-1")));
  EXPECT_EQ(answer, (json{{"apiVersion", "admission.k8s.io/v1"},
                          {"kind", "AdmissionReview"},
                          {"response", {{"uid", "u-1"}, {"allowed", true}}}}));
}

TEST(AdmissionReviewTest, ARefusalCarriesItsStatusAndWarnings) {
  auto refused = AdmissionResponse::refuse("u-2", 403, "pool \"games\" does not allow namespace");
  refused.warnings = {"one", "two"};
  const json answer = json::parse(encodeAdmissionReview(refused))["response"];
  EXPECT_EQ(answer, (json{{"uid", "u-2"},
                          {"allowed", false},
                          {"status", {{"code", 403}, {"message", refused.message}}},
                          {"warnings", {"one", "two"}}}));
}

TEST(AdmissionReviewTest, APatchIsBase64OfItsJsonWithItsType) {
  auto response = AdmissionResponse::allow("u-3");
  response.patch = json::array({{{"op", "add"}, {"path", "/a"}, {"value", 1}}});
  const json answer = json::parse(encodeAdmissionReview(response))["response"];
  EXPECT_EQ(answer["patchType"], "JSONPatch");
  ASSERT_OK_AND_ASSIGN(const std::string patch,
                       kube::decodeBase64(answer["patch"].get<std::string>(), "patch"));
  EXPECT_EQ(json::parse(patch), response.patch);
}

TEST(AdmissionReviewTest, AMessageThatIsNotUtf8IsStillAnswered) {
  const auto refused = AdmissionResponse::refuse("u-4", 400, "bad \xff byte");
  EXPECT_TRUE(json::accept(encodeAdmissionReview(refused)));
}

}  // namespace
}  // namespace hostport::admission
