#include "agent/store/replay_state.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "store_test_util.h"

namespace hostport::agent::store {
namespace {

using testing::sampleLease;

Lease leaseWithKey(std::string containerId, std::string ifname, std::string netns = "") {
  Lease lease;
  lease.key = {std::move(containerId), std::move(ifname)};
  lease.netns = std::move(netns);
  return lease;
}

std::vector<AttachmentKey> keysOf(const std::vector<Lease>& leases) {
  std::vector<AttachmentKey> keys;
  for (const Lease& lease : leases) keys.push_back(lease.key);
  return keys;
}

class ReplayStateTest : public ::testing::Test {
 protected:
  ReplayState state_;
};

TEST_F(ReplayStateTest, StartsEmpty) { EXPECT_TRUE(state_.takeSorted().empty()); }

TEST_F(ReplayStateTest, AdoptsTheSnapshotLeasesSortedByKey) {
  state_.adopt({sampleLease(3), sampleLease(1), sampleLease(2)});
  EXPECT_EQ(state_.takeSorted(),
            (std::vector<Lease>{sampleLease(1), sampleLease(2), sampleLease(3)}));
}

TEST_F(ReplayStateTest, AdoptKeepsTheLaterLeaseOfAKeyThatAppearsTwice) {
  const Lease earlier = leaseWithKey("c1", "eth0", "/run/netns/earlier");
  const Lease later = leaseWithKey("c1", "eth0", "/run/netns/later");
  state_.adopt({earlier, sampleLease(1), later});
  const std::vector<Lease> leases = state_.takeSorted();
  ASSERT_EQ(leases.size(), 2u);
  EXPECT_EQ(leases[0], sampleLease(1));  // "c0ffee1..." sorts before "c1"
  EXPECT_EQ(leases[1], later);
}

TEST_F(ReplayStateTest, AdoptedDuplicateIsReleasedOnceAndThenUnknown) {
  state_.adopt({leaseWithKey("c1", "eth0", "a"), leaseWithKey("c1", "eth0", "b")});
  EXPECT_TRUE(state_.release({"c1", "eth0"}));
  EXPECT_FALSE(state_.release({"c1", "eth0"}));
  EXPECT_TRUE(state_.takeSorted().empty());
}

TEST_F(ReplayStateTest, GrantAddsALeaseOfANewKey) {
  state_.adopt({sampleLease(1)});
  state_.grant(sampleLease(2));
  EXPECT_EQ(state_.takeSorted(), (std::vector<Lease>{sampleLease(1), sampleLease(2)}));
}

TEST_F(ReplayStateTest, GrantReplacesTheLeaseOfAnExistingKey) {
  state_.adopt({leaseWithKey("c1", "eth0", "/run/netns/snapshot"), sampleLease(1)});
  state_.grant(leaseWithKey("c1", "eth0", "/run/netns/journal"));
  state_.grant(leaseWithKey("c2", "eth0", "/run/netns/first"));
  state_.grant(leaseWithKey("c2", "eth0", "/run/netns/second"));
  EXPECT_EQ(state_.takeSorted(),
            (std::vector<Lease>{sampleLease(1), leaseWithKey("c1", "eth0", "/run/netns/journal"),
                                leaseWithKey("c2", "eth0", "/run/netns/second")}));
}

TEST_F(ReplayStateTest, ReleaseOfAnUnknownKeyIsFalseAndChangesNothing) {
  state_.adopt({sampleLease(1)});
  EXPECT_FALSE(state_.release(sampleLease(2).key));
  EXPECT_FALSE(state_.release({sampleLease(1).key.containerId, "eth9"}));
  EXPECT_EQ(state_.takeSorted(), (std::vector<Lease>{sampleLease(1)}));
}

TEST_F(ReplayStateTest, ReleaseOnAnEmptyStateIsFalse) {
  EXPECT_FALSE(state_.release({"c1", "eth0"}));
}

TEST_F(ReplayStateTest, TakeSortedDropsReleasedLeases) {
  state_.adopt({sampleLease(4), sampleLease(1), sampleLease(3)});
  state_.grant(sampleLease(2));
  state_.grant(sampleLease(0));
  EXPECT_TRUE(state_.release(sampleLease(3).key));
  EXPECT_TRUE(state_.release(sampleLease(0).key));
  EXPECT_FALSE(state_.release(sampleLease(0).key));
  EXPECT_EQ(state_.takeSorted(),
            (std::vector<Lease>{sampleLease(1), sampleLease(2), sampleLease(4)}));
}

TEST_F(ReplayStateTest, GrantAfterReleaseBringsTheKeyBack) {
  state_.grant(leaseWithKey("c1", "eth0", "first"));
  EXPECT_TRUE(state_.release({"c1", "eth0"}));
  state_.grant(leaseWithKey("c1", "eth0", "second"));
  EXPECT_EQ(state_.takeSorted(), (std::vector<Lease>{leaseWithKey("c1", "eth0", "second")}));
}

TEST_F(ReplayStateTest, TakeSortedOrdersKeysThatShareTheirFirstEightBytesByTheWholeKey) {
  // The sort compares an 8-byte prefix first: these keys tie on it (a 7-byte ID is padded with
  // zero bytes, so "abcdefg" ties with "abcdefg\0"), and only the whole key orders them.
  const std::vector<AttachmentKey> sorted = {
      {"abcdefg", "eth0"},    {std::string("abcdefg\0", 8), "eth0"},
      {"abcdefgh", "eth0"},   {"abcdefgh", "eth1"},
      {"abcdefgh0", "eth0"},  {"abcdefgh1", "eth0"},
      {"abcdefgh1z", "eth0"}, {"abcdefgh2", "eth0"},
      {"abcdefgi", "eth0"},   {"b", "eth0"},
      {"\xff", "eth0"},  // bytes above 0x7f sort last, as std::string compares them
  };
  std::vector<AttachmentKey> shuffled = sorted;
  std::shuffle(shuffled.begin(), shuffled.end(), std::mt19937(7));
  for (const AttachmentKey& key : shuffled) state_.grant(leaseWithKey(key.containerId, key.ifname));
  EXPECT_EQ(keysOf(state_.takeSorted()), sorted);
}

TEST_F(ReplayStateTest, MatchesAnOrderedMapOverARandomReplay) {
  // The in-place sort follows permutation cycles; a long random mix of adopt, grant and
  // release checks it against the obvious model.
  std::mt19937 random(42);
  std::map<AttachmentKey, Lease> model;
  std::vector<Lease> snapshot;
  for (int i = 0; i < 300; ++i) {
    Lease lease = sampleLease(static_cast<int>(random() % 400));
    model[lease.key] = lease;
    snapshot.push_back(std::move(lease));
  }
  state_.adopt(std::move(snapshot));
  for (int step = 0; step < 3000; ++step) {
    Lease lease = sampleLease(static_cast<int>(random() % 400));
    lease.netns = "step-" + std::to_string(step);
    if (random() % 3 == 0) {
      EXPECT_EQ(state_.release(lease.key), model.erase(lease.key) == 1) << "step " << step;
    } else {
      model[lease.key] = lease;
      state_.grant(std::move(lease));
    }
  }
  std::vector<Lease> expected;
  for (auto& [key, lease] : model) expected.push_back(lease);
  EXPECT_EQ(state_.takeSorted(), expected);
}

TEST_F(ReplayStateTest, ReserveChangesNothingVisible) {
  state_.reserve(1000);
  state_.adopt({sampleLease(2)});
  state_.reserve(10);
  state_.grant(sampleLease(1));
  EXPECT_EQ(state_.takeSorted(), (std::vector<Lease>{sampleLease(1), sampleLease(2)}));
}

}  // namespace
}  // namespace hostport::agent::store
