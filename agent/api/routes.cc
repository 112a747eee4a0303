#include "agent/api/routes.h"

#include "common/percent_encoding.h"
#include "common/quote.h"

namespace hostport::agent::api {
namespace {

std::string query(std::initializer_list<std::pair<std::string_view, std::string_view>> params) {
  std::string text;
  for (const auto& [name, value] : params) {
    if (value.empty()) continue;
    text += text.empty() ? "?" : "&";
    text += std::string(name) + "=" + percentEncode(value);
  }
  return text;
}

}  // namespace

std::string attachmentTarget(const AttachmentKey& key) {
  return std::string(kAttachmentsPath) + "/" + percentEncode(key.containerId) + "/" +
         percentEncode(key.ifname);
}

std::string listTarget(std::string_view namespaceName, std::string_view podName) {
  return std::string(kAttachmentsPath) + query({{"namespace", namespaceName}, {"pod", podName}});
}

std::string containerTarget(std::string_view containerId) {
  return std::string(kAttachmentsPath) + query({{"containerId", containerId}});
}

Result<Target> parseTarget(std::string_view target) {
  if (target.empty() || target.front() != '/' || target.size() > kMaxTargetLength) {
    return fail(ErrorCode::kInvalidArgument, "request target " + quoteText(target) +
                                                 " must be a path of at most " +
                                                 std::to_string(kMaxTargetLength) + " characters");
  }
  const std::size_t mark = target.find('?');
  const std::string_view path = target.substr(0, mark);
  Target parsed;
  // "/" alone is the root; otherwise every segment between slashes must be non-empty.
  for (std::size_t start = 1; start <= path.size() && path.size() > 1;) {
    const std::size_t slash = std::min(path.find('/', start), path.size());
    const std::string_view segment = path.substr(start, slash - start);
    if (segment.empty()) {
      return fail(ErrorCode::kInvalidArgument,
                  "request target " + quoteText(target) + " has an empty path segment");
    }
    HOSTPORT_TRY(std::string decoded, percentDecode(segment));
    parsed.segments.push_back(std::move(decoded));
    start = slash + 1;
  }
  if (mark == std::string_view::npos) return parsed;
  std::string_view rest = target.substr(mark + 1);
  while (!rest.empty()) {
    const std::size_t amp = std::min(rest.find('&'), rest.size());
    const std::string_view pair = rest.substr(0, amp);
    rest.remove_prefix(std::min(amp + 1, rest.size()));
    if (pair.empty()) continue;
    const std::size_t equals = std::min(pair.find('='), pair.size());
    HOSTPORT_TRY(std::string name, percentDecode(pair.substr(0, equals)));
    HOSTPORT_TRY(std::string value, percentDecode(pair.substr(std::min(equals + 1, pair.size()))));
    if (!parsed.query.emplace(std::move(name), std::move(value)).second) {
      return fail(ErrorCode::kInvalidArgument, "request target " + quoteText(target) +
                                                   " repeats query parameter " +
                                                   quoteText(pair.substr(0, equals)));
    }
  }
  return parsed;
}

}  // namespace hostport::agent::api
