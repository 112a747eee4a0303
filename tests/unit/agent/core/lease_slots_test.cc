#include "agent/core/lease_slots.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

namespace hostport::agent::core {
namespace {

Lease lease(std::string containerId, std::string ifname = "eth0", uint16_t hostPort = 30000) {
  Lease out;
  out.key = {std::move(containerId), std::move(ifname)};
  out.pod = {"games", "server-" + out.key.containerId, ""};
  out.netns = "/var/run/netns/test";
  out.pool = "default";
  out.ports = {PortGrant{"web", PortProtocol::kTcp, hostPort, 8080, 1, std::nullopt, false}};
  return out;
}

class LeaseSlotsTest : public ::testing::Test {
 protected:
  uint32_t hold(const Lease& held) { return slots_.insert(slots_.pack(held, held.pool), held); }

  std::vector<AttachmentKey> keysInOrder() const {
    std::vector<AttachmentKey> out;
    for (const uint32_t slot : slots_.keyOrder()) out.push_back(slots_.leaseAt(slot).key);
    return out;
  }

  LeaseSlots slots_;
};

TEST_F(LeaseSlotsTest, FindsALeaseByItsKeyOrItsPackedKeyBytes) {
  const Lease a = lease("a");
  const uint32_t slot = hold(a);
  hold(lease("b"));
  EXPECT_EQ(slots_.size(), 2u);
  EXPECT_EQ(slots_.find(a.key), slot);
  std::string bytes;
  PackedLease::packKey(a.key, bytes);
  EXPECT_EQ(slots_.find(std::string_view(bytes)), slot);
  EXPECT_EQ(slots_.leaseAt(slot), a);
  EXPECT_EQ(slots_.find(AttachmentKey{"a", "eth1"}), std::nullopt);
  EXPECT_EQ(slots_.find(AttachmentKey{"c", "eth0"}), std::nullopt);
}

TEST_F(LeaseSlotsTest, PacksUnderThePoolItIsGiven) {
  Lease unnamed = lease("a");
  unnamed.pool = "";
  const uint32_t slot = slots_.insert(slots_.pack(unnamed, "default"), unnamed);
  EXPECT_EQ(slots_.leaseAt(slot).pool, "default");
}

// The pod socket answers a caller with the leases of its netns or its pod: looked up, at any number
// of leases, and gone from the lookup with the lease.
TEST_F(LeaseSlotsTest, FindsTheLeasesOfANetnsAndOfAPodWithoutAScan) {
  std::vector<uint32_t> held;
  for (uint64_t i = 1; i <= 3000; ++i) {
    Lease one = lease("c" + std::to_string(i), i % 2 == 0 ? "eth1" : "eth0");
    one.netnsId = {7, 1000 + i / 2};  // two interfaces a netns
    one.pod.uid = "uid-" + std::to_string(i / 2);
    held.push_back(hold(one));
  }
  Lease hostNetwork = lease("");
  hostNetwork.key = AttachmentKey::ofHostNetworkPod("uid-600");
  const uint32_t hostSlot = hold(hostNetwork);

  auto slots = slots_.inNetns({7, 1600});
  std::ranges::sort(slots);
  EXPECT_EQ(slots, (std::vector<uint32_t>{held[1199], held[1200]}));
  EXPECT_TRUE(slots_.inNetns({8, 1600}).empty()) << "another device, another namespace";
  EXPECT_TRUE(slots_.inNetns({}).empty()) << "an unknown identity names no netns";

  auto pod = slots_.ofPod("uid-600");
  std::ranges::sort(pod);
  EXPECT_EQ(pod, (std::vector<uint32_t>{held[1199], held[1200], hostSlot}));
  EXPECT_TRUE(slots_.ofPod("uid-6000").empty());
  EXPECT_TRUE(slots_.ofPod("").empty());

  slots_.remove(held[1199]);
  EXPECT_EQ(slots_.inNetns({7, 1600}), std::vector<uint32_t>{held[1200]});
  slots_.remove(hostSlot);
  EXPECT_EQ(slots_.ofPod("uid-600"), std::vector<uint32_t>{held[1200]});
  // The slot, reused by another pod's lease, is found under that pod alone.
  Lease other = lease("other");
  other.netnsId = {7, 9999};
  other.pod.uid = "uid-other";
  EXPECT_EQ(hold(other), hostSlot);
  EXPECT_EQ(slots_.inNetns({7, 9999}), std::vector<uint32_t>{hostSlot});
  EXPECT_EQ(slots_.ofPod("uid-other"), std::vector<uint32_t>{hostSlot});
  EXPECT_EQ(slots_.ofPod("uid-600"), std::vector<uint32_t>{held[1200]});
}

// Thousands of leases of one netns (a bench's fabricated pods, a pod with many interfaces) are one
// chain, not thousands of colliding index entries: removal in any order leaves exactly the rest.
TEST_F(LeaseSlotsTest, ManyLeasesOfOneNetnsAreFoundAndRemovedInAnyOrder) {
  std::vector<uint32_t> held;
  for (int i = 0; i < 3000; ++i) {
    Lease one = lease("n" + std::to_string(i));
    one.netnsId = {9, 4242};
    one.pod.uid = "shared-uid";
    held.push_back(hold(one));
  }
  std::vector<uint32_t> kept;
  for (std::size_t i = 0; i < held.size(); ++i) {
    // The first (the chain's head), then every third, go.
    if (i == 0 || i % 3 == 1) {
      slots_.remove(held[i]);
    } else {
      kept.push_back(held[i]);
    }
  }
  auto found = slots_.inNetns({9, 4242});
  std::ranges::sort(found);
  std::ranges::sort(kept);
  EXPECT_EQ(found, kept);
  auto ofPod = slots_.ofPod("shared-uid");
  std::ranges::sort(ofPod);
  EXPECT_EQ(ofPod, kept);
  for (const uint32_t slot : kept) slots_.remove(slot);
  EXPECT_TRUE(slots_.inNetns({9, 4242}).empty());
  EXPECT_TRUE(slots_.ofPod("shared-uid").empty());
}

TEST_F(LeaseSlotsTest, RemovingGivesTheLeaseBackAndFreesItsSlotForTheNext) {
  const Lease a = lease("a");
  const uint32_t slot = hold(a);
  hold(lease("b"));
  EXPECT_EQ(slots_.remove(slot), a);
  EXPECT_EQ(slots_.size(), 1u);
  EXPECT_EQ(slots_.find(a.key), std::nullopt);
  EXPECT_EQ(hold(lease("c")), slot);  // reused, not a new slot
  EXPECT_EQ(slots_.size(), 2u);
  EXPECT_EQ(slots_.leaseAt(slot).key.containerId, "c");
}

TEST_F(LeaseSlotsTest, GivesBackTheTextItInternedWhenLeasesGo) {
  const uint32_t a = hold(lease("a"));
  const uint32_t b = hold(lease("b"));
  EXPECT_GT(slots_.strings().size(), 0u);
  slots_.remove(a);
  EXPECT_GT(slots_.strings().size(), 0u);  // "games", "default"... are still b's
  slots_.remove(b);
  EXPECT_EQ(slots_.strings().size(), 0u);
}

TEST_F(LeaseSlotsTest, DiscardingAPackedLeaseGivesBackItsReferences) {
  PackedLease packed = slots_.pack(lease("a"), "default");
  EXPECT_GT(slots_.strings().size(), 0u);
  slots_.discard(packed);
  EXPECT_TRUE(packed.empty());
  EXPECT_EQ(slots_.strings().size(), 0u);
  EXPECT_EQ(slots_.size(), 0u);
}

TEST_F(LeaseSlotsTest, ListsSlotsInKeyOrderWhateverTheOrderOfTheSlots) {
  for (const char* id : {"m", "b", "z", "a"}) hold(lease(id));
  hold(lease("b", "eth1"));
  slots_.remove(*slots_.find(AttachmentKey{"z", "eth0"}));
  hold(lease("c"));  // in z's slot
  EXPECT_EQ(keysInOrder(),
            (std::vector<AttachmentKey>{
                {"a", "eth0"}, {"b", "eth0"}, {"b", "eth1"}, {"c", "eth0"}, {"m", "eth0"}}));
}

TEST_F(LeaseSlotsTest, OrdersByContainerIdBeforeIfnameEvenWhenOneIsAPrefix) {
  // "ab"+"c" and "a"+"bc" concatenate alike; the order is (containerId, ifname), as for
  // AttachmentKey.
  hold(lease("ab", "c"));
  hold(lease("a", "bc"));
  hold(lease("a", "b"));
  std::vector<AttachmentKey> expected = {{"a", "b"}, {"a", "bc"}, {"ab", "c"}};
  EXPECT_EQ(keysInOrder(), expected);
  EXPECT_TRUE(std::ranges::is_sorted(expected));
}

// A pass over every lease a chunk at a time (the reconciler's, without the service's lock in
// between) sees each held slot once, freed slots skipped, and learns where to go on.
TEST_F(LeaseSlotsTest, VisitsHeldSlotsAChunkAtATimeEachOnce) {
  for (int i = 0; i < 10; ++i) hold(lease("c" + std::to_string(i)));
  (void)slots_.remove(*slots_.find(AttachmentKey{"c3", "eth0"}));
  (void)slots_.remove(*slots_.find(AttachmentKey{"c4", "eth0"}));
  std::vector<uint32_t> seen;
  std::vector<std::size_t> chunks;
  std::optional<uint32_t> next = 0;
  while (next) {
    const std::size_t before = seen.size();
    next = slots_.forEachHeldFrom(*next, 3, [&](uint32_t slot) { seen.push_back(slot); });
    chunks.push_back(seen.size() - before);
  }
  EXPECT_EQ(seen, (std::vector<uint32_t>{0, 1, 2, 5, 6, 7, 8, 9}));
  EXPECT_EQ(chunks, (std::vector<std::size_t>{3, 3, 2}));
}

TEST_F(LeaseSlotsTest, ReservingChangesNothingHeld) {
  const Lease a = lease("a");
  hold(a);
  slots_.reserve(1000);
  EXPECT_EQ(slots_.size(), 1u);
  EXPECT_EQ(slots_.leaseAt(*slots_.find(a.key)), a);
  for (int i = 0; i < 1000; ++i) hold(lease("id" + std::to_string(i)));
  EXPECT_EQ(slots_.size(), 1001u);
  EXPECT_EQ(slots_.keyOrder().size(), 1001u);
}

}  // namespace
}  // namespace hostport::agent::core
