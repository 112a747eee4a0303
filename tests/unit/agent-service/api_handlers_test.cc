// The control socket's handlers (agent/service/api_handlers.h), one per route, over a real
// service and store: what each route answers, and that errors leave through the one table.

#include "agent/service/api_handlers.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <future>

#include "agent/api/json_codec.h"
#include "agent/api/routes.h"
#include "agent/service/recovery.h"
#include "tests/fakes/fake_port_probe.h"
#include "tests/support/result_assertions.h"
#include "tests/unit/agent-store/store_test_util.h"

namespace hostport::agent {
namespace {

using ::testing::HasSubstr;

HttpRequest httpRequest(std::string method, std::string target, std::string body = {}) {
  auto parsed = api::parseTarget(target);
  EXPECT_TRUE(parsed) << target;
  HttpRequest request;
  request.method = std::move(method);
  request.path = target.substr(0, target.find('?'));
  if (parsed) {
    request.segments = parsed->segments;
    request.query.insert(parsed->query.begin(), parsed->query.end());
  }
  request.body = std::move(body);
  return request;
}

std::string allocationBody(const std::string& containerId, const std::string& ifname = "eth0") {
  AllocationRequest request;
  request.key = {containerId, ifname};
  request.pod = {"ns", "pod-" + containerId, ""};
  request.dynamics.push_back({"web", 80, 1, PortProtocol::kTcp});
  return api::dumpBody(api::toJson(request));
}

class ApiHandlersTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto state =
        recoverState(dir_.path(),
                     {{"default", {{30000, 30009}}, {}, Strategy::kLowest},
                      {"media", {{20000, 20099}}, {PortProtocol::kUdp}, Strategy::kRandom}},
                     [] { return uint64_t{3}; });
    ASSERT_OK(state);
    store_ = std::move(state->store);
    service_.emplace(
        std::move(state->allocator), *store_,
        [this](const AllocationRequest&) -> Result<std::unique_ptr<PortProbe>> {
          return std::make_unique<FakePortProbe>(probe_);
        },
        metrics_);
    registerApiHandlers(router_, *service_, metrics_, ready_);
  }

  void TearDown() override {
    store_.reset();
    service_.reset();
  }

  api::HttpResponse call(const HttpRequest& request) {
    std::promise<api::HttpResponse> answer;
    router_.dispatch(
        request, [&answer](api::HttpResponse response) { answer.set_value(std::move(response)); });
    auto future = answer.get_future();
    if (future.wait_for(std::chrono::seconds(30)) != std::future_status::ready) {
      ADD_FAILURE() << "no answer to " << request.method << " " << request.path;
      std::abort();
    }
    return future.get();
  }

  nlohmann::json jsonOf(const api::HttpResponse& response) {
    EXPECT_EQ(response.contentType, "application/json");
    return nlohmann::json::parse(response.body, nullptr, /*allow_exceptions=*/false);
  }

  store::testing::TempDir dir_;
  FakePortProbe probe_;
  Metrics metrics_;
  std::unique_ptr<store::LeaseStore> store_;
  std::optional<AgentService> service_;
  Router router_;
  std::atomic<bool> ready_{true};
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
    ASSERT_EQ(call(httpRequest("POST", "/v1/attachments", allocationBody(id, ifname))).status,
              200u);
  }
  const auto listed = call(httpRequest("GET", "/v1/attachments?pod=pod-c1"));
  ASSERT_OK_AND_ASSIGN(auto leases, api::leaseListFromJson(jsonOf(listed), "leases"));
  EXPECT_EQ(leases.size(), 2u);

  const auto container = call(httpRequest("DELETE", "/v1/attachments?containerId=c1"));
  ASSERT_EQ(container.status, 200u);
  ASSERT_OK_AND_ASSIGN(auto released, api::leaseListFromJson(jsonOf(container), "released"));
  EXPECT_EQ(released.size(), 2u);

  const auto gc =
      call(httpRequest("POST", "/v1/gc", api::dumpBody(api::gcRequestBody({{"c2", "eth0"}}))));
  ASSERT_EQ(gc.status, 200u) << gc.body;
  ASSERT_OK_AND_ASSIGN(auto collected, api::leaseListFromJson(jsonOf(gc), "released"));
  ASSERT_EQ(collected.size(), 1u);
  EXPECT_EQ(collected[0].key.containerId, "c3");
}

TEST_F(ApiHandlersTest, PoolsAnswersTheRowsTheServiceComputes) {
  ASSERT_EQ(call(httpRequest("POST", "/v1/attachments", allocationBody("c1"))).status, 200u);
  const auto pools = call(httpRequest("GET", "/v1/pools"));
  ASSERT_EQ(pools.status, 200u);
  EXPECT_EQ(jsonOf(pools), api::poolsBody(service_->poolRows()));
  ASSERT_OK_AND_ASSIGN(auto rows, api::poolsFromJson(jsonOf(pools)));
  EXPECT_EQ(rows,
            (std::vector<api::PoolUsageRow>{{"default", 10, 1, 9, "lowest", {{30000, 30009}}},
                                            {"media", 100, 0, 100, "random", {{20000, 20099}}}}));
}

TEST_F(ApiHandlersTest, RefusesMalformedKeysAndBodiesThroughTheErrorTable) {
  const auto badId = call(httpRequest("GET", "/v1/attachments/bad%20id/eth0"));
  EXPECT_EQ(badId.status, 400u);
  EXPECT_EQ(jsonOf(badId)["message"], "containerId: \"bad id\" is not a container ID");
  const auto badIfname = call(httpRequest("DELETE", "/v1/attachments/c1/a%2Fb"));
  EXPECT_EQ(badIfname.status, 400u);
  EXPECT_EQ(jsonOf(badIfname)["message"], "ifname: \"a/b\" is not an interface name");
  const auto badQuery = call(httpRequest("DELETE", "/v1/attachments?containerId=x%0A"));
  EXPECT_EQ(badQuery.status, 400u);
  EXPECT_EQ(jsonOf(badQuery)["code"], "invalid_argument");
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
  ready_ = false;
  const auto notReady = call(httpRequest("GET", "/readyz"));
  EXPECT_EQ(notReady.status, 503u);
  EXPECT_EQ(notReady.body, "not ready\n");
  const auto metrics = call(httpRequest("GET", "/metrics"));
  EXPECT_EQ(metrics.status, 200u);
  EXPECT_EQ(metrics.contentType, "text/plain; version=0.0.4");
  EXPECT_THAT(metrics.body, HasSubstr("\nhostport_leases 0\n"));
}

}  // namespace
}  // namespace hostport::agent
