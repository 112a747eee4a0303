// Every encoding of a Lease keeps every field: the wire's JSON (agent/api/json_codec.h), the
// store's codec (agent/store/lease_codec.h) and the allocator's packed form
// (agent/core/packed_lease.h), each over the one lease with every field set
// (tests/support/lease_samples.h), and over it with each optional field taken away.

#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <vector>

#include "agent/api/json_codec.h"
#include "agent/core/packed_lease.h"
#include "agent/core/string_table.h"
#include "agent/store/lease_codec.h"
#include "tests/support/lease_samples.h"
#include "tests/support/result_assertions.h"

namespace hostport::agent {
namespace {

struct Encoding {
  std::string name;
  std::function<Result<Lease>(const Lease&)> roundTrip;
  /// What the encoding is meant to carry of `lease`: all of it, unless said otherwise.
  std::function<Lease(Lease)> carried = [](Lease lease) { return lease; };
};

std::vector<Encoding> encodings() {
  return {
      {"json",
       [](const Lease& lease) {
         return api::leaseFromJson(nlohmann::json::parse(api::toJson(lease).dump()));
       },
       // The agent's own record of the netns (its device and inode, for liveness), read from the
       // path when a request comes: a client neither sends nor needs it.
       [](Lease lease) {
         lease.netnsId = {};
         return lease;
       }},
      {"store",
       [](const Lease& lease) -> Result<Lease> {
         std::string bytes;
         HOSTPORT_TRY_VOID(store::encodeLease(lease, bytes));
         return store::decodeLease(bytes);
       }},
      {"packed",
       [](const Lease& lease) -> Result<Lease> {
         core::StringTable strings;
         core::PackedLease packed = core::PackedLease::pack(lease, lease.pool, strings);
         Lease unpacked = packed.unpack(strings);
         packed.release(strings);
         return unpacked;
       }},
  };
}

/// The lease with every field, and each of its optional parts taken away in turn.
std::vector<std::pair<std::string, Lease>> samples() {
  const Lease full = test::leaseWithEveryField();
  std::vector<std::pair<std::string, Lease>> all{{"every field", full}};
  const auto without = [&](const std::string& what, const std::function<void(Lease&)>& change) {
    Lease lease = full;
    change(lease);
    all.emplace_back(what, std::move(lease));
  };
  without("no forwarding", [](Lease& l) { l.forwarding.reset(); });
  without("no pod IPv4", [](Lease& l) { l.forwarding->podV4.reset(); });
  without("no pod IPv6", [](Lease& l) { l.forwarding->podV6.reset(); });
  without("snat, no masqAll", [](Lease& l) {
    l.forwarding->snat = true;
    l.forwarding->masqAll = false;
  });
  without("no conditions", [](Lease& l) {
    l.forwarding->conditionsV4.clear();
    l.forwarding->conditionsV6.clear();
  });
  without("no netns id", [](Lease& l) { l.netnsId = {}; });
  without("sticky", [](Lease& l) { l.sticky = true; });
  without("no ports", [](Lease& l) { l.ports.clear(); });
  without("no pod", [](Lease& l) { l.pod = {}; });
  return all;
}

TEST(LeaseEncodingsTest, EveryEncodingKeepsEveryField) {
  for (const Encoding& encoding : encodings()) {
    for (const auto& [what, lease] : samples()) {
      SCOPED_TRACE(encoding.name + ": " + what);
      ASSERT_OK_AND_ASSIGN(const Lease back, encoding.roundTrip(lease));
      EXPECT_EQ(back, encoding.carried(lease));
    }
  }
}

TEST(LeaseEncodingsTest, TheSampleSetsEveryFieldAwayFromItsDefault) {
  const Lease lease = test::leaseWithEveryField();
  const Lease defaults;
  EXPECT_NE(lease.key, defaults.key);
  EXPECT_NE(lease.pod, defaults.pod);
  EXPECT_NE(lease.netns, defaults.netns);
  EXPECT_NE(lease.pool, defaults.pool);
  EXPECT_FALSE(lease.ports.empty());
  ASSERT_TRUE(lease.forwarding.has_value());
  EXPECT_TRUE(lease.forwarding->podV4 && lease.forwarding->podV6);
  EXPECT_NE(lease.forwarding->snat, Forwarding{}.snat);
  EXPECT_NE(lease.forwarding->masqAll, Forwarding{}.masqAll);
  EXPECT_FALSE(lease.forwarding->conditionsV4.empty() || lease.forwarding->conditionsV6.empty());
  EXPECT_TRUE(lease.netnsId.known());
  EXPECT_NE(lease.sticky, defaults.sticky);
}

}  // namespace
}  // namespace hostport::agent
