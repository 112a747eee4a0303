#pragma once
// GoogleTest glue for CNI plugin tests on a simulated node: a fixture that builds a fresh
// CniNode per test (so tests run in parallel) and matchers for traffic replies. The Result
// assertions (ASSERT_OK and friends) come with it from result_assertions.h.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include "tests/support/cni_node.h"
#include "tests/support/nft_state.h"
#include "tests/support/result_assertions.h"
#include "tests/support/traffic.h"

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
