#pragma once
// Network namespaces for root tests, and running code inside one. There are two kinds:
// - inPrivateNetns(fn): an anonymous netns of one thread, for a test that only needs to be away
//   from the host (its own sockets, sysctls or nft ruleset). It dies with the thread and the last
//   socket made in it.
// - Netns: a named one (`ip netns add`), for a test that also runs programs in it, links it to
//   another netns, or starts an agent in it.
//
// setns() and unshare() of CLONE_NEWNET change only the calling thread, so code that must run
// inside a netns runs on a fresh std::thread that enters it and then exits; the test's own
// threads never move. A socket keeps the netns it was created in, so a socket made that way can
// be used from any thread afterwards.

#include <gtest/gtest.h>

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>

#include "common/error.h"

namespace hostport::test {

/// True when the process can create network namespaces (root). Tests skip otherwise, through
/// HOSTPORT_SKIP_UNLESS_ROOT().
bool haveRoot();

/// Runs `fn` on a fresh thread that has unshared a private network namespace and brought its `lo`
/// up. An error, with `fn` not run, when that fails: use as `ASSERT_OK(inPrivateNetns(...))`.
[[nodiscard]] Result<void> inPrivateNetns(const std::function<void()>& fn);

/// A unique name for this process: "<tag>-<pid>-<counter>", at most 15 characters so it is also
/// usable as a link name. `tag` is cut to fit.
std::string uniqueName(std::string_view tag);

/// Runs `fn` on a dedicated thread that has joined the netns at `netnsPath`.
Result<void> runInNetnsPath(const std::string& netnsPath, const std::function<void()>& fn);

/// A named network namespace (`ip netns add`), deleted with everything in it on destruction.
class Netns {
 public:
  /// Creates "hpt-<pid>-<n>" (a new, empty netns with `lo` down) and brings `lo` up. Namespaces
  /// left behind by an earlier run of this suite whose process is gone are removed first.
  static Result<Netns> create();

  Netns(Netns&& other) noexcept : name_(std::exchange(other.name_, {})) {}
  Netns& operator=(Netns&& other) noexcept;
  Netns(const Netns&) = delete;
  Netns& operator=(const Netns&) = delete;
  ~Netns();

  const std::string& name() const { return name_; }
  std::string path() const { return "/run/netns/" + name_; }

  /// Runs `fn` inside this netns on its own thread and returns what it returns.
  template <typename Fn>
  auto run(Fn&& fn) const -> Result<std::invoke_result_t<Fn>> {
    using T = std::invoke_result_t<Fn>;
    if constexpr (std::is_void_v<T>) {
      return runInNetnsPath(path(), std::forward<Fn>(fn));
    } else {
      std::optional<T> value;
      HOSTPORT_TRY_VOID(runInNetnsPath(path(), [&] { value.emplace(fn()); }));
      return std::move(*value);
    }
  }

  /// `ip -n <name> <args...>`; the error holds ip's output.
  Result<std::string> ip(const std::vector<std::string>& args) const;
  /// Runs a program inside this netns and fails unless it exits 0 (see runOk).
  Result<std::string> exec(const std::vector<std::string>& argv) const;

 private:
  explicit Netns(std::string name) : name_(std::move(name)) {}
  std::string name_;
};

}  // namespace hostport::test

/// Skips the running test unless it can create network namespaces; call it first in a TEST body or
/// a fixture's SetUp. CI runs as root, so nothing skips there.
#define HOSTPORT_SKIP_UNLESS_ROOT()                              \
  do {                                                           \
    if (!::hostport::test::haveRoot()) {                         \
      GTEST_SKIP() << "needs root to create network namespaces"; \
    }                                                            \
  } while (false)
