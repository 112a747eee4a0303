#pragma once
// The check of an attachment key wherever the control socket receives one: in a JSON body (the
// codec) and in a request target's path or query (the agent's handlers). Both word a refusal as
// every field error on the socket is worded, `<path>: "<value>" <problem>`, with the problem text
// of the grammar (common/identifiers.h), so a client sees the same sentence for the same bad key
// whichever route it took.

#include <string_view>

#include "common/error.h"
#include "lease/lease.h"

namespace hostport::agent::api {

/// Nothing when `containerId` keeps CNI's container ID grammar; kInvalidArgument otherwise, as
/// `containerId: "a b" must be 1-100 characters ...` (`<path>.containerId` under a `path`).
Result<void> checkContainerId(std::string_view containerId, std::string_view path = "");

/// The key when its containerId and then its ifname keep their grammars; otherwise the first
/// refusal, worded as checkContainerId() words it (`ifname: "a/b" must not contain '/'`).
Result<AttachmentKey> checkAttachmentKey(AttachmentKey key, std::string_view path = "");

}  // namespace hostport::agent::api
