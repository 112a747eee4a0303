// `hostportctl pools --cluster`, the built binary, against the fake API server: each cluster pool
// of the agents' file with its size, claims and free ports, and each claim's port, holder and
// entry; node pools and other Leases left out; a cluster it cannot reach is exit 3.
#include <gtest/gtest.h>

#include <fstream>

#include "admission/port_claim.h"
#include "tests/fakes/fake_kube_apiserver.h"
#include "tests/support/result_assertions.h"
#include "tests/support/subprocess.h"
#include "tests/support/temp_dir.h"

#ifndef HOSTPORTCTL_PATH
#error "HOSTPORTCTL_PATH must name the hostportctl binary"
#endif

namespace hostport::test {
namespace {

using nlohmann::json;

constexpr std::string_view kLeases =
    "/apis/coordination.k8s.io/v1/namespaces/hostport-system/leases/";

TEST(HostportctlClusterPoolsTest, ListsEachClusterPoolsClaimsFromTheApiServer) {
  TempDir dir;
  ASSERT_OK_AND_ASSIGN(auto api, kube::FakeKubeApiServer::start());
  ASSERT_OK_AND_ASSIGN(const auto kubeconfig, api->writeKubeconfig(dir.path()));
  const std::string config = dir.path() + "/agent.yaml";
  std::ofstream(config) << "pools:\n  default:\n    ranges: ['40000-40999']\n"
                           "  global:\n    ranges: ['42000-42099']\n    scope: cluster\n";
  for (const auto& claim :
       {admission::PortClaim{"global", 42001, "games/arena-0", "game", 42001, 1, ""},
        admission::PortClaim{"global", 42010, "games/voice-1", "rtp", 42010, 2, ""},
        admission::PortClaim{"global", 42011, "games/voice-1", "rtp", 42010, 2, ""}}) {
    ASSERT_OK(api->putObject(std::string(kLeases) + claim.leaseName(),
                             admission::claimLease(claim, "hostport-system", {})));
  }
  ASSERT_OK(api->putObject(std::string(kLeases) + "hostport-admission-claims",
                           {{"apiVersion", "coordination.k8s.io/v1"},
                            {"kind", "Lease"},
                            {"metadata", {{"name", "hostport-admission-claims"}}},
                            {"spec", {{"holderIdentity", "replica-a"}}}}));

  const std::vector<std::string> argv = {HOSTPORTCTL_PATH,   "pools", "--cluster",
                                         "--config",         config,  "--kubeconfig",
                                         kubeconfig.string()};
  ASSERT_OK_AND_ASSIGN(const auto table, runCommand({argv}));
  ASSERT_TRUE(table.ok()) << table.describe();
  EXPECT_NE(table.out.find("global  100   3        97"), std::string::npos) << table.out;
  EXPECT_NE(table.out.find("42010  games/voice-1  rtp (42010+2)"), std::string::npos) << table.out;
  EXPECT_EQ(table.out.find("default"), std::string::npos) << "a node pool has no claims";

  auto withJson = argv;
  withJson.push_back("--json");
  ASSERT_OK_AND_ASSIGN(const auto listed, runCommand({withJson}));
  ASSERT_TRUE(listed.ok()) << listed.describe();
  const json pools = json::parse(listed.out);
  ASSERT_EQ(pools.size(), 1u);
  EXPECT_EQ(pools[0]["pool"], "global");
  EXPECT_EQ(pools[0]["claimed"], 3);
  EXPECT_EQ(pools[0]["free"], 97);
  EXPECT_EQ(pools[0]["claims"][0], (json{{"port", 42001},
                                         {"holder", "games/arena-0"},
                                         {"entry", "game"},
                                         {"first", 42001},
                                         {"count", 1}}));

  api.reset();  // the cluster is gone
  ASSERT_OK_AND_ASSIGN(const auto unreachable, runCommand({argv}));
  EXPECT_EQ(unreachable.exitCode, 3) << unreachable.describe();
}

}  // namespace
}  // namespace hostport::test
