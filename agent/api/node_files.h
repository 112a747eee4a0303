#pragma once
// The plugin's two file channels on the node, next to the control socket:
// - attachment records: the lease the agent granted at ADD, kept by the plugin under the CNI
//   state dir, so that a DEL while the agent is down still knows the exact keys of the
//   attachment's forwards (no table listing). A cache: written without fsync, lost at worst.
// - release notes: a DEL made while the agent was down leaves one, durably, in the release spool;
//   the agent consumes the spool before it reconciles, so it never lays out again the forwards of
//   a pod that is gone.
// One file per attachment, named "<containerId>:<ifname>": both grammars (common/identifiers.h)
// exclude ':' and '/', so the name is a path component and no two keys share it.

#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/error.h"
#include "lease/lease.h"

namespace hostport::agent::api {

inline constexpr std::string_view kDefaultRecordDir = "/var/lib/cni/hostport";
inline constexpr std::string_view kDefaultReleaseSpool = "/var/lib/hostport/released";

/// "<containerId>:<ifname>"; kInvalidArgument when the key breaks its grammar.
Result<std::string> nodeFileName(const AttachmentKey& key);

/// Keeps the agent's answer for `lease.key` in `dir`.
Result<void> writeAttachmentRecord(const std::filesystem::path& dir, const Lease& lease);
/// The lease recorded for `key`; nullopt when there is none. kDecode for a damaged record.
Result<std::optional<Lease>> readAttachmentRecord(const std::filesystem::path& dir,
                                                  const AttachmentKey& key);
Result<void> removeAttachmentRecord(const std::filesystem::path& dir, const AttachmentKey& key);

/// Durably notes in `spool` that `key` was released while the agent was down.
Result<void> writeReleaseNote(const std::filesystem::path& spool, const AttachmentKey& key);

/// One note found in the spool: its key, or why it cannot be read.
struct ReleaseNote {
  std::filesystem::path path;
  Result<AttachmentKey> key;
};
/// Every note in `spool` (temporary files skipped), oldest name first; none when the spool does
/// not exist.
Result<std::vector<ReleaseNote>> readReleaseNotes(const std::filesystem::path& spool);

}  // namespace hostport::agent::api
