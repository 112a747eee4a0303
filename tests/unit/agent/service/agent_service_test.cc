// AgentService (agent/service/agent_service.h): the allocator made durable through a real
// LeaseStore in a temp dir, with a fake PortProbe for the host's sockets and the store's FileOps
// seam for disk failures. Every acknowledged change must survive reopening the store.

#include "agent/service/agent_service.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cerrno>
#include <fstream>
#include <future>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "agent/daemon/recovery.h"
#include "tests/fakes/fake_host_network.h"
#include "tests/fakes/fake_port_probe.h"
#include "tests/fakes/fake_ruleset.h"
#include "tests/fakes/faulty_file_ops.h"
#include "tests/support/log_capture.h"
#include "tests/support/result_assertions.h"
#include "tests/support/temp_dir.h"

namespace hostport::agent::service {
namespace {

using log::testing::LogCapture;
using store::FaultyFileOps;
using store::LeaseStore;
using store::StoreOptions;
using test::TempDir;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using Op = FaultyFileOps::Op;

constexpr auto kWait = std::chrono::seconds(30);

std::vector<core::PoolSpec> pools(uint32_t reuseDelaySeconds = core::kDefaultReuseDelaySeconds) {
  return {{"default", {{30000, 30009}}, {}, core::Strategy::kLowest, reuseDelaySeconds},
          {"media",
           {{20000, 20099}},
           {PortProtocol::kUdp},
           core::Strategy::kLowest,
           reuseDelaySeconds}};
}

AllocationRequest request(const std::string& containerId, const std::string& ns,
                          const std::string& pod, std::string ifname = "eth0") {
  AllocationRequest r;
  r.key = {containerId, std::move(ifname)};
  r.pod = {ns, pod, "uid-" + containerId};
  r.netns = "/run/netns/" + containerId;
  r.dynamics.push_back({"web", 80, 1, PortProtocol::kTcp});
  return r;
}

/// `r` with the forwarding a plugin sends at ADD on CNI network `network`: what GC is scoped by.
AllocationRequest onNetwork(AllocationRequest r, const std::string& network) {
  r.forwarding = Forwarding{.network = network};
  return r;
}

/// Waits for an async result; a missing callback fails the test instead of hanging it.
template <typename T>
class Waiter {
 public:
  std::function<void(T)> callback() {
    return [this](T value) { promise_.set_value(std::move(value)); };
  }
  T get() {
    auto future = promise_.get_future();
    if (future.wait_for(kWait) != std::future_status::ready) {
      ADD_FAILURE() << "the callback never came";
      std::abort();
    }
    return future.get();
  }

 private:
  std::promise<T> promise_;
};

/// Probes over `probe`, the test's view of the host's sockets.
ProbeFactory probesOf(core::FakePortProbe& probe) {
  return [&probe](const AllocationRequest&) -> Result<std::unique_ptr<core::PortProbe>> {
    return std::make_unique<core::FakePortProbe>(probe);
  };
}

/// Probes whose snapshot always fails, as sock_diag does without the needed capability.
Result<std::unique_ptr<core::PortProbe>> refusedSnapshot(const AllocationRequest&) {
  return fail(ErrorCode::kKernel, "sock_diag: permission denied");
}

/// One agent's worth of objects on a state dir, recovered as the agent does (recovery.h): the
/// store, the metrics and the service.
/// Destroyed in reverse order, after the test has waited for every callback.
class Agent {
 public:
  Agent(const TempDir& dir, core::FakePortProbe& probe,
        std::shared_ptr<store::FileOps> fileOps = {}, ServiceOptions options = {},
        const std::vector<core::PoolSpec>& agentPools = pools())
      : Agent(dir, probesOf(probe), std::move(fileOps), options, agentPools) {}
  Agent(const TempDir& dir, ProbeFactory probes, std::shared_ptr<store::FileOps> fileOps = {},
        ServiceOptions options = {}, const std::vector<core::PoolSpec>& agentPools = pools()) {
    StoreOptions storeOptions;
    storeOptions.fileOps = std::move(fileOps);
    // As the agent starts (agent/daemon/daemon.cc): the store recovered into a new allocator.
    auto state = daemon::recoverState(
        dir.path(), agentPools, [] { return uint64_t{42}; }, storeOptions);
    if (!state) {
      ADD_FAILURE() << "recover: " << state.error().message;
      std::abort();
    }
    store_ = std::move(state->store);
    recovered_ = state->allocator.leases();
    service_ = std::make_unique<AgentService>(std::move(state->allocator), *store_,
                                              std::move(probes), metrics_, options);
  }
  ~Agent() {
    // The store calls back into the service (a queued compaction's `done` takes its mutex), so
    // every queued item must be done before the service goes. The store acknowledges in
    // submission order: a record submitted straight to the store (not through the service,
    // which could queue one more compaction) is a barrier behind everything queued before.
    Waiter<Result<void>> barrier;
    store_->submit(
        {store::JournalRecord::Kind::kRelease, Lease{{"barrier", "eth0"}, {}, {}, {}, {}}},
        barrier.callback());
    (void)barrier.get();  // fails when the store failed earlier; drained all the same
    service_.reset();
    store_.reset();
  }

  AgentService& service() { return *service_; }
  LeaseStore& store() { return *store_; }
  const std::vector<Lease>& recovered() const { return recovered_; }

  Result<Lease> allocate(const AllocationRequest& r) {
    Waiter<Result<Lease>> waiter;
    service_->allocate(r, waiter.callback());
    return waiter.get();
  }
  Result<std::optional<Lease>> release(const AttachmentKey& key) {
    Waiter<Result<std::optional<Lease>>> waiter;
    service_->release(key, waiter.callback());
    return waiter.get();
  }
  Result<std::vector<Lease>> releaseContainer(const std::string& containerId) {
    Waiter<Result<std::vector<Lease>>> waiter;
    service_->releaseContainer(containerId, waiter.callback());
    return waiter.get();
  }
  Result<std::vector<Lease>> collectGarbage(const std::string& network,
                                            const std::set<AttachmentKey>& valid) {
    Waiter<Result<std::vector<Lease>>> waiter;
    service_->collectGarbage(network, valid, waiter.callback());
    return waiter.get();
  }

 private:
  Metrics metrics_;
  std::unique_ptr<LeaseStore> store_;
  std::vector<Lease> recovered_;
  std::unique_ptr<AgentService> service_;
};

/// The leases that a fresh agent recovers from `dir`.
std::vector<Lease> recoverFrom(const TempDir& dir) {
  core::FakePortProbe probe;
  Agent agent(dir, probe);
  return agent.recovered();
}

std::set<std::string> keysOf(const std::vector<Lease>& leases) {
  std::set<std::string> keys;
  for (const auto& lease : leases) keys.insert(lease.key.str());
  return keys;
}

class AgentServiceTest : public ::testing::Test {
 protected:
  TempDir dir_;
  core::FakePortProbe probe_;
};

TEST_F(AgentServiceTest, AllocationIsDurable) {
  Lease granted;
  {
    Agent agent(dir_, probe_);
    auto lease = agent.allocate(request("c1", "ns", "pod-1"));
    ASSERT_OK(lease);
    ASSERT_EQ(lease->ports.size(), 1u);
    EXPECT_EQ(lease->ports[0].hostPort, 30000);
    EXPECT_EQ(lease->ports[0].containerPort, 80);
    EXPECT_EQ(lease->ports[0].name, "web");
    EXPECT_EQ(lease->pool, "default");
    EXPECT_EQ(lease->pod.name, "pod-1");
    EXPECT_EQ(agent.service().get({"c1", "eth0"}), *lease);
    EXPECT_TRUE(agent.service().healthy());
    granted = *lease;
  }
  const auto recovered = recoverFrom(dir_);
  ASSERT_EQ(recovered.size(), 1u);
  EXPECT_EQ(recovered[0], granted);
}

TEST_F(AgentServiceTest, RecoveredLeasesKeepTheirPorts) {
  {
    Agent agent(dir_, probe_);
    ASSERT_TRUE(agent.allocate(request("c1", "ns", "pod-1")));
  }
  Agent agent(dir_, probe_);
  ASSERT_EQ(agent.recovered().size(), 1u);
  // The restored lease holds 30000, so the next pod gets 30001; the same key gets its lease back.
  auto next = agent.allocate(request("c2", "ns", "pod-2"));
  ASSERT_OK(next);
  EXPECT_EQ(next->ports.at(0).hostPort, 30001);
  auto again = agent.allocate(request("c1", "ns", "pod-1"));
  ASSERT_TRUE(again.has_value());
  EXPECT_EQ(*again, agent.recovered()[0]);
}

TEST_F(AgentServiceTest, RepeatedAllocateReturnsTheSameLease) {
  Agent agent(dir_, probe_);
  auto first = agent.allocate(request("c1", "ns", "pod-1"));
  auto second = agent.allocate(request("c1", "ns", "pod-1"));
  ASSERT_TRUE(first && second);
  EXPECT_EQ(*first, *second);
  EXPECT_EQ(agent.service().list("", "").size(), 1u);
}

// The reconciler's and liveness's pass over every lease: a chunk at a time, with the service's
// lock free in between, each lease once; and what it read again for a restore.
TEST_F(AgentServiceTest, HandsEveryLeaseOverAChunkAtATimeAndReadsLeasesByKey) {
  constexpr int kLeases = 2 * static_cast<int>(AgentService::kLeaseChunk) + 52;
  Agent agent(dir_, probe_, {}, {},
              {{"default", {{30000, 30000 + kLeases}}, {}, core::Strategy::kLowest}});
  for (int i = 0; i < kLeases; ++i) {
    ASSERT_OK(agent.allocate(request("c" + std::to_string(i), "ns", "pod-" + std::to_string(i))));
  }
  std::set<AttachmentKey> seen;
  std::vector<std::size_t> chunks;
  const auto settling = agent.service().forEachLeaseChunk([&](std::span<const Lease> chunk) {
    chunks.push_back(chunk.size());
    for (const Lease& lease : chunk) EXPECT_TRUE(seen.insert(lease.key).second) << lease.key.str();
  });
  EXPECT_EQ(seen.size(), static_cast<std::size_t>(kLeases));
  EXPECT_EQ(chunks,
            (std::vector<std::size_t>{AgentService::kLeaseChunk, AgentService::kLeaseChunk, 52}));
  EXPECT_TRUE(settling.empty()) << "every answer came after its table write";

  const std::vector<AttachmentKey> keys = {{"c7", "eth0"}, {"gone", "eth0"}, {"c2000", "eth0"}};
  const auto found = agent.service().leasesOf(keys);
  ASSERT_EQ(found.size(), 3u);
  ASSERT_TRUE(found[0] && found[2]);
  EXPECT_EQ(found[0]->key, keys[0]);
  EXPECT_EQ(found[1], std::nullopt);
  EXPECT_EQ(found[2]->pod.name, "pod-2000");
}

TEST_F(AgentServiceTest, ReleaseIsDurable) {
  {
    Agent agent(dir_, probe_);
    auto lease = agent.allocate(request("c1", "ns", "pod-1"));
    ASSERT_TRUE(agent.allocate(request("c2", "ns", "pod-2")));
    ASSERT_TRUE(lease.has_value());
    auto released = agent.release({"c1", "eth0"});
    ASSERT_OK(released);
    ASSERT_TRUE(released->has_value());
    EXPECT_EQ(**released, *lease);
    EXPECT_FALSE(agent.service().get({"c1", "eth0"}).has_value());
  }
  EXPECT_EQ(keysOf(recoverFrom(dir_)), std::set<std::string>{"c2/eth0"});
}

TEST_F(AgentServiceTest, ReleasedPortIsFreeAgain) {
  // No quarantine, so the freed port is the lowest free one at once.
  Agent agent(dir_, probe_, {}, {}, pools(/*reuseDelaySeconds=*/0));
  ASSERT_TRUE(agent.allocate(request("c1", "ns", "pod-1")));
  ASSERT_TRUE(agent.release({"c1", "eth0"}));
  auto lease = agent.allocate(request("c2", "ns", "pod-2"));
  ASSERT_TRUE(lease.has_value());
  EXPECT_EQ(lease->ports.at(0).hostPort, 30000);  // lowest-free
}

TEST_F(AgentServiceTest, ReleaseOfAnUnknownKeySucceedsWithNothing) {
  Agent agent(dir_, probe_);
  ASSERT_TRUE(agent.allocate(request("c1", "ns", "pod-1")));
  auto released = agent.release({"nobody", "eth0"});
  ASSERT_OK(released);
  EXPECT_FALSE(released->has_value());
  // Twice is fine too (DEL comes twice per pod).
  ASSERT_TRUE(agent.release({"c1", "eth0"}).value().has_value());
  auto again = agent.release({"c1", "eth0"});
  ASSERT_TRUE(again.has_value());
  EXPECT_FALSE(again->has_value());
}

TEST_F(AgentServiceTest, ReleaseContainerTakesEveryInterface) {
  {
    Agent agent(dir_, probe_);
    ASSERT_TRUE(agent.allocate(request("c1", "ns", "pod-1", "eth0")));
    ASSERT_TRUE(agent.allocate(request("c1", "ns", "pod-1", "net1")));
    ASSERT_TRUE(agent.allocate(request("c2", "ns", "pod-2")));
    auto released = agent.releaseContainer("c1");
    ASSERT_OK(released);
    EXPECT_EQ(keysOf(*released), (std::set<std::string>{"c1/eth0", "c1/net1"}));
    auto none = agent.releaseContainer("c1");
    ASSERT_TRUE(none.has_value());
    EXPECT_TRUE(none->empty());
  }
  EXPECT_EQ(keysOf(recoverFrom(dir_)), std::set<std::string>{"c2/eth0"});
}

TEST_F(AgentServiceTest, CollectGarbageReleasesExactlyTheInvalid) {
  {
    Agent agent(dir_, probe_);
    for (const char* id : {"c1", "c2", "c3", "c4"}) {
      ASSERT_TRUE(agent.allocate(onNetwork(request(id, "ns", std::string("pod-") + id), "kube")));
    }
    // Valid keys that hold no lease are ignored; c1 on another ifname is a different key.
    auto released = agent.collectGarbage(
        "kube", {{"c2", "eth0"}, {"c4", "eth0"}, {"c9", "eth0"}, {"c1", "net1"}});
    ASSERT_OK(released);
    EXPECT_EQ(keysOf(*released), (std::set<std::string>{"c1/eth0", "c3/eth0"}));
    EXPECT_EQ(keysOf(agent.service().list("", "")), (std::set<std::string>{"c2/eth0", "c4/eth0"}));
    // Nothing left to collect: an empty answer.
    auto again = agent.collectGarbage("kube", {{"c2", "eth0"}, {"c4", "eth0"}});
    ASSERT_TRUE(again.has_value());
    EXPECT_TRUE(again->empty());
  }
  EXPECT_EQ(keysOf(recoverFrom(dir_)), (std::set<std::string>{"c2/eth0", "c4/eth0"}));
}

TEST_F(AgentServiceTest, CollectGarbageWithNoValidKeysReleasesEverythingWhenAllowed) {
  Agent agent(dir_, probe_, {}, ServiceOptions{.allowEmptyGc = true});
  ASSERT_TRUE(agent.allocate(onNetwork(request("c1", "ns", "p1"), "kube")));
  ASSERT_TRUE(agent.allocate(onNetwork(request("c2", "ns", "p2"), "kube")));
  auto released = agent.collectGarbage("kube", {});
  ASSERT_TRUE(released.has_value());
  EXPECT_EQ(released->size(), 2u);
  EXPECT_TRUE(agent.service().list("", "").empty());
}

TEST_F(AgentServiceTest, CollectGarbageTouchesOnlyTheLeasesOfItsNetwork) {
  {
    Agent agent(dir_, probe_);
    ASSERT_TRUE(agent.allocate(onNetwork(request("k1", "ns", "k1"), "kube")));
    ASSERT_TRUE(agent.allocate(onNetwork(request("k2", "ns", "k2"), "kube")));
    ASSERT_TRUE(agent.allocate(onNetwork(request("m1", "ns", "m1"), "macvlan")));
    ASSERT_TRUE(agent.allocate(request("old", "ns", "old")));  // no forwarding: no network
    auto released = agent.collectGarbage("kube", {{"k2", "eth0"}});
    ASSERT_OK(released);
    EXPECT_EQ(keysOf(*released), std::set<std::string>{"k1/eth0"});
    // A network without leases releases nothing, even with an empty list.
    auto none = agent.collectGarbage("other", {});
    ASSERT_OK(none);
    EXPECT_TRUE(none->empty());
  }
  EXPECT_EQ(keysOf(recoverFrom(dir_)), (std::set<std::string>{"k2/eth0", "m1/eth0", "old/eth0"}));
}

TEST_F(AgentServiceTest, CollectGarbageRefusesAnEmptyListWhileTheNetworkHoldsLeases) {
  Agent agent(dir_, probe_);
  ASSERT_TRUE(agent.allocate(onNetwork(request("c1", "ns", "p1"), "kube")));
  ASSERT_TRUE(agent.allocate(onNetwork(request("c2", "ns", "p2"), "kube")));
  auto refused = agent.collectGarbage("kube", {});
  ASSERT_FALSE(refused.has_value());
  EXPECT_EQ(refused.error().code, ErrorCode::kInvalidArgument);
  EXPECT_EQ(refused.error().message,
            "GC of network \"kube\" with no valid attachments would release all 2 of its leases: "
            "refused, as a runtime that lost its state must not wipe the node (hostport-agent "
            "--allow-empty-gc, or emptyGcMaxLeases, allows it)");
  EXPECT_EQ(agent.service().list("", "").size(), 2u);
  // One valid key is not an empty list: the rest of the network goes.
  auto released = agent.collectGarbage("kube", {{"c2", "eth0"}});
  ASSERT_OK(released);
  EXPECT_EQ(keysOf(*released), std::set<std::string>{"c1/eth0"});
}

TEST_F(AgentServiceTest, CollectGarbageAllowsAnEmptyListUpToTheThreshold) {
  Agent agent(dir_, probe_, {}, ServiceOptions{.emptyGcMaxLeases = 2});
  ASSERT_TRUE(agent.allocate(onNetwork(request("c1", "ns", "p1"), "kube")));
  ASSERT_TRUE(agent.allocate(onNetwork(request("c2", "ns", "p2"), "kube")));
  ASSERT_TRUE(agent.allocate(onNetwork(request("c3", "ns", "p3"), "kube")));
  auto refused = agent.collectGarbage("kube", {});
  ASSERT_FALSE(refused.has_value());
  EXPECT_EQ(refused.error().code, ErrorCode::kInvalidArgument);
  ASSERT_TRUE(agent.release({"c3", "eth0"}));
  auto released = agent.collectGarbage("kube", {});
  ASSERT_OK(released);
  EXPECT_EQ(keysOf(*released), (std::set<std::string>{"c1/eth0", "c2/eth0"}));
}

TEST_F(AgentServiceTest, ListFiltersByNamespaceAndPod) {
  Agent agent(dir_, probe_);
  ASSERT_TRUE(agent.allocate(request("c1", "games", "server-0")));
  ASSERT_TRUE(agent.allocate(request("c2", "games", "server-1")));
  ASSERT_TRUE(agent.allocate(request("c3", "media", "server-0")));
  auto& service = agent.service();
  EXPECT_EQ(keysOf(service.list("", "")), (std::set<std::string>{"c1/eth0", "c2/eth0", "c3/eth0"}));
  EXPECT_EQ(keysOf(service.list("games", "")), (std::set<std::string>{"c1/eth0", "c2/eth0"}));
  EXPECT_EQ(keysOf(service.list("", "server-0")), (std::set<std::string>{"c1/eth0", "c3/eth0"}));
  EXPECT_EQ(keysOf(service.list("media", "server-0")), std::set<std::string>{"c3/eth0"});
  EXPECT_TRUE(service.list("media", "server-1").empty());
  EXPECT_TRUE(service.list("nope", "").empty());
  // Filters are exact, not prefixes.
  EXPECT_TRUE(service.list("game", "").empty());
  EXPECT_TRUE(service.list("", "server").empty());
}

TEST_F(AgentServiceTest, UsageAndPoolsReflectLeases) {
  Agent agent(dir_, probe_);
  ASSERT_TRUE(agent.allocate(request("c1", "ns", "p1")));
  const auto usage = agent.service().poolRows();
  ASSERT_EQ(usage.size(), 2u);
  EXPECT_EQ(usage[0].name, "default");
  EXPECT_EQ(usage[0].size, 10u);
  EXPECT_EQ(usage[0].used, 1u);
  EXPECT_EQ(usage[1].name, "media");
  EXPECT_EQ(usage[1].used, 0u);
  // The pools keep their protocols: "media" takes UDP only.
  AllocationRequest tcpInMedia = request("c2", "ns", "p2");
  tcpInMedia.pool = "media";
  const auto refused = agent.allocate(tcpInMedia);
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().code, ErrorCode::kInvalidArgument);
  EXPECT_THAT(refused.error().message, HasSubstr("allows only udp"));
}

TEST_F(AgentServiceTest, PoolRowsJoinUsageToEachPoolsStrategyAndRanges) {
  Agent agent(dir_, probe_);
  ASSERT_TRUE(agent.allocate(request("c1", "ns", "p1")));
  ASSERT_TRUE(agent.allocate(request("c2", "ns", "p2")));
  api::PoolUsageRow used{"default", 10, 2, 8, "lowest", {{30000, 30009}}};
  used.namespaceUsage = {{"ns", 2}};
  EXPECT_THAT(
      agent.service().poolRows(),
      ElementsAre(used, api::PoolUsageRow{"media", 100, 0, 100, "lowest", {{20000, 20099}}}));
}

TEST_F(AgentServiceTest, PoolRowsCarryTheRulesAndCountRefusalsByReason) {
  Agent agent(dir_, probe_);
  ASSERT_OK(agent.service().setPoolRules("default", {{"games-*"}, 5, {}}));
  const auto refused = agent.allocate(request("c1", "web", "p1"));
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().code, ErrorCode::kNotAllowed);
  ASSERT_TRUE(agent.allocate(request("c2", "games-a", "p2")));
  const auto rows = agent.service().poolRows();
  EXPECT_EQ(rows.at(0).namespaces, std::vector<std::string>{"games-*"});
  EXPECT_EQ(rows.at(0).maxPortsPerNamespace, 5u);
  EXPECT_EQ(rows.at(0).namespaceUsage, (std::vector<api::NamespaceUsageRow>{{"games-a", 1}}));
  EXPECT_THAT(
      agent.service().metricsText(),
      HasSubstr("hostport_allocation_refusals_total{pool=\"default\",reason=\"namespace\"} 1\n"));
  EXPECT_EQ(agent.service().setPoolRules("nope", {}).error().code, ErrorCode::kNotFound);
}

TEST_F(AgentServiceTest, HostSocketsAreSkippedAndStaticClaimsChecked) {
  probe_.bind(Protocol::kTcp, 30000, {1234, "nginx"});
  probe_.bind(Protocol::kTcp, 8080, {99, "sshd"});
  Agent agent(dir_, probe_);
  auto lease = agent.allocate(request("c1", "ns", "p1"));
  ASSERT_OK(lease);
  EXPECT_EQ(lease->ports.at(0).hostPort, 30001);

  AllocationRequest claim = request("c2", "ns", "p2");
  claim.dynamics.clear();
  claim.statics.push_back({8080, 80, PortProtocol::kTcp, std::nullopt});
  auto refused = agent.allocate(claim);
  ASSERT_FALSE(refused.has_value());
  EXPECT_EQ(refused.error().code, ErrorCode::kConflict);
  EXPECT_THAT(refused.error().message, HasSubstr("8080"));
  EXPECT_FALSE(agent.service().get({"c2", "eth0"}).has_value());
  EXPECT_TRUE(agent.service().healthy()) << "a refused request is not a store failure";

  const auto metrics = agent.service().metricsText();
  EXPECT_THAT(metrics, HasSubstr("hostport_conflicts_total{kind=\"static_claim\"} 1\n"));
  EXPECT_THAT(metrics, HasSubstr("hostport_conflicts_total{kind=\"host_socket\"} "));
}

TEST_F(AgentServiceTest, ExhaustedPoolIsAnErrorAndNothingIsWritten) {
  Agent agent(dir_, probe_);
  for (int i = 0; i < 10; ++i) {
    ASSERT_TRUE(agent.allocate(request("c" + std::to_string(i), "ns", "p")));
  }
  const auto records = agent.store().stats().records;
  auto refused = agent.allocate(request("c10", "ns", "p"));
  ASSERT_FALSE(refused.has_value());
  EXPECT_EQ(refused.error().code, ErrorCode::kExhausted);
  EXPECT_EQ(agent.store().stats().records, records);
}

TEST_F(AgentServiceTest, MetricsTextHasTheExpectedFamilies) {
  Agent agent(dir_, probe_);
  ASSERT_TRUE(agent.allocate(request("c1", "ns", "p1")));
  ASSERT_TRUE(agent.allocate(request("c2", "ns", "p2")));
  ASSERT_TRUE(agent.release({"c2", "eth0"}));
  const auto text = agent.service().metricsText();
  for (const auto& [family, type] : std::vector<std::pair<std::string, std::string>>{
           {"hostport_leases", "gauge"},
           {"hostport_pool_ports", "gauge"},
           {"hostport_pool_free_ports", "gauge"},
           {"hostport_pool_quarantined_ports", "gauge"},
           {"hostport_allocation_duration_seconds", "histogram"},
           {"hostport_releases_total", "counter"},
           {"hostport_conflicts_total", "counter"},
           {"hostport_errors_total", "counter"},
           {"hostport_journal_records_total", "counter"},
           {"hostport_journal_fsyncs_total", "counter"},
           {"hostport_journal_bytes", "gauge"},
       }) {
    EXPECT_THAT(text, HasSubstr("# HELP " + family + " ")) << family;
    EXPECT_THAT(text, HasSubstr("# TYPE " + family + " " + type + "\n")) << family;
  }
  EXPECT_THAT(text, HasSubstr("\nhostport_leases 1\n"));
  EXPECT_THAT(text, HasSubstr("hostport_pool_ports{pool=\"default\"} 10\n"));
  EXPECT_THAT(text, HasSubstr("hostport_pool_ports{pool=\"media\"} 100\n"));
  EXPECT_THAT(text, HasSubstr("hostport_pool_free_ports{pool=\"default\"} 9\n"));
  // c2's port waits out the default reuse delay of 30 s.
  EXPECT_THAT(text, HasSubstr("hostport_pool_quarantined_ports{pool=\"default\"} 1\n"));
  EXPECT_THAT(text, HasSubstr("hostport_pool_quarantined_ports{pool=\"media\"} 0\n"));
  EXPECT_THAT(text, HasSubstr("hostport_allocation_duration_seconds_count 2\n"));
  EXPECT_THAT(text, HasSubstr("hostport_allocation_duration_seconds_bucket{le=\"+Inf\"} 2\n"));
  EXPECT_THAT(text, HasSubstr("hostport_releases_total 1\n"));
  EXPECT_THAT(text, HasSubstr("hostport_journal_records_total 3\n"));
  // Every line is a comment or "name[{labels}] value".
  std::size_t start = 0;
  while (start < text.size()) {
    const auto end = text.find('\n', start);
    ASSERT_NE(end, std::string::npos) << "the exposition must end with a newline";
    const auto line = text.substr(start, end - start);
    EXPECT_TRUE(line.starts_with("# HELP ") || line.starts_with("# TYPE ") ||
                (line.starts_with("hostport_") && line.find(' ') != std::string::npos))
        << line;
    start = end + 1;
  }
}

TEST_F(AgentServiceTest, CompactionKeepsEveryLease) {
  {
    Agent agent(dir_, probe_, {}, ServiceOptions{1});  // compact after every write
    for (int i = 0; i < 6; ++i) {
      ASSERT_TRUE(agent.allocate(request("c" + std::to_string(i), "ns", "p")));
    }
    ASSERT_TRUE(agent.release({"c2", "eth0"}));
    // Compactions run on the committer thread, queued behind records; wait until one has.
    const auto deadline = std::chrono::steady_clock::now() + kWait;
    while (agent.store().stats().compactions == 0 && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    EXPECT_GE(agent.store().stats().compactions, 1u);
    EXPECT_TRUE(agent.service().healthy());
  }
  EXPECT_EQ(keysOf(recoverFrom(dir_)),
            (std::set<std::string>{"c0/eth0", "c1/eth0", "c3/eth0", "c4/eth0", "c5/eth0"}));
}

TEST_F(AgentServiceTest, StoreFailureMakesTheAgentUnhealthy) {
  auto faulty = std::make_shared<FaultyFileOps>();
  {
    Agent agent(dir_, probe_, faulty);
    ASSERT_TRUE(agent.allocate(request("c1", "ns", "p1")));
    faulty->failAlways(Op::kFdatasync, EIO);

    auto lease = agent.allocate(request("c2", "ns", "p2"));
    ASSERT_FALSE(lease.has_value());
    EXPECT_EQ(lease.error().code, ErrorCode::kIo) << lease.error().message;
    EXPECT_FALSE(agent.service().healthy());
    // The failed grant is not served from memory either.
    EXPECT_FALSE(agent.service().get({"c2", "eth0"}).has_value());
    EXPECT_THAT(agent.service().metricsText(),
                HasSubstr("hostport_errors_total{code=\"journal_write\"} 1\n"));

    // From now on every mutation is refused until a restart recovers from disk.
    auto refused = agent.allocate(request("c3", "ns", "p3"));
    ASSERT_FALSE(refused.has_value());
    EXPECT_EQ(refused.error().code, ErrorCode::kUnavailable);
    auto release = agent.release({"c1", "eth0"});
    ASSERT_FALSE(release.has_value());
    EXPECT_EQ(release.error().code, ErrorCode::kUnavailable);
    EXPECT_TRUE(agent.service().get({"c1", "eth0"}).has_value());
    auto gc = agent.collectGarbage("kube", {});
    ASSERT_FALSE(gc.has_value());
    EXPECT_EQ(gc.error().code, ErrorCode::kUnavailable);
    auto container = agent.releaseContainer("c1");
    ASSERT_FALSE(container.has_value());
    EXPECT_EQ(container.error().code, ErrorCode::kUnavailable);
    // Reads still work: operators can see what the agent holds.
    EXPECT_EQ(agent.service().list("", "").size(), 1u);
  }
  // The acknowledged lease survived; the failed one is "unknown" (it may or may not be there).
  const auto recovered = keysOf(recoverFrom(dir_));
  EXPECT_TRUE(recovered.contains("c1/eth0"));
  EXPECT_FALSE(recovered.contains("c3/eth0"));
}

TEST_F(AgentServiceTest, FailedReleaseKeepsTheLeaseInMemory) {
  auto faulty = std::make_shared<FaultyFileOps>();
  Agent agent(dir_, probe_, faulty);
  auto lease = agent.allocate(request("c1", "ns", "p1"));
  ASSERT_TRUE(lease.has_value());
  faulty->failAlways(Op::kPwrite, ENOSPC);
  auto released = agent.release({"c1", "eth0"});
  ASSERT_FALSE(released.has_value());
  EXPECT_FALSE(agent.service().healthy());
  // Not on disk as released, so not released: the port must not be handed out again.
  EXPECT_EQ(agent.service().get({"c1", "eth0"}), *lease);
}

TEST_F(AgentServiceTest, ProbeFailureFailsTheRequestButNotTheAgent) {
  Agent agent(dir_, refusedSnapshot);
  auto lease = agent.allocate(request("c1", "ns", "p1"));
  ASSERT_FALSE(lease.has_value());
  EXPECT_EQ(lease.error().code, ErrorCode::kKernel);
  EXPECT_TRUE(agent.service().healthy());
  EXPECT_TRUE(agent.service().list("", "").empty());
}

/// The service's events (docs/operations.md "Logs"): what the allocator decided and the store did.
class AgentServiceLogTest : public AgentServiceTest {
 protected:
  LogCapture log_;
};

AllocationRequest staticClaim(const std::string& containerId, const std::string& pod,
                              uint16_t hostPort) {
  AllocationRequest r = request(containerId, "ns", pod);
  r.dynamics.clear();
  r.statics.push_back({hostPort, 80, PortProtocol::kTcp, std::nullopt});
  return r;
}

TEST_F(AgentServiceLogTest, LogsGrantsAndReleasesOnceDurable) {
  Agent agent(dir_, probe_, {}, ServiceOptions{.allowEmptyGc = true});
  ASSERT_TRUE(agent.allocate(request("c1", "ns", "web-0")));
  ASSERT_TRUE(agent.allocate(request("c2", "ns", "web-1")));
  ASSERT_TRUE(agent.allocate(onNetwork(request("c3", "ns", "web-2"), "kube")));
  ASSERT_TRUE(agent.release({"c1", "eth0"}));
  ASSERT_TRUE(agent.release({"nobody", "eth0"}));  // nothing there: nothing released
  ASSERT_TRUE(agent.releaseContainer("c2"));
  ASSERT_TRUE(agent.collectGarbage("kube", {}));
  EXPECT_THAT(
      log_.eventsOnce("alloc.granted", 3),
      ElementsAre("alloc.granted key=c1/eth0 pod=ns/web-0 pool=default ports=30000->80/tcp",
                  "alloc.granted key=c2/eth0 pod=ns/web-1 pool=default ports=30001->80/tcp",
                  "alloc.granted key=c3/eth0 pod=ns/web-2 pool=default ports=30002->80/tcp"));
  EXPECT_THAT(
      log_.eventsOnce("alloc.released", 3),
      ElementsAre(
          "alloc.released key=c1/eth0 pod=ns/web-0 pool=default ports=30000->80/tcp via=request",
          "alloc.released key=c2/eth0 pod=ns/web-1 pool=default ports=30001->80/tcp "
          "via=container",
          "alloc.released key=c3/eth0 pod=ns/web-2 pool=default ports=30002->80/tcp via=gc"));
}

TEST_F(AgentServiceLogTest, LogsEachGcWithItsNetworkAndCounts) {
  Agent agent(dir_, probe_);
  ASSERT_TRUE(agent.allocate(onNetwork(request("c1", "ns", "web-0"), "kube")));
  ASSERT_TRUE(agent.allocate(onNetwork(request("c2", "ns", "web-1"), "kube")));
  ASSERT_FALSE(agent.collectGarbage("kube", {}));
  ASSERT_TRUE(agent.collectGarbage("kube", {{"c2", "eth0"}, {"c9", "eth0"}}));
  EXPECT_THAT(log_.eventsOnce("alloc.gc", 1),
              ElementsAre("alloc.gc network=kube valid=2 released=1"));
  ASSERT_TRUE(agent.collectGarbage("kube", {{"c2", "eth0"}}));
  EXPECT_THAT(log_.eventsOnce("alloc.gc", 2),
              ElementsAre("alloc.gc network=kube valid=2 released=1",
                          "alloc.gc network=kube valid=1 released=0"));
  EXPECT_THAT(log_.events("alloc.gc_refused"),
              ElementsAre("alloc.gc_refused network=kube valid=0 leases=2"));
}

TEST_F(AgentServiceLogTest, LogsAConflictWithTheHostProcessHoldingThePort) {
  probe_.bind(Protocol::kTcp, 8080, {99, "sshd"});
  Agent agent(dir_, probe_);
  ASSERT_FALSE(agent.allocate(staticClaim("c1", "p1", 8080)));
  EXPECT_THAT(log_.events("alloc.conflict"),
              ElementsAre("alloc.conflict key=c1/eth0 pod=ns/p1 port=tcp/8080 holder=host pid=99 "
                          "command=sshd cause=\"port tcp/8080 is in use on the host by pid 99 "
                          "(\\\"sshd\\\")\""));
}

TEST_F(AgentServiceLogTest, QuotesAHostileCommandSoItCannotForgeALine) {
  probe_.bind(Protocol::kTcp, 8080, {7, "x\nerror store: store.failed"});
  Agent agent(dir_, probe_);
  ASSERT_FALSE(agent.allocate(staticClaim("c1", "p1", 8080)));
  const auto conflicts = log_.events("alloc.conflict");
  ASSERT_EQ(conflicts.size(), 1u) << log_.text();
  EXPECT_THAT(conflicts[0], HasSubstr(" command=\"x\\nerror store: store.failed\" "));
  EXPECT_TRUE(log_.events("store.failed").empty()) << log_.text();
}

TEST_F(AgentServiceLogTest, LogsAConflictWithTheLeaseHoldingThePort) {
  Agent agent(dir_, probe_);
  ASSERT_TRUE(agent.allocate(staticClaim("c1", "web-0", 8080)));
  AllocationRequest second = staticClaim("c2", "web-1", 9090);
  second.statics.push_back({8080, 80, PortProtocol::kTcpUdp, std::nullopt});
  ASSERT_FALSE(agent.allocate(second));
  const auto conflicts = log_.events("alloc.conflict");
  ASSERT_EQ(conflicts.size(), 1u) << log_.text();
  EXPECT_THAT(conflicts[0],
              ::testing::StartsWith("alloc.conflict key=c2/eth0 pod=ns/web-1 port=tcp/8080 "
                                    "holder=lease holder_key=c1/eth0 holder_pod=ns/web-0 cause="));
}

TEST_F(AgentServiceLogTest, LogsExhaustionWithThePoolSizeAndUse) {
  Agent agent(dir_, probe_);
  for (int i = 0; i < 10; ++i) {
    ASSERT_TRUE(agent.allocate(request("c" + std::to_string(i), "ns", "p")));
  }
  ASSERT_FALSE(agent.allocate(request("c10", "ns", "p")));
  const auto exhausted = log_.events("alloc.exhausted");
  ASSERT_EQ(exhausted.size(), 1u) << log_.text();
  EXPECT_THAT(exhausted[0], ::testing::StartsWith("alloc.exhausted key=c10/eth0 pod=ns/p "
                                                  "pool=default size=10 in_use=10 cause="));
}

TEST_F(AgentServiceLogTest, LogsOtherRefusalsWithTheirCode) {
  Agent agent(dir_, probe_);
  AllocationRequest unknownPool = request("c1", "ns", "p");
  unknownPool.pool = "nope";
  ASSERT_FALSE(agent.allocate(unknownPool));
  const auto refused = log_.events("alloc.refused");
  ASSERT_EQ(refused.size(), 1u) << log_.text();
  EXPECT_THAT(refused[0],
              ::testing::StartsWith("alloc.refused key=c1/eth0 pod=ns/p code=invalid_argument "));
}

TEST_F(AgentServiceLogTest, LogsTheCauseWhenTheStoreFailsAndTurnsUnhealthyOnce) {
  auto faulty = std::make_shared<FaultyFileOps>();
  Agent agent(dir_, probe_, faulty);
  ASSERT_TRUE(agent.allocate(request("c1", "ns", "p1")));
  faulty->failAlways(Op::kFdatasync, EIO);
  ASSERT_FALSE(agent.allocate(request("c2", "ns", "p2")));
  ASSERT_FALSE(agent.allocate(request("c3", "ns", "p3")));  // refused: unhealthy already
  const auto unhealthy = log_.eventsOnce("agent.unhealthy", 1);
  ASSERT_EQ(unhealthy.size(), 1u) << log_.text();
  EXPECT_THAT(unhealthy[0], HasSubstr("Input/output error"));
  const auto failed = log_.eventsOnce("store.write_failed", 1);
  ASSERT_EQ(failed.size(), 1u) << log_.text();
  EXPECT_THAT(failed[0], ::testing::StartsWith("store.write_failed record=grant key=c2/eth0 "));
  EXPECT_THAT(failed[0], HasSubstr("Input/output error"));
  EXPECT_TRUE(log_.events("alloc.granted").size() == 1u) << log_.text();
}

TEST_F(AgentServiceLogTest, LogsALeaseThatCouldNotBePutBackAfterItsReleaseFailed) {
  auto faulty = std::make_shared<FaultyFileOps>();
  // No quarantine, so the port c1 freed is the one c2 is granted at once.
  Agent agent(dir_, probe_, faulty, {}, pools(/*reuseDelaySeconds=*/0));
  ASSERT_TRUE(agent.allocate(request("c1", "ns", "p1")));
  // The release's sync fails after a while; meanwhile another pod is granted the port it freed.
  faulty->setSyncDelay(std::chrono::milliseconds(300));
  faulty->failOnce(Op::kFdatasync, EIO);
  Waiter<Result<std::optional<Lease>>> released;
  agent.service().release({"c1", "eth0"}, released.callback());
  Waiter<Result<Lease>> granted;
  agent.service().allocate(request("c2", "ns", "p2"), granted.callback());
  EXPECT_FALSE(released.get());
  EXPECT_FALSE(granted.get());
  const auto failed = log_.eventsOnce("alloc.restore_failed", 1);
  ASSERT_EQ(failed.size(), 1u) << log_.text();
  EXPECT_THAT(failed[0], ::testing::StartsWith("alloc.restore_failed key=c1/eth0 pod=ns/p1 "
                                               "pool=default ports=30000->80/tcp cause="));
  EXPECT_THAT(failed[0], HasSubstr("is held by"));
  EXPECT_FALSE(agent.service().healthy());
}

TEST_F(AgentServiceLogTest, ACompactionThatLeavesTheStoreWorkingKeepsTheAgentHealthy) {
  auto faulty = std::make_shared<FaultyFileOps>();
  Agent agent(dir_, probe_, faulty, ServiceOptions{1});  // compact after every write
  faulty->failOnce(Op::kFsync, EIO);  // the first compaction's snapshot fsync, before its rename
  // A compaction is queued once the journal holds a record, behind the records before it.
  const auto deadline = std::chrono::steady_clock::now() + kWait;
  for (int i = 0; log_.events("store.compaction_failed").empty(); ++i) {
    ASSERT_LT(std::chrono::steady_clock::now(), deadline) << log_.text();
    ASSERT_TRUE(agent.allocate(request("c" + std::to_string(i), "ns", "p")));
  }
  EXPECT_THAT(log_.events("store.compaction_failed"), ElementsAre(HasSubstr("store_failed=false")));
  EXPECT_FALSE(agent.store().stats().failed);
  EXPECT_TRUE(agent.service().healthy());
  EXPECT_TRUE(log_.events("agent.unhealthy").empty()) << log_.text();
  EXPECT_TRUE(agent.allocate(request("after", "ns", "p")));
}

/// The `failures=N` of a store.compaction_failed line.
uint64_t failuresOf(const std::string& line) {
  const auto at = line.rfind(" failures=");
  return at == std::string::npos ? 0 : std::stoull(line.substr(at + 10));
}

// A full disk fails the compaction that every write queues, thousands a second under load: one
// line a second, and the lines' counts add up to every failure.
TEST_F(AgentServiceLogTest, LogsCompactionsThatKeepFailingOnceASecondCountingThem) {
  auto faulty = std::make_shared<FaultyFileOps>();
  Agent agent(dir_, probe_, faulty, ServiceOptions{1});  // compact after every write
  faulty->failAlways(Op::kFsync, ENOSPC);  // each compaction's snapshot fsync; records still sync
  const int fsyncsBefore = faulty->calls(Op::kFsync);
  // Every queued compaction has run and logged once a record submitted after it is answered.
  const auto drain = [&] {
    Waiter<Result<void>> barrier;
    agent.store().submit(
        {store::JournalRecord::Kind::kRelease, Lease{{"barrier", "eth0"}, {}, {}, {}, {}}},
        barrier.callback());
    ASSERT_OK(barrier.get());
  };
  const auto started = std::chrono::steady_clock::now();
  for (int i = 0; i < 20; ++i) {
    ASSERT_TRUE(agent.allocate(request("c", "ns", "p")));
    ASSERT_TRUE(agent.release({"c", "eth0"}));
  }
  ASSERT_NO_FATAL_FAILURE(drain());
  const auto seconds =
      std::chrono::duration_cast<std::chrono::seconds>(std::chrono::steady_clock::now() - started)
          .count();
  const int failed = faulty->calls(Op::kFsync) - fsyncsBefore;  // one fsync per compaction
  auto lines = log_.events("store.compaction_failed");
  ASSERT_GE(failed, 2);
  ASSERT_FALSE(lines.empty()) << log_.text();
  EXPECT_LE(lines.size(), static_cast<size_t>(seconds) + 1) << failed << " failures";
  EXPECT_THAT(lines[0], HasSubstr(" store_failed=false failures=1"));

  // A line after the interval stands for everything held back since the one before.
  std::this_thread::sleep_for(std::chrono::milliseconds(1100));
  ASSERT_TRUE(agent.allocate(request("d", "ns", "p")));
  ASSERT_NO_FATAL_FAILURE(drain());
  lines = log_.events("store.compaction_failed");
  uint64_t counted = 0;
  for (const auto& line : lines) counted += failuresOf(line);
  EXPECT_EQ(counted, static_cast<uint64_t>(faulty->calls(Op::kFsync) - fsyncsBefore))
      << log_.text();
  EXPECT_FALSE(agent.store().stats().failed);
  EXPECT_TRUE(agent.service().healthy());
}

// The plugin checks CNI_NETNS; the agent, which records the namespace's identity and judges the
// sandbox by it, checks again rather than trust it.
TEST_F(AgentServiceLogTest, RefusesAGrantWhoseNetnsIsNoNetworkNamespace) {
  Agent agent(dir_, probe_);
  const std::string file = (dir_ / "not-a-netns").string();
  std::ofstream(file) << "x";
  for (const auto& [path, what] : {std::pair<std::string, std::string>{file, "a regular file"},
                                   {"/proc/self/ns/mnt", "a mnt namespace"}}) {
    AllocationRequest r = request("c1", "ns", "p1");
    r.netns = path;
    const auto lease = agent.allocate(r);
    ASSERT_FALSE(lease.has_value()) << path;
    EXPECT_EQ(lease.error().code, ErrorCode::kInvalidArgument);
    EXPECT_EQ(lease.error().message,
              "netns: \"" + path + "\" is " + what + ", not a network namespace");
  }
  EXPECT_FALSE(agent.service().get({"c1", "eth0"}).has_value());
  const auto refused = log_.events("alloc.refused");
  ASSERT_EQ(refused.size(), 2u) << log_.text();
  EXPECT_THAT(refused[0], ::testing::StartsWith("alloc.refused key=c1/eth0 pod=ns/p1 code="));
  // A network namespace is recorded by its identity.
  AllocationRequest r = request("c1", "ns", "p1");
  r.netns = "/proc/self/ns/net";
  ASSERT_OK_AND_ASSIGN(const Lease lease, agent.allocate(r));
  EXPECT_TRUE(lease.netnsId.known());
}

TEST_F(AgentServiceLogTest, LogsASocketSnapshotThatFailed) {
  Agent agent(dir_, refusedSnapshot);
  ASSERT_FALSE(agent.allocate(request("c1", "ns", "p1")));
  EXPECT_THAT(log_.events("socket.snapshot_failed"),
              ElementsAre("socket.snapshot_failed key=c1/eth0 pod=ns/p1 "
                          "cause=\"sock_diag: permission denied\""));
}

TEST_F(AgentServiceLogTest, LogsBusyHostPortsAtDebug) {
  probe_.bind(Protocol::kTcp, 30000, {1234, "nginx"});
  Agent agent(dir_, probe_);
  ASSERT_TRUE(agent.allocate(request("c1", "ns", "p1")));
  EXPECT_THAT(log_.events("socket.busy"), ElementsAre("socket.busy key=c1/eth0 port=tcp/30000"));
}

/// A service whose writer is over fakes (the table in memory), as agent mode runs it.
class AgentServiceWriterTest : public AgentServiceTest {
 protected:
  AgentServiceWriterTest() {
    auto ruleset = std::make_unique<nft::FakeRuleset>();
    auto network = std::make_unique<hostnet::FakeHostNetwork>();
    table_ = ruleset.get();
    network_ = network.get();
    writer_ = std::make_unique<ForwardWriter>(std::move(ruleset), std::move(network));
  }

  ServiceOptions options() {
    ServiceOptions options;
    options.writer = writer_.get();
    return options;
  }

  static AllocationRequest forwarded(const std::string& containerId) {
    AllocationRequest r = request(containerId, "ns", "pod-" + containerId);
    r.forwarding = Forwarding{.network = "net",
                              .podV4 = IpPrefix{*IpAddress::parse("10.88.0.5"), 16},
                              .podV6 = std::nullopt,
                              .snat = true,
                              .masqAll = false,
                              .conditionsV4 = "",
                              .conditionsV6 = ""};
    return r;
  }

  nft::FakeRuleset* table_ = nullptr;
  hostnet::FakeHostNetwork* network_ = nullptr;
  std::unique_ptr<ForwardWriter> writer_;
};

TEST_F(AgentServiceWriterTest, AGrantIsInstalledBeforeItsAnswerAndRemovedWithItsRelease) {
  Agent agent(dir_, probe_, {}, options());
  const AllocationRequest r = forwarded("c1");
  ASSERT_OK_AND_ASSIGN(const Lease lease, agent.allocate(r));
  ASSERT_TRUE(table_->installed.contains("c1/eth0"));
  const auto& rules = table_->installed.at("c1/eth0");
  ASSERT_EQ(rules.forwards.size(), 1u);
  EXPECT_EQ(rules.forwards[0].hostPort, lease.ports.at(0).hostPort);
  EXPECT_EQ(rules.forwards[0].containerIp.str(), "10.88.0.5");
  EXPECT_EQ(rules.masquerades.size(), 1u);  // snat: the pod's subnet and localhost
  EXPECT_EQ(table_->podSubnets.size(), 1u);
  EXPECT_EQ(network_->localnetFor, std::vector<std::string>{"10.88.0.5"});
  EXPECT_EQ(lease.forwarding, r.forwarding);

  ASSERT_OK_AND_ASSIGN(const auto released, agent.release(r.key));
  EXPECT_EQ(released, lease);
  EXPECT_FALSE(table_->installed.contains("c1/eth0"));
  EXPECT_EQ(table_->removeExactCalls, 1) << "removed by key, not by listing the owner";
}

TEST_F(AgentServiceWriterTest, AGrantWhoseForwardsCannotBeInstalledIsTakenBack) {
  Agent agent(dir_, probe_, {}, options());
  table_->conflict = true;
  const auto refused = agent.allocate(forwarded("c1"));
  ASSERT_FALSE(refused.has_value());
  EXPECT_EQ(refused.error().code, ErrorCode::kConflict);
  EXPECT_TRUE(agent.service().list("", "").empty());
  table_->conflict = false;
  // Nothing holds the port any more (it waits in quarantine, as any released port does).
  const auto rows = agent.service().poolRows();
  ASSERT_FALSE(rows.empty());
  EXPECT_EQ(rows[0].used, 0u);
  ASSERT_OK(agent.allocate(forwarded("c2")));
  EXPECT_EQ(agent.service().list("", "").size(), 1u);
}

// A DEL whose forwards stay in the kernel must not free their port for the next pod: the old
// forward would take its traffic. The lease is kept (in memory and in the journal) and the DEL
// fails, so the runtime retries it.
TEST_F(AgentServiceWriterTest, AReleaseWhoseForwardsCannotBeRemovedFailsAndKeepsTheLease) {
  const AllocationRequest r = forwarded("c1");
  Lease lease;
  {
    Agent agent(dir_, probe_, {}, options());
    ASSERT_OK_AND_ASSIGN(lease, agent.allocate(r));
    table_->removeFails = "Could not process rule";

    const auto refused = agent.release(r.key);
    ASSERT_FALSE(refused.has_value()) << "the DEL answered success with the forward left";
    EXPECT_THAT(refused.error().message, HasSubstr("lease is kept"));
    EXPECT_THAT(refused.error().message, HasSubstr("Could not process rule"));
    EXPECT_EQ(agent.service().get(r.key), lease);
    EXPECT_TRUE(table_->installed.contains("c1/eth0"));
    const auto rows = agent.service().poolRows();
    ASSERT_FALSE(rows.empty());
    EXPECT_EQ(rows[0].used, 1u) << "the port must stay held";
  }
  // Durable: a restart recovers it.
  Agent restarted(dir_, probe_, {}, options());
  EXPECT_THAT(restarted.recovered(), ElementsAre(lease));
  table_->removeFails.reset();
  ASSERT_OK_AND_ASSIGN(const auto released, restarted.release(r.key));
  EXPECT_EQ(released, lease);
  EXPECT_FALSE(table_->installed.contains("c1/eth0"));
}

// What a request cannot show by itself is judged at install, before anything is written, and the
// grant is taken back: a pod address the node holds (a DNAT to the node's own services), and
// ports none of which reach the pod (hostIPs of a family it has no address of).
TEST_F(AgentServiceWriterTest, AGrantToTheNodesOwnAddressOrForwardingNothingIsTakenBack) {
  Agent agent(dir_, probe_, {}, options());
  network_->localAddresses = {"10.88.0.5"};
  const auto local = agent.allocate(forwarded("c1"));
  ASSERT_FALSE(local.has_value());
  EXPECT_EQ(local.error().code, ErrorCode::kInvalidArgument);
  EXPECT_NE(local.error().message.find("pod address 10.88.0.5 is an address of this node"),
            std::string::npos)
      << local.error().message;

  network_->localAddresses.clear();
  AllocationRequest otherFamily = forwarded("c2");
  otherFamily.dynamics.clear();
  otherFamily.statics = {{8080, 80, PortProtocol::kTcp, *IpAddress::parse("2001:db8::1")}};
  const auto nowhere = agent.allocate(otherFamily);
  ASSERT_FALSE(nowhere.has_value());
  EXPECT_EQ(nowhere.error().code, ErrorCode::kInvalidArgument);
  EXPECT_NE(nowhere.error().message.find("none of the 1 port mapping(s) can be forwarded"),
            std::string::npos)
      << nowhere.error().message;

  EXPECT_TRUE(agent.service().list("", "").empty());
  EXPECT_TRUE(table_->installed.empty());
  EXPECT_TRUE(table_->podSubnets.empty());
  EXPECT_EQ(agent.service().poolRows().at(0).used, 0u);
}

// A hostNetwork pod's lease, or a load generator's: nothing is written, and its release looks
// for nothing either (a listing of the whole table under the writer's lock, ~0.35 s at 65,535
// leases, at every such release).
TEST_F(AgentServiceWriterTest, ALeaseWithoutForwardingForwardsNothingAndItsReleaseListsNothing) {
  Agent agent(dir_, probe_, {}, options());
  ASSERT_OK_AND_ASSIGN(const Lease lease, agent.allocate(request("c1", "ns", "pod")));
  EXPECT_FALSE(lease.forwarding.has_value());
  EXPECT_TRUE(table_->installed.empty());
  ASSERT_OK(agent.release(lease.key));
  EXPECT_EQ(table_->removeCalls, 0);
  EXPECT_EQ(table_->removeExactCalls, 0);
}

}  // namespace
}  // namespace hostport::agent::service
