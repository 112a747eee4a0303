#pragma once
// The node's CNI configuration directory as the runtime reads it, and the one way we write a file
// there.
//
// Design note: libcni sorts `*.conf`, `*.conflist` and `*.json` by name and the runtime uses the
// first that loads. A file sorted before the one we would pick that does not parse is most often
// a primary's write in progress (Calico's install-cni and flannel's `cp -f` rewrite in place), so
// it is reported, and the caller waits instead of chaining into the wrong file.

#include <sys/types.h>

#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "agent/cni_config/conf_editor.h"
#include "common/error.h"

namespace hostport::agent::cni_config {

enum class ConfFormat { kConf, kConflist };

/// A config file as read: which file it was and its bytes. A plan made from it holds only while
/// the file is still this one. The bytes are compared too: an in-place rewrite of the same size
/// within one tick of the kernel's coarse file clock leaves inode, size and mtime as they were.
struct ConfVersion {
  dev_t device = 0;
  ino_t inode = 0;
  off_t size = 0;
  int64_t mtimeNs = 0;
  std::string bytes;

  bool operator==(const ConfVersion&) const = default;
};

struct ConfFile {
  std::filesystem::path path;
  ConfFormat format = ConfFormat::kConflist;
  Json document;
  ConfVersion version;  // what `document` was parsed from
};

struct UnparseableFile {
  std::filesystem::path path;
  std::string cause;
};

struct ConfDirScan {
  /// The file the runtime uses; nullopt when no file parses (or there is none yet).
  std::optional<ConfFile> chosen;
  /// Config files sorted before `chosen` (or all of them, without one) that do not load.
  std::vector<UnparseableFile> unparseable;
};

/// The format a file name stands for in libcni; nullopt for names it ignores (a leading dot or
/// any other suffix, such as our temporary files and Cilium's `*.cilium_bak`).
std::optional<ConfFormat> confFormatOf(const std::filesystem::path& name);

/// Parses a config as libcni would load it: a JSON object; a conflist needs a non-empty `plugins`
/// array, a conf a string `type`. kDecode naming what is wrong.
Result<Json> parseConf(std::string_view text, ConfFormat format);

/// Reads `dir` in libcni's order. kIo when the directory cannot be listed; a missing directory is
/// an empty scan (the primary has not installed yet).
Result<ConfDirScan> scanConfDir(const std::filesystem::path& dir);

/// `path` as it is now; nullopt when it does not exist. kDecode when it is too large to be a
/// config.
Result<std::optional<ConfVersion>> readConfVersion(const std::filesystem::path& path);

/// Writes `document` as `path` atomically and durably (temp file in the same dir, fsync, rename,
/// fsync of the dir), with `mode`: the runtime reloads on the rename and never sees half a file.
/// A failed `beforeRename` leaves `path` as it was (writeFileAtomically).
Result<void> writeConf(const std::filesystem::path& path, const Json& document, mode_t mode,
                       const std::function<Result<void>()>& beforeRename = {});

/// The permission bits of `path`, or 0644 (what installers write) when it cannot be read.
mode_t confModeOf(const std::filesystem::path& path);

}  // namespace hostport::agent::cni_config
