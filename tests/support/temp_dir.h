#pragma once
// Temporary directories for tests, and telling which of the test suite's leftovers (namespaces,
// directories) belong to a process that is gone.

#include <filesystem>
#include <string>
#include <string_view>
#include <utility>

#include "common/error.h"

namespace hostport::test {

/// True for "hpt-<pid>-..." when no process <pid> exists any more, or when <pid> is this process
/// (which made nothing yet when it looks): what a test killed by a timeout left behind. Anything
/// else, a live process's names included, is false.
bool isLeftByAGoneProcess(std::string_view name);

/// A temporary directory ($TMPDIR or /tmp, "hpt-<pid>-XXXXXX"), removed recursively on
/// destruction. Directories left by a process that is gone are removed on first use.
class TempDir {
 public:
  /// For a fixture member: makes the directory, or fails the running test.
  TempDir();
  /// For code that passes errors on.
  static Result<TempDir> create();

  TempDir(TempDir&& other) noexcept : path_(std::exchange(other.path_, {})) {}
  TempDir& operator=(TempDir&&) = delete;
  TempDir(const TempDir&) = delete;
  ~TempDir();

  const std::string& path() const { return path_; }
  std::filesystem::path operator/(std::string_view name) const {
    return std::filesystem::path(path_) / name;
  }

 private:
  explicit TempDir(std::string path) : path_(std::move(path)) {}
  std::string path_;
};

}  // namespace hostport::test
