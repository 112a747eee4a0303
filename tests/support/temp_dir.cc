#include "tests/support/temp_dir.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <stdlib.h>
#include <unistd.h>

#include <cerrno>
#include <mutex>

namespace hostport::test {
namespace {

constexpr std::string_view kPrefix = "hpt-";

std::string baseDir() {
  const char* base = std::getenv("TMPDIR");
  return base != nullptr && *base != '\0' ? base : "/tmp";
}

// Removes <base>/hpt-<pid>-* directories of processes that no longer exist.
void reapStaleTempDirs(const std::string& base) {
  std::error_code error;
  for (const auto& entry : std::filesystem::directory_iterator(base, error)) {
    if (entry.is_directory(error) && isLeftByAGoneProcess(entry.path().filename().string())) {
      std::filesystem::remove_all(entry.path(), error);
    }
  }
}

}  // namespace

bool isLeftByAGoneProcess(std::string_view name) {
  if (!name.starts_with(kPrefix)) return false;
  const std::string_view rest = name.substr(kPrefix.size());
  const auto dash = rest.find('-');
  if (dash == std::string_view::npos || dash == 0 || dash > 9) return false;
  pid_t pid = 0;
  for (const char c : rest.substr(0, dash)) {
    if (c < '0' || c > '9') return false;
    pid = pid * 10 + (c - '0');
  }
  return pid == ::getpid() || (::kill(pid, 0) != 0 && errno == ESRCH);
}

TempDir::TempDir() {
  auto made = create();
  if (!made) {
    ADD_FAILURE() << made.error().message;
    return;
  }
  path_ = std::exchange(made->path_, {});
}

Result<TempDir> TempDir::create() {
  const std::string base = baseDir();
  static std::once_flag reaped;
  std::call_once(reaped, [&] { reapStaleTempDirs(base); });
  std::string pattern = base + "/hpt-" + std::to_string(::getpid()) + "-XXXXXX";
  if (::mkdtemp(pattern.data()) == nullptr)
    return failSystem(ErrorCode::kIo, "mkdtemp " + pattern, errno);
  return TempDir(pattern);
}

TempDir::~TempDir() {
  if (path_.empty()) return;
  std::error_code ignored;
  std::filesystem::remove_all(path_, ignored);
}

}  // namespace hostport::test
