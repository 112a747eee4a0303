#pragma once
// The AdmissionReview v1 exchange (admission.k8s.io/v1): the request the API server posts to a
// webhook and the response it reads back. Only the fields hostport-admission reads are decoded;
// the rest of the request is ignored, as a Go webhook's decoder would.

#include <cstddef>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "common/error.h"

namespace hostport::admission {

/// The largest request body read. kube-apiserver refuses an object whose stored form is above
/// etcd's 1.5 MiB request limit, and a review of an UPDATE carries two (object and oldObject):
/// 4 MiB holds both with the envelope. Anything larger did not come from the API server.
inline constexpr std::size_t kMaxReviewBytes = 4 << 20;
/// JSON nesting: a Pod, its managedFields included, nests about 20 deep; the bound keeps code
/// that walks the document (json's destructor among it) off a hostile stack.
inline constexpr int kMaxReviewDepth = 100;

enum class Operation { kCreate, kUpdate, kDelete, kConnect };

struct GroupVersionKind {
  std::string group;  // "" for the core group
  std::string version;
  std::string kind;
  friend bool operator==(const GroupVersionKind&, const GroupVersionKind&) = default;
};

struct AdmissionRequest {
  std::string uid;  // echoed in the response
  GroupVersionKind kind;
  std::string resource;     // "pods"
  std::string subResource;  // "" for the object itself
  Operation operation = Operation::kCreate;
  std::string name;  // may be empty at CREATE (generateName)
  std::string namespaceName;
  nlohmann::json object;     // null when absent (DELETE)
  nlohmann::json oldObject;  // null when absent (CREATE)
  bool dryRun = false;
  std::string userName;

  /// A core/v1 Pod itself, not a subresource such as status or binding.
  bool isPod() const;
};

/// Decodes a POSTed AdmissionReview. kDecode for a body that is not bounded JSON
/// (kMaxReviewBytes, kMaxReviewDepth); kInvalidArgument naming the field for a review that is not
/// admission.k8s.io/v1, has no request or request.uid, or an unknown operation.
Result<AdmissionRequest> decodeAdmissionReview(std::string_view body);

/// What the webhook answers.
struct AdmissionResponse {
  std::string uid;
  bool allowed = true;
  int code = 0;         // status.code of a refusal (400, 403); 0: no status
  std::string message;  // status.message: what kubectl shows after "denied the request: "
  nlohmann::json patch = nlohmann::json::array();  // RFC 6902 operations; empty: no patch
  std::vector<std::string> warnings;

  static AdmissionResponse allow(std::string uid) {
    AdmissionResponse response;
    response.uid = std::move(uid);
    return response;
  }
  static AdmissionResponse refuse(std::string uid, int code, std::string message) {
    AdmissionResponse response = allow(std::move(uid));
    response.allowed = false;
    response.code = code;
    response.message = std::move(message);
    return response;
  }
  /// Refused for `error`, with the status code its kind has: 400 for what is malformed, 403 for
  /// what a pool refuses (its rules, no port left, too many conflicts), 503 for what could not
  /// be asked (the API server).
  static AdmissionResponse refuse(std::string uid, const Error& error) {
    const int code = error.code == ErrorCode::kInvalidArgument ? 400
                     : error.code == ErrorCode::kUnavailable   ? 503
                                                               : 403;
    return refuse(std::move(uid), code, error.message);
  }
};

/// The AdmissionReview v1 body of `response`: the patch base64-encoded with patchType JSONPatch
/// when there is one, status only for a refusal, warnings when any.
std::string encodeAdmissionReview(const AdmissionResponse& response);

}  // namespace hostport::admission
