// FakeKubeObjects' lists and watches: what the real server reads from etcd's history and its
// watch cache, read here from the store's own history (fake_kube_objects.h).

#include <charconv>

#include "tests/fakes/fake_kube_objects.h"

namespace hostport::kube {
namespace {

using nlohmann::json;

FakeKubeAnswer failure(unsigned code, std::string_view message) {
  return {code, kubeStatus(code, message)};
}

/// The kind of a list of `resource`, as the real server names it.
std::string listKind(std::string_view resource) {
  if (resource == "pods") return "PodList";
  if (resource == "nodes") return "NodeList";
  if (resource == "events") return "EventList";
  if (resource == "leases") return "LeaseList";
  if (resource == "secrets") return "SecretList";
  return "List";
}

json event(std::string_view type, json object) {
  return {{"type", type}, {"object", std::move(object)}};
}

std::optional<std::uint64_t> parseRevision(std::string_view text) {
  std::uint64_t value = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return value;
}

}  // namespace

void FakeKubeObjects::record(std::string path, std::optional<json> before,
                             std::optional<json> after) {
  history_.push_back({revision_, std::move(path), std::move(before), std::move(after)});
}

void FakeKubeObjects::compact() {
  history_.clear();
  compacted_ = revision_;
}

FakeKubeAnswer FakeKubeObjects::list(const KubeCollectionPath& collection,
                                     const KubeListQuery& query) const {
  auto selector = Selector::parse(query, collection.resource);
  if (!selector) return failure(400, selector.error().message);
  // A continue token: "<the first page's revision>:<the last path it returned>".
  std::uint64_t at = revision_;
  std::string after;
  if (!query.continueToken.empty()) {
    const std::size_t colon = query.continueToken.find(':');
    const auto revision = parseRevision(std::string_view(query.continueToken).substr(0, colon));
    if (colon == std::string::npos || !revision) return failure(400, "invalid continue token");
    if (*revision < compacted_) {
      return failure(410,
                     "The provided continue parameter is too old to display a consistent list "
                     "result. You can start a new list without the continue parameter.");
    }
    at = *revision;
    after = query.continueToken.substr(colon + 1);
  }
  json items = json::array();
  std::string last;
  bool more = false;
  for (auto it = after.empty() ? objects_.begin() : objects_.upper_bound(after);
       it != objects_.end(); ++it) {
    if (!collection.contains(it->first) || !selector->matches(it->second)) continue;
    if (query.limit != 0 && items.size() == query.limit) {
      more = true;
      break;
    }
    items.push_back(it->second);
    last = it->first;
  }
  json metadata = {{"resourceVersion", std::to_string(at)}};
  if (more) metadata["continue"] = std::to_string(at) + ":" + last;
  const std::string apiVersion = collection.groupVersion.starts_with("/apis/")
                                     ? collection.groupVersion.substr(6)
                                     : collection.groupVersion.substr(5);
  return {200,
          {{"kind", listKind(collection.resource)},
           {"apiVersion", apiVersion},
           {"metadata", std::move(metadata)},
           {"items", std::move(items)}}};
}

std::optional<std::vector<json>> FakeKubeObjects::eventsSince(std::uint64_t revision,
                                                              const KubeCollectionPath& collection,
                                                              const Selector& selector) const {
  if (revision < compacted_) return std::nullopt;
  std::vector<json> events;
  for (const FakeKubeChange& change : history_) {
    if (change.revision <= revision || !collection.contains(change.path)) continue;
    const bool matched = change.before && selector.matches(*change.before);
    const bool matches = change.after && selector.matches(*change.after);
    if (matches) {
      events.push_back(event(matched ? "MODIFIED" : "ADDED", *change.after));
    } else if (matched) {
      // Deleted (its last state, at the deletion's version), or changed out of the selection
      // (its new state, as the watch cache sends it).
      json object = change.after ? *change.after : *change.before;
      events.push_back(event("DELETED", std::move(object)));
    }
  }
  return events;
}

std::vector<json> FakeKubeObjects::currentAsAdded(const KubeCollectionPath& collection,
                                                  const Selector& selector) const {
  std::vector<json> events;
  for (const auto& [path, object] : objects_) {
    if (collection.contains(path) && selector.matches(object)) {
      events.push_back(event("ADDED", object));
    }
  }
  return events;
}

}  // namespace hostport::kube
