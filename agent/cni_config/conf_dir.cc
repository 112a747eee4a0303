#include "agent/cni_config/conf_dir.h"

#include <sys/stat.h>

#include <algorithm>
#include <cerrno>

#include "common/atomic_file.h"
#include "common/bounded_json.h"

namespace hostport::agent::cni_config {
namespace {

/// Far above any real config (Calico's is ~1 KiB); bounds what a broken installer can make us
/// read.
constexpr std::size_t kMaxConfBytes = 1 << 20;
constexpr int kMaxConfDepth = 64;

}  // namespace

std::optional<ConfFormat> confFormatOf(const std::filesystem::path& name) {
  const std::string file = name.filename().string();
  if (file.empty() || file.front() == '.') return std::nullopt;
  const auto extension = name.extension();
  if (extension == ".conflist") return ConfFormat::kConflist;
  if (extension == ".conf" || extension == ".json") return ConfFormat::kConf;
  return std::nullopt;
}

Result<Json> parseConf(std::string_view text, ConfFormat format) {
  HOSTPORT_TRY(Json document,
               parseBoundedOrderedJson(text, "config", kMaxConfBytes, kMaxConfDepth));
  if (!document.is_object()) return fail(ErrorCode::kDecode, "config: not a JSON object");
  if (format == ConfFormat::kConflist) {
    const auto plugins = document.find("plugins");
    if (plugins == document.end() || !plugins->is_array() || plugins->empty()) {
      return fail(ErrorCode::kDecode, "config: plugins is missing, empty or not an array");
    }
  } else {
    const auto type = document.find("type");
    if (type == document.end() || !type->is_string()) {
      return fail(ErrorCode::kDecode, "config: type is missing or not a string");
    }
  }
  return document;
}

Result<ConfDirScan> scanConfDir(const std::filesystem::path& dir) {
  ConfDirScan scan;
  std::error_code error;
  std::vector<std::filesystem::path> files;
  std::filesystem::directory_iterator entries(dir, error);
  if (error) {
    if (error == std::errc::no_such_file_or_directory) return scan;
    return failSystem(ErrorCode::kIo, "list " + dir.string(), error.value());
  }
  for (const auto& entry : entries) {
    if (confFormatOf(entry.path()) && entry.is_regular_file(error)) files.push_back(entry.path());
  }
  // Byte order, as Go's sort.Strings.
  std::ranges::sort(files, [](const auto& a, const auto& b) { return a.string() < b.string(); });
  for (const auto& path : files) {
    const ConfFormat format = *confFormatOf(path);
    auto version = readConfVersion(path);
    if (!version) {
      scan.unparseable.push_back({path, version.error().message});
      continue;
    }
    if (!*version) continue;  // gone since the listing
    auto document = parseConf((*version)->bytes, format);
    if (!document) {
      scan.unparseable.push_back({path, document.error().message});
      continue;
    }
    scan.chosen = ConfFile{path, format, std::move(*document), std::move(**version)};
    break;
  }
  return scan;
}

Result<std::optional<ConfVersion>> readConfVersion(const std::filesystem::path& path) {
  // The bytes decide; the identity is read first, so a write in between costs a retry at most.
  struct stat status {};
  if (::stat(path.c_str(), &status) != 0) {
    if (errno == ENOENT) return std::nullopt;
    return failSystem(ErrorCode::kIo, "stat " + path.string(), errno);
  }
  HOSTPORT_TRY(auto bytes, readSmallFile(path, kMaxConfBytes));
  if (!bytes) return std::nullopt;
  return ConfVersion{status.st_dev, status.st_ino, status.st_size,
                     status.st_mtim.tv_sec * 1'000'000'000LL + status.st_mtim.tv_nsec,
                     std::move(*bytes)};
}

Result<void> writeConf(const std::filesystem::path& path, const Json& document, mode_t mode,
                       const std::function<Result<void>()>& beforeRename) {
  return writeFileAtomically(path.parent_path(), path.filename().string(), document.dump(2) + "\n",
                             Durability::kDurable, mode, beforeRename);
}

mode_t confModeOf(const std::filesystem::path& path) {
  struct stat status {};
  if (::stat(path.c_str(), &status) != 0) return 0644;
  return status.st_mode & 07777;
}

}  // namespace hostport::agent::cni_config
