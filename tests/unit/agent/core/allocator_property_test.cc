// Randomised sequences of allocate, release and restore against a simple model, checking after
// every step that no port is granted twice, that the usage counters match the leases, and that
// a failed request changed nothing. The clock moves a second a step, so released ports go through
// quarantine and out of it; a refusal for exhaustion must not be quarantine's doing.

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <random>
#include <set>

#include "agent/core/allocator.h"
#include "tests/fakes/fake_port_probe.h"
#include "tests/support/result_assertions.h"

namespace hostport::agent::core {
namespace {

constexpr PortProtocol kProtocols[] = {PortProtocol::kTcp, PortProtocol::kUdp, PortProtocol::kSctp,
                                       PortProtocol::kTcpUdp};

class AllocatorPropertyTest : public ::testing::TestWithParam<std::tuple<Strategy, Strategy>> {
 protected:
  void SetUp() override {
    pools_ = {{"default", {{30000, 30149}, {30300, 30329}}, {}, std::get<0>(GetParam())},
              {"small",
               {{40000, 40019}},
               {PortProtocol::kTcp, PortProtocol::kUdp},
               std::get<1>(GetParam())}};
    auto allocator = create();
    ASSERT_TRUE(allocator);
    allocator_.emplace(std::move(*allocator));
    // Some pool ports, and some static candidates, are taken on the host for good.
    for (int i = 0; i < 25; ++i) {
      const uint16_t port = pick({30000, 30149, 30300, 30329, 40000, 40019, 80, 89});
      probe_.bind(pick(1) ? Protocol::kTcp : Protocol::kUdp, port, {100u + i, "daemon"});
    }
  }

  Result<Allocator> create() {
    return Allocator::create(
        pools_, [this] { return rng_(); }, [this] { return now_; });
  }

  // A one-row request refused for exhaustion is refused by an allocator holding the same leases
  // and no quarantine too: which ports are quarantined decides the order, never the outcome.
  void expectExhaustedWithoutQuarantine(const AllocationRequest& request) {
    if (request.dynamics.size() != 1) return;  // an earlier row's choice may decide a later one
    auto fresh = create();
    ASSERT_TRUE(fresh);
    for (const Lease& lease : allocator_->leases()) ASSERT_OK(fresh->restore(lease));
    for (const auto& pool : fresh->usage()) ASSERT_EQ(pool.quarantined, 0u);
    auto lease = fresh->allocate(request, probe_);
    ASSERT_FALSE(lease) << "granted without quarantine: " << lease->ports.at(0).hostPort;
    EXPECT_EQ(lease.error().code, ErrorCode::kExhausted) << lease.error().message;
    ++exhaustedRechecked_;
  }

  uint32_t below(uint32_t n) { return static_cast<uint32_t>(rng_() % n); }
  bool pick(uint32_t oneIn) { return below(oneIn + 1) == 0; }
  // A random port from one of the [low, high] pairs in `bounds`.
  uint16_t pick(std::initializer_list<uint16_t> bounds) {
    const auto* pair = bounds.begin() + 2 * below(static_cast<uint32_t>(bounds.size() / 2));
    return static_cast<uint16_t>(pair[0] + below(pair[1] - pair[0] + 1u));
  }

  AllocationRequest randomRequest() {
    AllocationRequest request;
    request.key = {"c" + std::to_string(below(200)), pick(3) ? "eth1" : "eth0"};
    request.pod = {"ns", "pod-" + std::to_string(below(60)), ""};  // pods come back: sticky
    request.pool = pick(3) ? "small" : (pick(1) ? "" : "default");
    const uint32_t dynamics = below(3);
    for (uint32_t i = 0; i < dynamics; ++i) {
      request.dynamics.push_back({"d" + std::to_string(below(3)), 5000,
                                  static_cast<uint16_t>(pick(3) ? 1 + below(6) : 1),
                                  kProtocols[below(4)]});
    }
    if (pick(2)) {
      static const std::optional<IpAddress> kAddresses[] = {
          std::nullopt, *IpAddress::parse("10.0.0.1"), *IpAddress::parse("10.0.0.2"),
          *IpAddress::parse("0.0.0.0")};
      request.statics.push_back({pick({80, 89, 30000, 30149, 40000, 40019}), 80,
                                 kProtocols[below(4)], kAddresses[below(4)]});
    }
    return request;
  }

  void step() {
    now_ += std::chrono::seconds(1);
    const uint32_t op = below(100);
    if (op < 60) {
      const AllocationRequest request = randomRequest();
      const auto before = allocator_->usage();
      auto lease = allocator_->allocate(request, probe_);
      const auto known = model_.find(request.key);
      if (known != model_.end()) {
        ASSERT_OK(lease);
        EXPECT_EQ(*lease, known->second);  // idempotent whatever the request says
      } else if (lease) {
        EXPECT_EQ(lease->ports.size(), request.dynamics.size() + request.statics.size());
        model_.emplace(request.key, *lease);
        ++granted_;
      } else {
        const auto code = lease.error().code;
        EXPECT_TRUE(code == ErrorCode::kExhausted || code == ErrorCode::kConflict ||
                    code == ErrorCode::kInvalidArgument)
            << lease.error().message;
        if (code == ErrorCode::kInvalidArgument) {
          // Only sctp in the tcp/udp pool is invalid in these requests.
          EXPECT_NE(lease.error().message.find("allows only tcp, udp"), std::string::npos)
              << lease.error().message;
        }
        for (std::size_t i = 0; i < before.size(); ++i) {
          EXPECT_EQ(allocator_->usage()[i].used, before[i].used) << "a failure left a trace";
        }
        if (code == ErrorCode::kExhausted) expectExhaustedWithoutQuarantine(request);
        ++refused_;
      }
    } else if (op < 97) {
      const AttachmentKey key{"c" + std::to_string(below(200)), pick(3) ? "eth1" : "eth0"};
      auto released = allocator_->release(key);
      const auto known = model_.find(key);
      ASSERT_EQ(released.has_value(), known != model_.end());
      if (released) {
        EXPECT_EQ(*released, known->second);
        model_.erase(known);
      }
    } else {
      // Restart: replay every lease into a fresh allocator, which must accept them all.
      auto fresh = create();
      ASSERT_TRUE(fresh);
      for (const Lease& lease : allocator_->leases()) {
        auto restored = fresh->restore(lease);
        ASSERT_OK(restored);
      }
      EXPECT_EQ(fresh->usage()[0].used, allocator_->usage()[0].used);
      EXPECT_EQ(fresh->usage()[1].used, allocator_->usage()[1].used);
      hostConflicts_ += allocator_->hostConflicts();
      allocator_.emplace(std::move(*fresh));
    }
  }

  void checkInvariants() {
    ASSERT_EQ(allocator_->leaseCount(), model_.size());
    const std::vector<Lease> listed = allocator_->leases();
    std::vector<Lease> expected;
    for (const auto& [key, lease] : model_) expected.push_back(lease);
    ASSERT_EQ(listed, expected);

    struct Hold {
      const Lease* lease;
      std::optional<IpAddress> hostIp;
    };
    std::map<std::pair<Protocol, uint16_t>, std::vector<Hold>> holds;
    std::set<uint16_t> numbers;
    for (const auto& [key, lease] : model_) {
      for (const auto& grant : lease.ports) {
        if (grant.isStatic) {
          std::optional<IpAddress> hostIp = grant.hostIp;
          if (hostIp && hostIp->isUnspecified()) hostIp.reset();
          for (const auto protocol : kernelProtocols(grant.protocol)) {
            holds[{protocol, grant.hostPort}].push_back({&lease, hostIp});
            EXPECT_FALSE(probe_.isBound(protocol, grant.hostPort));
          }
          numbers.insert(grant.hostPort);
          continue;
        }
        const auto& pool = lease.pool == "small" ? pools_[1] : pools_[0];
        const bool inOneRange = std::ranges::any_of(pool.ranges, [&](const PortRange& range) {
          return range.contains(grant.hostPort) &&
                 range.contains(grant.hostPort + grant.count - 1u);
        });
        EXPECT_TRUE(inOneRange) << lease.key.str() << " " << grant.hostPort << "+" << grant.count;
        for (uint32_t port = grant.hostPort; port < grant.hostPort + uint32_t{grant.count};
             ++port) {
          for (const auto protocol : kernelProtocols(grant.protocol)) {
            EXPECT_FALSE(probe_.isBound(protocol, static_cast<uint16_t>(port)));
          }
          // A dynamic number belongs to its lease in every protocol.
          for (const auto protocol : {Protocol::kTcp, Protocol::kUdp, Protocol::kSctp}) {
            holds[{protocol, static_cast<uint16_t>(port)}].push_back({&lease, std::nullopt});
          }
          numbers.insert(static_cast<uint16_t>(port));
        }
      }
    }
    for (const auto& [where, list] : holds) {
      for (std::size_t i = 0; i < list.size(); ++i) {
        for (std::size_t j = i + 1; j < list.size(); ++j) {
          if (list[i].lease == list[j].lease) continue;
          const bool overlap =
              !list[i].hostIp || !list[j].hostIp || *list[i].hostIp == *list[j].hostIp;
          EXPECT_FALSE(overlap) << "port " << where.second << " of " << list[i].lease->key.str()
                                << " and " << list[j].lease->key.str();
        }
      }
    }
    const auto usage = allocator_->usage();
    for (std::size_t p = 0; p < pools_.size(); ++p) {
      uint32_t used = 0;
      for (const uint16_t port : numbers) {
        used += std::ranges::any_of(pools_[p].ranges,
                                    [&](const PortRange& r) { return r.contains(port); });
      }
      EXPECT_EQ(usage[p].used, used) << pools_[p].name;
    }
  }

  std::mt19937_64 rng_{20240611};
  std::vector<PoolSpec> pools_;
  std::optional<Allocator> allocator_;
  FakePortProbe probe_;
  std::map<AttachmentKey, Lease> model_;
  int granted_ = 0;
  int refused_ = 0;
  uint64_t hostConflicts_ = 0;  // of the allocators replaced by a restart
  int exhaustedRechecked_ = 0;
  std::chrono::steady_clock::time_point now_{};
};

TEST_P(AllocatorPropertyTest, KeepsEveryPortInOneLeaseThroughRandomSequences) {
  for (int i = 0; i < 4000; ++i) {
    ASSERT_NO_FATAL_FAILURE(step()) << "step " << i;
    if (i % 8 == 0) {
      ASSERT_NO_FATAL_FAILURE(checkInvariants()) << "step " << i;
    }
    if (HasFailure()) FAIL() << "step " << i;
  }
  checkInvariants();
  // The sequences exercised both outcomes, not just one.
  EXPECT_GT(granted_, 500);
  EXPECT_GT(refused_, 50);
  EXPECT_GT(exhaustedRechecked_, 10);
  EXPECT_GT(hostConflicts_ + allocator_->hostConflicts(), 0u);
  for (const auto& [key, lease] : std::map(model_)) {
    ASSERT_TRUE(allocator_->release(key));
    model_.erase(key);
  }
  for (const auto& pool : allocator_->usage()) EXPECT_EQ(pool.used, 0u) << pool.name;
}

INSTANTIATE_TEST_SUITE_P(Strategies, AllocatorPropertyTest,
                         ::testing::Values(std::tuple(Strategy::kLowest, Strategy::kLowest),
                                           std::tuple(Strategy::kRandom, Strategy::kRandom),
                                           std::tuple(Strategy::kRoundRobin, Strategy::kRoundRobin),
                                           std::tuple(Strategy::kRoundRobin, Strategy::kRandom),
                                           std::tuple(Strategy::kRandom, Strategy::kLowest)),
                         [](const auto& info) {
                           std::string name = std::string(strategyName(std::get<0>(info.param))) +
                                              "_" +
                                              std::string(strategyName(std::get<1>(info.param)));
                           std::ranges::replace(name, '-', '_');
                           return name;
                         });

}  // namespace
}  // namespace hostport::agent::core
