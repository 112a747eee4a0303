// The pod socket's rules on who may wait and what its per-caller cap counts, for every kind of
// caller: a pod, a pod with a user namespace of its own (KEP-127), a container that makes
// namespaces, a node user that makes them (the attack of issue 29), and deeper nestings.

#include "agent/server/caller_identity.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace hostport::agent::server {
namespace {

using ::testing::HasSubstr;

constexpr NetnsId kNetns{7, 4026532001};
constexpr NamespaceId kContainerPidns{7, 4026532500};
constexpr NamespaceId kPodUserns{7, 4026532900};

NetnsOwner ownedByAgents() {
  NetnsOwner owner;
  owner.place = NetnsOwner::Place::kAgents;
  return owner;
}

NetnsOwner ownedBelow(int depth, uid_t creator) {
  NetnsOwner owner;
  owner.place = NetnsOwner::Place::kBelow;
  owner.depth = depth;
  owner.outermost = kPodUserns;
  owner.outermostCreator = creator;
  return owner;
}

struct CallerCase {
  std::string who;
  CallerNamespaces caller;
  CallerKey key;
  bool canBeASandbox;
  std::string whyNot;  // a part of the reason, when it cannot
};

TEST(CallerIdentityTest, CountsEachCallerByWhatItCannotMultiplyAndLetsOnlySandboxesWait) {
  using Kind = CallerKey::Kind;
  const CallerKey byNetns{Kind::kNetns, kNetns.device, kNetns.inode};
  const CallerKey byContainer{Kind::kPidns, kContainerPidns.device, kContainerPidns.inode};
  const std::vector<CallerCase> cases = {
      {"a pod's process in its sandbox", {ownedByAgents(), kContainerPidns, 1000}, byNetns, true},
      {"a node process in a netns root made", {ownedByAgents(), std::nullopt, 0}, byNetns, true},
      {"a KEP-127 pod, netns owned by the pod's user namespace",
       {ownedBelow(1, 0), kContainerPidns, 165536},
       byContainer,
       true},
      {"a container's root that made a user and network namespace",
       {ownedBelow(1, 0), kContainerPidns, 0},
       byContainer,
       true},
      {"a container's process that made them as uid 1000",
       {ownedBelow(1, 1000), kContainerPidns, 1000},
       byContainer,
       false,
       "uid 1000 made"},
      {"a KEP-127 pod that nested its own",
       {ownedBelow(2, 0), kContainerPidns, 165536},
       byContainer,
       false,
       "nested 2 levels"},
      {"uid 65534 on the node: unshare -Urn",
       {ownedBelow(1, 65534), std::nullopt, 65534},
       {Kind::kUid, 65534, 0},
       false,
       "uid 65534 made"},
      {"uid 65534 on the node, nested twice",
       {ownedBelow(2, 65534), std::nullopt, 65534},
       {Kind::kUid, 65534, 0},
       false,
       "nested 2 levels"},
      {"a netns owned outside the agent's user namespace",
       {NetnsOwner{}, std::nullopt, 0},
       {Kind::kUid, 0, 0},
       false,
       "outside the agent's"},
  };
  for (const auto& entry : cases) {
    EXPECT_EQ(callerKey(kNetns, entry.caller), entry.key)
        << entry.who << ": " << callerKey(kNetns, entry.caller).str();
    const auto never = whyNeverASandbox(entry.caller.netnsOwner);
    EXPECT_EQ(!never.has_value(), entry.canBeASandbox) << entry.who;
    if (never) EXPECT_THAT(*never, HasSubstr(entry.whyNot)) << entry.who;
  }
}

TEST(CallerIdentityTest, NamesTheKeyForTheLog) {
  EXPECT_EQ((CallerKey{CallerKey::Kind::kNetns, 7, 4026532001}.str()), "netns net:[4026532001]");
  EXPECT_EQ((CallerKey{CallerKey::Kind::kPidns, 7, 4026532500}.str()),
            "pid namespace pid:[4026532500]");
  EXPECT_EQ((CallerKey{CallerKey::Kind::kUid, 65534, 0}.str()), "uid 65534");
  EXPECT_EQ(CallerKey{}.str(), "unidentified");
}

}  // namespace
}  // namespace hostport::agent::server
