// The control socket's handlers (agent/service/api_handlers.h), one per route, over a real
// service and store: what each route answers, and that errors leave through the one table.

#include "agent/service/api_handlers.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "tests/support/temp_dir.h"
#include "tests/unit/agent/service/routed_service.h"

namespace hostport::agent::service {
namespace {

using ::testing::HasSubstr;

using testing::allocationBody;
using testing::httpRequest;

class ApiHandlersTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_OK(agent_.start(
        dir_.path(), {{"default", {{30000, 30009}}, {}, core::Strategy::kLowest},
                      {"media", {{20000, 20099}}, {PortProtocol::kUdp}, core::Strategy::kRandom}}));
  }

  api::HttpResponse call(const server::HttpRequest& request) { return agent_.call(request); }

  nlohmann::json jsonOf(const api::HttpResponse& response) {
    EXPECT_EQ(response.contentType, "application/json");
    return nlohmann::json::parse(response.body, nullptr, /*allow_exceptions=*/false);
  }

  test::TempDir dir_;
  testing::RoutedService agent_;
};

TEST_F(ApiHandlersTest, AllocatesGetsAndReleasesOneAttachment) {
  const auto granted = call(httpRequest("POST", "/v1/attachments", allocationBody("c1")));
  ASSERT_EQ(granted.status, 200u) << granted.body;
  ASSERT_OK_AND_ASSIGN(Lease lease, api::leaseFromJson(jsonOf(granted)));
  EXPECT_EQ(lease.ports.at(0).hostPort, 30000);

  const auto got = call(httpRequest("GET", "/v1/attachments/c1/eth0"));
  ASSERT_EQ(got.status, 200u);
  ASSERT_OK_AND_ASSIGN(Lease gotLease, api::leaseFromJson(jsonOf(got)));
  EXPECT_EQ(gotLease, lease);

  const auto released = call(httpRequest("DELETE", "/v1/attachments/c1/eth0"));
  ASSERT_EQ(released.status, 200u);
  ASSERT_OK_AND_ASSIGN(std::optional<Lease> releasedLease, api::releasedFromJson(jsonOf(released)));
  EXPECT_EQ(releasedLease, lease);

  const auto gone = call(httpRequest("GET", "/v1/attachments/c1/eth0"));
  EXPECT_EQ(gone.status, 404u);
  EXPECT_EQ(jsonOf(gone)["message"], "no lease for c1/eth0");
  const auto again = call(httpRequest("DELETE", "/v1/attachments/c1/eth0"));
  ASSERT_EQ(again.status, 200u);
  EXPECT_EQ(jsonOf(again), nlohmann::json::parse(R"({"released": null})"));
}

TEST_F(ApiHandlersTest, ListsFiltersAndReleasesByContainerAndByGc) {
  for (const auto& [id, ifname] : std::vector<std::pair<std::string, std::string>>{
           {"c1", "eth0"}, {"c1", "net1"}, {"c2", "eth0"}, {"c3", "eth0"}}) {
    ASSERT_EQ(
        call(httpRequest("POST", "/v1/attachments", allocationBody(id, ifname, "kube"))).status,
        200u);
  }
  const auto listed = call(httpRequest("GET", "/v1/attachments?pod=pod-c1"));
  ASSERT_OK_AND_ASSIGN(auto leases, api::leaseListFromJson(jsonOf(listed), "leases"));
  EXPECT_EQ(leases.size(), 2u);

  const auto container = call(httpRequest("DELETE", "/v1/attachments?containerId=c1"));
  ASSERT_EQ(container.status, 200u);
  ASSERT_OK_AND_ASSIGN(auto released, api::leaseListFromJson(jsonOf(container), "released"));
  EXPECT_EQ(released.size(), 2u);

  const auto gc = call(
      httpRequest("POST", "/v1/gc", api::dumpBody(api::gcRequestBody({"kube", {{"c2", "eth0"}}}))));
  ASSERT_EQ(gc.status, 200u) << gc.body;
  ASSERT_OK_AND_ASSIGN(auto collected, api::leaseListFromJson(jsonOf(gc), "released"));
  ASSERT_EQ(collected.size(), 1u);
  EXPECT_EQ(collected[0].key.containerId, "c3");
}

TEST_F(ApiHandlersTest, PoolsAnswersTheRowsTheServiceComputes) {
  ASSERT_EQ(call(httpRequest("POST", "/v1/attachments", allocationBody("c1"))).status, 200u);
  const auto pools = call(httpRequest("GET", "/v1/pools"));
  ASSERT_EQ(pools.status, 200u);
  EXPECT_EQ(jsonOf(pools), api::poolsBody(agent_.service().poolRows()));
  ASSERT_OK_AND_ASSIGN(auto rows, api::poolsFromJson(jsonOf(pools)));
  api::PoolUsageRow used{"default", 10, 1, 9, "lowest", {{30000, 30009}}};
  used.namespaceUsage = {{"ns", 1}};
  EXPECT_EQ(rows, (std::vector<api::PoolUsageRow>{
                      used, {"media", 100, 0, 100, "random", {{20000, 20099}}}}));
}

TEST_F(ApiHandlersTest, RefusesMalformedKeysAndBodiesThroughTheErrorTable) {
  const auto badId = call(httpRequest("GET", "/v1/attachments/bad%20id/eth0"));
  EXPECT_EQ(badId.status, 400u);
  EXPECT_EQ(jsonOf(badId)["message"],
            "containerId: \"bad id\" must be 1-100 characters of [A-Za-z0-9_.-], starting "
            "alphanumeric");
  const auto badIfname = call(httpRequest("DELETE", "/v1/attachments/c1/a%2Fb"));
  EXPECT_EQ(badIfname.status, 400u);
  EXPECT_EQ(jsonOf(badIfname)["message"], "ifname: \"a/b\" must not contain '/'");
  const auto badQuery = call(httpRequest("DELETE", "/v1/attachments?containerId=x%0A"));
  EXPECT_EQ(badQuery.status, 400u);
  EXPECT_EQ(jsonOf(badQuery)["code"], "invalid_argument");
  EXPECT_EQ(jsonOf(badQuery)["message"],
            "containerId: \"x\\n\" must be 1-100 characters of [A-Za-z0-9_.-], starting "
            "alphanumeric");
  const auto badBody = call(httpRequest("POST", "/v1/attachments", "{"));
  EXPECT_EQ(badBody.status, 400u);
  const auto badGc = call(httpRequest("POST", "/v1/gc", "[]"));
  EXPECT_EQ(badGc.status, 400u);
  EXPECT_THAT(call(httpRequest("GET", "/metrics")).body,
              HasSubstr("hostport_errors_total{code=\"invalid_argument\"} "));
}

TEST_F(ApiHandlersTest, HealthAndReadinessAreText) {
  const auto health = call(httpRequest("GET", "/healthz"));
  EXPECT_EQ(health.status, 200u);
  EXPECT_EQ(health.body, "ok\n");
  EXPECT_EQ(call(httpRequest("GET", "/readyz")).body, "ready\n");
  agent_.ready = false;
  const auto notReady = call(httpRequest("GET", "/readyz"));
  EXPECT_EQ(notReady.status, 503u);
  EXPECT_EQ(notReady.body, "not ready\n");
  const auto metrics = call(httpRequest("GET", "/metrics"));
  EXPECT_EQ(metrics.status, 200u);
  EXPECT_EQ(metrics.contentType, "text/plain; version=0.0.4");
  EXPECT_THAT(metrics.body, HasSubstr("\nhostport_leases 0\n"));
}

}  // namespace
}  // namespace hostport::agent::service
