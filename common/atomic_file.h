#pragma once
// Files that the plugin and the agent hand each other (attachment records, release notes, the
// CNI config, the plugin binary itself): written whole or not at all, through a temporary name and
// rename(2), so a reader never sees a torn file, whichever process dies when.

#include <sys/types.h>

#include <cstddef>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include "common/error.h"

namespace hostport {

enum class Durability {
  kCache,    // survives a process crash, may be lost with the machine: no fsync
  kDurable,  // on disk before this returns: the file and its directory entry are fsynced
};

/// Writes `bytes` as dir/name, replacing what was there. `dir` is created (mode 0700) when
/// missing. The temporary file is dir/.name.tmp-<pid>, which readers skip (a leading dot; and
/// its suffix is no CNI config's). The file gets exactly `mode`, whatever the umask. A failed
/// `beforeRename` (run once the temp file is complete, just before the rename) leaves dir/name as
/// it was, removes the temp file and is returned.
Result<void> writeFileAtomically(const std::filesystem::path& dir, std::string_view name,
                                 std::string_view bytes, Durability durability, mode_t mode = 0600,
                                 const std::function<Result<void>()>& beforeRename = {});

/// Copies `source` to dir/name the same way: a reader (a runtime exec'ing a plugin) sees the old
/// file or the whole new one, never a partial copy.
Result<void> copyFileAtomically(const std::filesystem::path& source,
                                const std::filesystem::path& dir, std::string_view name,
                                Durability durability, mode_t mode);

/// The whole file, at most `maxBytes`; nullopt when it does not exist. kDecode when larger.
Result<std::optional<std::string>> readSmallFile(const std::filesystem::path& path,
                                                 std::size_t maxBytes);

/// Removes `path`; a file that is not there is success.
Result<void> removeFile(const std::filesystem::path& path);

}  // namespace hostport
