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
// - DELETE removes the object (200 with a Success Status), after the DeleteOptions'
//   preconditions (uid, resourceVersion): another value is 409 Conflict, "Precondition failed";
//   a watch sees it DELETED, at a version of its own;
// - lists and watches take label selectors (=, ==, !=, in, notin, exists, !exists) with the field
//   selectors;
// - PATCH takes application/merge-patch+json (RFC 7386) and application/json-patch+json
//   (RFC 6902: a failed `test`, or a path that is not there, is 422 Invalid and changes
//   nothing); application/strategic-merge-patch+json and apply patches are 415;
// - errors are Kubernetes Status objects (kubeStatus).
// - every change is kept in order (FakeKubeChange) until compact(), as etcd keeps its history:
//   lists (paged: limit, continue) and watches (eventsSince) read it as the real server does, with
//   field selectors (fake_kube_selection.h); a version older than the history is 410 Expired
//   (fake_kube_objects_watch.cc).
// Not done: generateName, graceful deletion and finalizers, deletecollection, dry run, managed
// fields, generation, validation of the objects' schema. A continued list reads the objects as they
// are now (with the first page's resourceVersion), not a snapshot; the watch from that version then
// brings what changed, as it would.

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/error.h"
#include "nlohmann/json.hpp"
#include "tests/fakes/fake_kube_selection.h"

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

/// One change of the store, which a watch turns into its events.
struct FakeKubeChange {
  std::uint64_t revision = 0;
  std::string path;                      // the object's
  std::optional<nlohmann::json> before;  // nullopt: the object was created
  std::optional<nlohmann::json> after;   // nullopt: the object was deleted
};

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

  /// Serves one request: GET, PATCH, PUT or DELETE of `path` (without its query), POST to a
  /// collection.
  FakeKubeAnswer serve(std::string_view method, std::string_view path, std::string_view contentType,
                       std::string_view body);

  /// A fresh uid in the UUID format, "00000000-0000-4000-8000-<n as 12 hex digits>".
  std::string newUid();

  // --- Lists and watches (fake_kube_objects_watch.cc) ---
  /// A list of `collection` as `query` asks (field selector, limit, continue): a {Kind}List at
  /// the store's revision, the objects in path order. 400 for a bad selector, 410 Expired for a
  /// continue token from before the last compact().
  FakeKubeAnswer list(const KubeCollectionPath& collection, const KubeListQuery& query) const;
  /// The events of the changes after `revision` to the objects of `collection`, as a watch with
  /// `selector` sees them: ADDED when an object comes to match (created, or changed into the
  /// selection), MODIFIED while it matches, DELETED when it is deleted (its last state, at the
  /// deletion's version) or changes out of the selection. nullopt when `revision` is older than
  /// the history kept: the watch must be told 410.
  std::optional<std::vector<nlohmann::json>> eventsSince(std::uint64_t revision,
                                                         const KubeCollectionPath& collection,
                                                         const Selector& selector) const;
  /// ADDED events for the objects there now: a watch from resourceVersion "" or "0".
  std::vector<nlohmann::json> currentAsAdded(const KubeCollectionPath& collection,
                                             const Selector& selector) const;
  /// Forgets the history so far, as etcd's compaction does.
  void compact();
  std::uint64_t revision() const { return revision_; }

 private:
  FakeKubeAnswer patch(const KubeObjectPath& path, std::string_view contentType,
                       std::string_view body);
  FakeKubeAnswer update(const KubeObjectPath& path, std::string_view body);
  FakeKubeAnswer remove(const KubeObjectPath& path, std::string_view body);
  FakeKubeAnswer create(std::string_view collection, std::string_view body);
  /// Stores `changed` as the new version of the object at `path` after the checks of a write.
  FakeKubeAnswer write(const KubeObjectPath& path, nlohmann::json changed);
  std::string nextResourceVersion() { return std::to_string(++revision_); }
  /// Keeps a change that took the store's latest revision.
  void record(std::string path, std::optional<nlohmann::json> before,
              std::optional<nlohmann::json> after);

  std::map<std::string, nlohmann::json, std::less<>> objects_;
  std::vector<FakeKubeChange> history_;
  std::uint64_t compacted_ = 0;  // the revision of the last compact(): older ones are gone
  std::uint64_t revision_ = 1000;
  std::uint64_t uids_ = 0;
};

}  // namespace hostport::kube
