#include "agent/core/allocation_error.h"

#include <gtest/gtest.h>

#include <string>

#include "common/identifiers.h"

namespace hostport::agent::core {
namespace {

Lease holder(PodIdentity pod = {"ns", "web-0", "uid"}) {
  Lease lease;
  lease.key = {"c1", "eth0"};
  lease.pod = std::move(pod);
  lease.ports = {PortGrant{"", PortProtocol::kTcp, 80, 80, 1, std::nullopt, true}};
  return lease;
}

TEST(AllocationErrorTest, QuotesAKeyWithoutCuttingAValidOne) {
  EXPECT_EQ(quotedKey({"c1", "eth0"}), "\"c1/eth0\"");
  const AttachmentKey longest{std::string(kMaxContainerIdLength, 'a'),
                              std::string(kMaxIfnameLength, 'b')};
  EXPECT_EQ(quotedKey(longest), "\"" + longest.str() + "\"");
  EXPECT_EQ(quotedKey({"a\"b", "eth0"}), "\"a\\\"b/eth0\"");
}

TEST(AllocationErrorTest, NamesTheLeaseHoldingAPortAndItsPod) {
  const Error error = heldError(Protocol::kUdp, 53, holder());
  EXPECT_EQ(error.code, ErrorCode::kConflict);
  EXPECT_EQ(error.message, "port udp/53 is held by attachment \"c1/eth0\" (pod \"ns/web-0\")");
  EXPECT_EQ(heldError(Protocol::kTcp, 80, holder({})).message,
            "port tcp/80 is held by attachment \"c1/eth0\"");
}

TEST(AllocationErrorTest, CarriesTheLeaseAsTheConflictOfARefusedClaim) {
  const AllocationError error = heldConflict(Protocol::kTcp, 80, holder());
  EXPECT_EQ(error.code, ErrorCode::kConflict);
  EXPECT_EQ(error.message, heldError(Protocol::kTcp, 80, holder()).message);
  ASSERT_TRUE(error.conflict);
  EXPECT_EQ(error.conflict->protocol, Protocol::kTcp);
  EXPECT_EQ(error.conflict->port, 80);
  EXPECT_EQ(error.conflict->lease, holder());
  EXPECT_FALSE(error.refusal);
}

TEST(AllocationErrorTest, NamesAsMuchOfAHostProcessAsTheKernelTold) {
  const AllocationError both = boundOnHost(Protocol::kTcp, 8080, PortHolder{1234, "nginx"});
  EXPECT_EQ(both.code, ErrorCode::kConflict);
  EXPECT_EQ(both.message, "port tcp/8080 is in use on the host by pid 1234 (\"nginx\")");
  ASSERT_TRUE(both.conflict);
  EXPECT_FALSE(both.conflict->lease);
  EXPECT_EQ(both.conflict->host.pid, 1234u);
  EXPECT_EQ(both.conflict->host.command, "nginx");

  EXPECT_EQ(boundOnHost(Protocol::kTcp, 8080, {1234, ""}).message,
            "port tcp/8080 is in use on the host by pid 1234");
  EXPECT_EQ(boundOnHost(Protocol::kTcp, 8080, {0, "nginx"}).message,
            "port tcp/8080 is in use on the host by \"nginx\"");
  EXPECT_EQ(boundOnHost(Protocol::kTcp, 8080, {}).message, "port tcp/8080 is in use on the host");
}

TEST(AllocationErrorTest, QuotesAHostCommandItCannotTrust) {
  const std::string message =
      boundOnHost(Protocol::kUdp, 53, {7, "evil\nline-with-a-long-tail"}).message;
  EXPECT_EQ(message.find('\n'), std::string::npos) << message;
  EXPECT_NE(message.find("by pid 7 (\"evil\\n"), std::string::npos) << message;
}

}  // namespace
}  // namespace hostport::agent::core
