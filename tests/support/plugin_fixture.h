#pragma once
// GoogleTest glue for CNI plugin tests on a simulated node: a fixture that builds a fresh
// CniNode per test (so tests run in parallel), assertion macros for Result values, and matchers
// for traffic replies.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include "tests/support/cni_node.h"
#include "tests/support/nft_state.h"
#include "tests/support/traffic.h"

#define HPT_CONCAT_INNER(a, b) a##b
#define HPT_CONCAT(a, b) HPT_CONCAT_INNER(a, b)

/// Asserts that a Result holds a value and prints its error otherwise.
#define ASSERT_OK(expr)                                                  \
  do {                                                                   \
    const auto& hpt_result_ = (expr);                                    \
    ASSERT_TRUE(hpt_result_.has_value()) << hpt_result_.error().message; \
  } while (false)

/// `ASSERT_OK_AND_ASSIGN(auto x, f())`: declares x from the value, or fails the test.
#define ASSERT_OK_AND_ASSIGN(lhs, expr) \
  ASSERT_OK_AND_ASSIGN_IMPL(HPT_CONCAT(hpt_result_, __LINE__), lhs, expr)
#define ASSERT_OK_AND_ASSIGN_IMPL(tmp, lhs, expr)                       \
  auto tmp = (expr);                                                    \
  ASSERT_TRUE(tmp.has_value()) << #expr << ": " << tmp.error().message; \
  lhs = std::move(*tmp)

namespace hostport::test {

void PrintTo(const Result<Reply>& reply, std::ostream* os);
void PrintTo(const CommandResult& result, std::ostream* os);

/// The request reached the server whose id is `id`.
MATCHER_P(RepliesFrom, id, "is answered by '" + std::string(id) + "'") {
  if (!arg.has_value()) {
    *result_listener << "failed: " << arg.error().message;
    return false;
  }
  *result_listener << "answered by '" << arg->id << "' seeing peer " << arg->peer;
  return arg->id == id;
}

/// The request reached no server.
MATCHER(IsUnreachable, "gets no answer") {
  if (arg.has_value()) {
    *result_listener << "answered by '" << arg->id << "' seeing peer " << arg->peer;
    return false;
  }
  *result_listener << "failed: " << arg.error().message;
  return true;
}

/// A CommandResult that exited 0.
MATCHER(Succeeded, "exits 0") { return arg.ok(); }

/// A CommandResult that failed with a CNI error object whose code matches `codeMatcher`.
MATCHER_P(FailsWithCode, codeMatcher,
          "fails with a CNI error whose code " + ::testing::DescribeMatcher<int>(codeMatcher)) {
  if (arg.ok() || arg.timedOut) return false;
  auto error = parseCniError(arg.out);
  if (!error) {
    *result_listener << error.error().message;
    return false;
  }
  return ::testing::Matches(codeMatcher)(error->code);
}

/// A fresh simulated node per test, with the plugin under test chained after `bridge`.
class PluginFixture : public ::testing::Test {
 protected:
  /// `builtPluginPath` is the plugin built by this tree (HOSTPORT_PLUGIN_PATH); the environment
  /// variable HOSTPORT_TEST_PLUGIN replaces it.
  explicit PluginFixture(std::string builtPluginPath, bool ipv6 = false)
      : pluginPath_(pluginUnderTest(builtPluginPath)), ipv6_(ipv6) {}

  void SetUp() override;

  CniNode& node() { return *node_; }
  const Netns& nodeNetns() { return node_->node(); }
  const Netns& outside() { return node_->outside(); }

  /// Creates a pod and runs the chain's ADD; records a failure and returns nullptr when anything
  /// fails. Use as `Pod* pod = addPod(...); ASSERT_NE(pod, nullptr);`.
  Pod* addPod(const std::string& label, const AddOptions& options);
  /// A pod whose network (bridge) is up but for which the plugin under test has not run.
  Pod* bridgedPod(const std::string& label);
  /// Starts a server in the pod that answers as "<label> tcp" or "<label> udp".
  std::unique_ptr<Server> serve(const Pod& pod, Transport transport, uint16_t port);

  /// The hostport entries of the node (failing the test when nft cannot be read).
  std::vector<NftEntry> entries();

  std::string pluginPath_;
  bool ipv6_;
  std::unique_ptr<CniNode> node_;
};

}  // namespace hostport::test
