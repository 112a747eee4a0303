#include "agent/api/attachment_key.h"

#include <nlohmann/json.hpp>
#include <string>

#include "common/identifiers.h"
#include "common/json_fields.h"

namespace hostport::agent::api {
namespace {

/// `text`, the value of `key` under `path`, checked against one of common/identifiers.h's
/// grammars.
Result<void> checkField(std::string_view path, std::string_view key, std::string_view text,
                        Problem (*grammar)(std::string_view)) {
  if (const Problem problem = grammar(text)) {
    return invalidValue(memberPath(path, key), nlohmann::json(std::string(text)), *problem);
  }
  return {};
}

}  // namespace

Result<void> checkContainerId(std::string_view containerId, std::string_view path) {
  return checkField(path, "containerId", containerId, containerIdProblem);
}

Result<AttachmentKey> checkAttachmentKey(AttachmentKey key, std::string_view path) {
  HOSTPORT_TRY_VOID(checkContainerId(key.containerId, path));
  HOSTPORT_TRY_VOID(checkField(path, "ifname", key.ifname, ifnameProblem));
  return key;
}

}  // namespace hostport::agent::api
