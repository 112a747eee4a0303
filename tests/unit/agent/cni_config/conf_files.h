#pragma once
// A temp conf dir, bin dir and state dir for the chaining tests, and the file operations the
// primaries make.

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "agent/cni_config/chain_files.h"
#include "tests/support/file_text.h"
#include "tests/support/temp_dir.h"
#include "tests/support/wait.h"

namespace hostport::agent::cni_config::test {

struct ConfDirs {
  hostport::test::TempDir root;
  std::filesystem::path confDir = root / "net.d";
  std::filesystem::path binDir = root / "bin";
  std::filesystem::path stateDir = root / "state";

  ConfDirs() {
    std::filesystem::create_directories(confDir);
    std::filesystem::create_directories(binDir);
    std::ofstream(binDir / "hostport") << "#!/bin/sh\n";
    std::filesystem::permissions(binDir / "hostport", std::filesystem::perms::owner_all);
  }
  ChainPaths paths() const { return {confDir, stateDir}; }
  std::filesystem::path conf(std::string_view name) const { return confDir / name; }
};

using hostport::test::readText;

/// As flannel's `cp -f` and Calico's install-cni: truncate and write in place.
inline void writeInPlace(const std::filesystem::path& path, std::string_view text) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(::write(fd, text.data(), text.size()), static_cast<ssize_t>(text.size()));
  ::close(fd);
}

/// As an installer that writes a temp file and renames it over the config.
inline void writeByRename(const std::filesystem::path& path, std::string_view text) {
  const auto tmp = path.parent_path() / ".primary.tmp";
  writeInPlace(tmp, text);
  std::filesystem::rename(tmp, path);
}

/// `text` with `from` replaced by `to` of the same length: a primary's next version of its file,
/// which an in-place rewrite can leave with the same inode, size and mtime.
inline std::string sameSizeEdit(std::string_view text, std::string_view from, std::string_view to) {
  std::string edited(text);
  const auto at = edited.find(from);
  if (at == std::string::npos || from.size() != to.size()) {
    ADD_FAILURE() << "no same-size edit of " << from;
    return edited;
  }
  return edited.replace(at, from.size(), to);
}

/// The names in `dir`, sorted: temp files included.
inline std::vector<std::string> namesIn(const std::filesystem::path& dir) {
  std::vector<std::string> names;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    names.push_back(entry.path().filename().string());
  }
  std::sort(names.begin(), names.end());
  return names;
}

/// The document in `path`, or null when it does not exist or does not parse.
inline Json readJson(const std::filesystem::path& path) {
  return Json::parse(readText(path), nullptr, /*allow_exceptions=*/false);
}

using hostport::test::waitUntil;

}  // namespace hostport::agent::cni_config::test
