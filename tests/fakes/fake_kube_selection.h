#pragma once
// What a list or watch of the fake Kubernetes API server (fake_kube_apiserver.h) selects: the
// collection its path names, the query it was sent with, and the field selector, read as the
// real server reads them. Part of the fake: tests only.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/error.h"
#include "nlohmann/json.hpp"

namespace hostport::kube {

/// How many leading segments of an API path are its group and version: 2 for api/v1, 3 for
/// apis/{group}/{version}; nullopt for a path outside /api and /apis.
std::optional<std::size_t> groupVersionSegments(const std::vector<std::string_view>& segments);

/// A collection path: /api/v1/pods (every namespace), /api/v1/namespaces/{ns}/pods, /api/v1/nodes,
/// and the same under /apis/{group}/{version}.
struct KubeCollectionPath {
  std::string groupVersion;  // "/api/v1", "/apis/coordination.k8s.io/v1"
  std::string resource;      // "pods"
  std::string namespace_;    // "" for every namespace, or a cluster-scoped resource
  /// Whether the object at `objectPath` (the path of an object) is in this collection.
  bool contains(std::string_view objectPath) const;
};

/// The collection `path` names, or nullopt when it names none.
std::optional<KubeCollectionPath> parseKubeCollectionPath(std::string_view path);

/// The query parameters of a list or watch that the fake reads; others are ignored, as the real
/// server ignores what it does not know.
struct KubeListQuery {
  std::string fieldSelector;
  std::string labelSelector;
  std::string resourceVersion;
  std::string continueToken;
  std::size_t limit = 0;  // 0: everything
  bool watch = false;
  bool allowWatchBookmarks = false;
  std::optional<unsigned> timeoutSeconds;
};

/// The query of `target` (what follows '?'), percent-decoded. kInvalidArgument naming the
/// parameter for a bad escape or number.
Result<KubeListQuery> parseKubeListQuery(std::string_view target);

/// A field selector: terms joined by ',', each `field=value`, `field==value` or `field!=value`,
/// all of which must hold. The real server serves a few fields per resource, and refuses others
/// with 400 "field label not supported"; so does this one, with pods' list (metadata.name,
/// metadata.namespace, spec.nodeName, spec.restartPolicy, spec.schedulerName,
/// spec.serviceAccountName, spec.hostNetwork, status.phase, status.podIP,
/// status.nominatedNodeName) and metadata.name and metadata.namespace for every other resource.
class FieldSelector {
 public:
  static Result<FieldSelector> parse(std::string_view text, std::string_view resource);
  bool matches(const nlohmann::json& object) const;
  bool empty() const { return terms_.empty(); }

 private:
  struct Term {
    std::vector<std::string> path;  // "spec", "nodeName"
    std::string value;
    bool equal = true;
  };
  std::vector<Term> terms_;
};

/// A label selector, as the real server reads one: requirements joined by ',' (outside
/// parentheses), each `key`, `!key`, `key=value`, `key==value`, `key!=value`, `key in (a,b)` or
/// `key notin (a,b)`, all of which must hold. `key!=value` and `notin` hold for an object without
/// the label, as upstream's. A key is an optional DNS prefix and '/', then a name; values may be
/// empty. kInvalidArgument, "unable to parse requirement: ...", for anything else.
class LabelSelector {
 public:
  static Result<LabelSelector> parse(std::string_view text);
  bool matches(const nlohmann::json& object) const;

 private:
  enum class Op : uint8_t { kExists, kNotExists, kIn, kNotIn };
  struct Requirement {
    std::string key;
    Op op = Op::kExists;
    std::vector<std::string> values;
  };
  std::vector<Requirement> requirements_;
};

/// What a list or watch selects: its field and label selectors together.
struct Selector {
  FieldSelector fields;
  LabelSelector labels;
  /// Both of `query`'s selectors for a collection of `resource`; the first error.
  static Result<Selector> parse(const KubeListQuery& query, std::string_view resource);
  bool matches(const nlohmann::json& object) const {
    return fields.matches(object) && labels.matches(object);
  }
};

}  // namespace hostport::kube
