#pragma once
// The object store of the fake Kubernetes API server (fake_kube_apiserver.h), apart from its HTTP
// and TLS: objects by API path, and what a real API server does on GET, PATCH and PUT of one.
//
// Paths: /api/v1[/namespaces/{ns}]/{resource}/{name}[/status] and the same under
// /apis/{group}/{version}. An object is stored under its path without /status.
//
// As the real server:
// - every write takes the next resourceVersion of the whole store (a string, like etcd's
//   revision), and keeps metadata.uid and creationTimestamp;
// - a write whose object carries a resourceVersion other than the stored one, or another uid, is
//   409 Conflict; another name or namespace is 422 Invalid;
// - a write to the main resource keeps `status`; a write to /status changes only `status`;
// - POST to a collection (/api/v1/namespaces/{ns}/secrets) creates the object its body names:
//   201 Created, or 409 with reason AlreadyExists when one of that name is there (the create is
//   atomic: of two racing creators, one wins);
// - PATCH takes application/merge-patch+json (RFC 7386) and application/json-patch+json
//   (RFC 6902: a failed `test`, or a path that is not there, is 422 Invalid and changes
//   nothing); application/strategic-merge-patch+json and apply patches are 415;
// - errors are Kubernetes Status objects (kubeStatus).
// Not done: generateName, delete over HTTP, list, watch, field selectors, dry run, managed
// fields, generation, validation of the objects' schema.

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "common/error.h"
#include "nlohmann/json.hpp"

namespace hostport::kube {

/// An answer of the fake API server: an HTTP status and a JSON body (an object, or a Status).
struct FakeKubeAnswer {
  unsigned status = 200;
  nlohmann::json body;
};

/// The reason a Kubernetes Status gives with an HTTP status: 404 NotFound, 409 Conflict, 429
/// TooManyRequests, 500 InternalError, and so on; "" for a status it has none for.
std::string_view kubeReason(unsigned code);

/// A Kubernetes Status for a failed request: {"kind":"Status","apiVersion":"v1","metadata":{},
/// "status":"Failure","message":...,"reason":kubeReason(code),"code":code}.
nlohmann::json kubeStatus(unsigned code, std::string_view message);

/// An API path taken apart.
struct KubeObjectPath {
  std::string object;      // the path of the object: the request path without /status
  std::string resource;    // "pods", "nodes"
  std::string namespace_;  // "" for a cluster-scoped resource
  std::string name;
  bool status = false;  // the /status subresource
};

/// The object an API path names, or nullopt when it names none (a collection, another
/// subresource, something outside /api and /apis).
std::optional<KubeObjectPath> parseKubeObjectPath(std::string_view path);

/// API objects by path, with resourceVersion and uid kept as a real API server keeps them. Not
/// thread-safe: the fake server locks around it.
class FakeKubeObjects {
 public:
  /// Stores `object` at `path` (the path of an object, not of /status), replacing what was there.
  /// Fills metadata.name and metadata.namespace from the path and metadata.uid when it is
  /// missing, and sets a new resourceVersion. Returns the stored object; kInvalidArgument when
  /// `path` names no object or `object` is not a JSON object.
  Result<nlohmann::json> put(std::string_view path, nlohmann::json object);

  /// The object stored at `path` (with or without /status), or nullopt.
  std::optional<nlohmann::json> get(std::string_view path) const;

  /// Removes the object at `path`; false when there was none.
  bool erase(std::string_view path);

  /// Serves one request: GET, PATCH or PUT of `path` (without its query).
  FakeKubeAnswer serve(std::string_view method, std::string_view path, std::string_view contentType,
                       std::string_view body);

  /// A fresh uid in the UUID format, "00000000-0000-4000-8000-<n as 12 hex digits>".
  std::string newUid();

 private:
  FakeKubeAnswer patch(const KubeObjectPath& path, std::string_view contentType,
                       std::string_view body);
  FakeKubeAnswer update(const KubeObjectPath& path, std::string_view body);
  FakeKubeAnswer create(std::string_view collection, std::string_view body);
  /// Stores `changed` as the new version of the object at `path` after the checks of a write.
  FakeKubeAnswer write(const KubeObjectPath& path, nlohmann::json changed);
  std::string nextResourceVersion() { return std::to_string(++revision_); }

  std::map<std::string, nlohmann::json, std::less<>> objects_;
  std::uint64_t revision_ = 1000;
  std::uint64_t uids_ = 0;
};

}  // namespace hostport::kube
