#include "admission/admission_review.h"

#include <array>
#include <utility>

#include "common/bounded_json.h"
#include "common/json_fields.h"
#include "kube/base64.h"

namespace hostport::admission {
namespace {

using nlohmann::json;

constexpr std::string_view kApiVersion = "admission.k8s.io/v1";
constexpr std::string_view kKind = "AdmissionReview";

constexpr std::array kOperations = {
    std::pair{"CREATE", Operation::kCreate}, std::pair{"UPDATE", Operation::kUpdate},
    std::pair{"DELETE", Operation::kDelete}, std::pair{"CONNECT", Operation::kConnect}};

Result<std::string> optionalString(const json& object, std::string_view parent,
                                   std::string_view key) {
  return readString(jsonField(object, parent, key), "");
}

Result<GroupVersionKind> readKind(const json& request) {
  const JsonField field = jsonField(request, "request", "kind");
  if (field.value == nullptr) return missingValue(field.path);
  if (!field.value->is_object()) return invalidValue(field, "must be an object");
  GroupVersionKind kind;
  HOSTPORT_TRY(kind.group, optionalString(*field.value, field.path, "group"));
  HOSTPORT_TRY(kind.version, optionalString(*field.value, field.path, "version"));
  HOSTPORT_TRY(kind.kind, optionalString(*field.value, field.path, "kind"));
  return kind;
}

Result<Operation> readOperation(const json& request) {
  const JsonField field = jsonField(request, "request", "operation");
  HOSTPORT_TRY(const std::string text, readString(field));
  for (const auto& [name, operation] : kOperations) {
    if (text == name) return operation;
  }
  return invalidValue(field, "is not CREATE, UPDATE, DELETE or CONNECT");
}

/// object and oldObject: JSON null when absent, an object otherwise, moved out of the parsed
/// review rather than copied (the pods are the bulk of it).
Result<json> takeObject(json& request, std::string_view key) {
  const JsonField field = jsonField(request, "request", key);
  if (field.value == nullptr) return json();
  if (!field.value->is_object()) return invalidValue(field, "must be an object");
  return std::move(request[std::string(key)]);
}

}  // namespace

bool AdmissionRequest::isPod() const {
  return kind == GroupVersionKind{"", "v1", "Pod"} && resource == "pods" && subResource.empty();
}

Result<AdmissionRequest> decodeAdmissionReview(std::string_view body) {
  HOSTPORT_TRY(json review,
               parseBoundedJson(body, "AdmissionReview", kMaxReviewBytes, kMaxReviewDepth));
  if (!review.is_object()) return invalidValue("(AdmissionReview)", review, "must be an object");
  const JsonField apiVersion = jsonField(review, "", "apiVersion");
  HOSTPORT_TRY(const std::string version, readString(apiVersion));
  if (version != kApiVersion) {
    return invalidValue(apiVersion, "is not " + std::string(kApiVersion) +
                                        " (the webhook configurations ask for v1 only)");
  }
  const JsonField kind = jsonField(review, "", "kind");
  HOSTPORT_TRY(const std::string kindName, readString(kind));
  if (kindName != kKind) return invalidValue(kind, "is not " + std::string(kKind));
  if (jsonMember(review, "request") == nullptr) return missingValue("request");
  json* request = &review["request"];
  if (!request->is_object()) return invalidValue("request", *request, "must be an object");

  AdmissionRequest out;
  HOSTPORT_TRY(out.uid, readString(jsonField(*request, "request", "uid")));
  if (out.uid.empty()) return invalidValue("request.uid", *jsonMember(*request, "uid"), "is empty");
  HOSTPORT_TRY(out.kind, readKind(*request));
  if (const json* resource = jsonMember(*request, "resource"); resource != nullptr) {
    if (!resource->is_object())
      return invalidValue("request.resource", *resource, "must be an object");
    HOSTPORT_TRY(out.resource, optionalString(*resource, "request.resource", "resource"));
  }
  HOSTPORT_TRY(out.subResource, optionalString(*request, "request", "subResource"));
  HOSTPORT_TRY(out.operation, readOperation(*request));
  HOSTPORT_TRY(out.name, optionalString(*request, "request", "name"));
  HOSTPORT_TRY(out.namespaceName, optionalString(*request, "request", "namespace"));
  HOSTPORT_TRY(out.object, takeObject(*request, "object"));
  HOSTPORT_TRY(out.oldObject, takeObject(*request, "oldObject"));
  HOSTPORT_TRY(out.dryRun, readBool(jsonField(*request, "request", "dryRun"), false));
  if (const json* user = jsonMember(*request, "userInfo"); user != nullptr) {
    if (!user->is_object()) return invalidValue("request.userInfo", *user, "must be an object");
    HOSTPORT_TRY(out.userName, optionalString(*user, "request.userInfo", "username"));
  }
  return out;
}

std::string encodeAdmissionReview(const AdmissionResponse& response) {
  json answer = {{"uid", response.uid}, {"allowed", response.allowed}};
  if (!response.allowed || response.code != 0) {
    answer["status"] = {{"code", response.code}, {"message", response.message}};
  }
  if (!response.patch.empty()) {
    answer["patchType"] = "JSONPatch";
    answer["patch"] = kube::encodeBase64(response.patch.dump());
  }
  if (!response.warnings.empty()) answer["warnings"] = response.warnings;
  const json review = {
      {"apiVersion", kApiVersion}, {"kind", kKind}, {"response", std::move(answer)}};
  // A message or warning may quote a pod's bytes: replace what is not UTF-8 rather than throw.
  return review.dump(-1, ' ', false, json::error_handler_t::replace);
}

}  // namespace hostport::admission
