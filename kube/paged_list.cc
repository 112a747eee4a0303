#include "kube/paged_list.h"

#include "common/bounded_json.h"
#include "common/json_fields.h"
#include "common/percent_encoding.h"

namespace hostport::kube {
namespace {

using nlohmann::json;

constexpr std::size_t kMaxPageBytes = 8 << 20;

}  // namespace

std::string resourceVersionOf(const json& object) {
  const json* metadata = jsonMember(object, "metadata");
  return metadata != nullptr ? jsonText(*metadata, "resourceVersion") : std::string();
}

std::string collectionTarget(
    std::string_view collection,
    std::initializer_list<std::pair<std::string_view, std::string>> query) {
  std::string text(collection);
  char separator = '?';
  for (const auto& [name, value] : query) {
    if (value.empty()) continue;
    text += separator;
    text += std::string(name) + "=" + percentEncode(value);
    separator = '&';
  }
  return text;
}

Result<ListedCollection> listCollection(KubeClient& client, std::string_view collection,
                                        const ListQuery& query,
                                        const std::function<void()>& restarted) {
  const std::string what = "list " + std::string(collection);
  ListedCollection listed;
  std::string next;
  do {
    HOSTPORT_TRY(
        const KubeResponse answer,
        client.send({"GET",
                     collectionTarget(collection, {{"fieldSelector", query.fieldSelector},
                                                   {"labelSelector", query.labelSelector},
                                                   {"limit", std::to_string(query.pageSize)},
                                                   {"continue", next}}),
                     "", ""}));
    if (answer.status == 410 && !next.empty()) {
      // The continue token outlived the version it reads at: the list starts over.
      if (restarted) restarted();
      listed.items.clear();
      next.clear();
      continue;
    }
    if (!answer.ok()) {
      return fail(ErrorCode::kUnavailable,
                  what + ": " + describeAnswer(answer.status, answer.body));
    }
    HOSTPORT_TRY(json page, parseBoundedJson(answer.body, what, kMaxPageBytes, kMaxObjectDepth));
    if (!page.is_object() || !page["items"].is_array()) {
      return fail(ErrorCode::kDecode, what + ": no items array");
    }
    for (json& item : page["items"]) listed.items.push_back(std::move(item));
    listed.resourceVersion = resourceVersionOf(page);
    const json& metadata = page["metadata"];
    next = metadata.is_object() && metadata.value("continue", json()).is_string()
               ? metadata["continue"].get<std::string>()
               : std::string();
  } while (!next.empty());
  if (listed.resourceVersion.empty())
    return fail(ErrorCode::kDecode, what + ": no resourceVersion");
  return listed;
}

}  // namespace hostport::kube
