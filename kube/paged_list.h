#pragma once
// A list of a collection as client-go's pager reads one: page by page (limit, continue), the
// whole collection at one resourceVersion; a continue token the server has expired (410) starts
// the list over. The informer lists with it before it watches; the admission server's repair
// loop lists claims, pods and StatefulSets with it.

#include <cstddef>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "common/error.h"
#include "kube/kube_client.h"

namespace hostport::kube {

/// How deep an API object may nest when it is parsed (a Pod nests about 12 deep).
inline constexpr int kMaxObjectDepth = 64;

/// metadata.resourceVersion of an object or a list; "" when it has none.
std::string resourceVersionOf(const nlohmann::json& object);

struct ListQuery {
  std::string fieldSelector;  // "" for none
  std::string labelSelector;  // "" for none
  std::size_t pageSize = 500;
};

struct ListedCollection {
  std::vector<nlohmann::json> items;
  std::string resourceVersion;
};

/// `collection` ("/api/v1/pods") with `query`'s selectors. `restarted` hears each start over.
/// Errors: kUnavailable with the server's answer, kDecode for a page without items or a list
/// without a resourceVersion, the client's own.
Result<ListedCollection> listCollection(KubeClient& client, std::string_view collection,
                                        const ListQuery& query,
                                        const std::function<void()>& restarted = {});

/// `collection` with `query` appended, each value percent-encoded; empty values are left out.
std::string collectionTarget(std::string_view collection,
                             std::initializer_list<std::pair<std::string_view, std::string>> query);

}  // namespace hostport::kube
