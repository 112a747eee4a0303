// The agent's narrowed view of host sockets against the real kernel, each test in a private netns
// of its own thread (test::inPrivateNetns):
// the sock_diag port filter and protocol choice (SocketTable::snapshot with options), the kept-open
// netlink sockets (NetlinkSocketPool), and SocketTableProbe answering questions in and out of its
// scope. A filter that dropped a bound port would let the agent hand out a busy one, so every
// test checks both sides: what is inside the scope is seen, what is outside is not claimed free
// by a table that did not look.

#include <gtest/gtest.h>
#include <linux/netlink.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <string>
#include <thread>
#include <vector>

#include "agent/service/socket_probe.h"
#include "common/unique_fd.h"
#include "hostnet/socket_table.h"
#include "netlink/socket.h"
#include "netlink/socket_pool.h"
#include "tests/support/netns.h"
#include "tests/support/result_assertions.h"
#include "tests/support/sockets.h"

namespace hostport {
namespace {

using hostnet::PortSpan;
using hostnet::SnapshotOptions;
using hostnet::SocketTable;
using netlink::NetlinkSocketPool;

/// A socket bound to `address`:`port` (TCP ones listen); invalid after an ADD_FAILURE.
UniqueFd bound(Protocol protocol, const std::string& address, uint16_t port) {
  auto fd = test::bindSocket(protocol, address, port, {.backlog = 4});
  if (!fd) {
    ADD_FAILURE() << fd.error().message;
    return UniqueFd();
  }
  return std::move(*fd);
}

class SocketProbeNetnsTest : public ::testing::Test {
 protected:
  void SetUp() override { HOSTPORT_SKIP_UNLESS_ROOT(); }

  /// TCP listeners and bound UDP sockets, on 127.0.0.1 and ::1, at every port of `ports`.
  static std::vector<UniqueFd> bindAll(const std::vector<uint16_t>& ports) {
    std::vector<UniqueFd> fds;
    for (const uint16_t port : ports) {
      for (const Protocol protocol : {Protocol::kTcp, Protocol::kUdp}) {
        for (const char* address : {"127.0.0.1", "::1"})
          fds.push_back(bound(protocol, address, port));
      }
    }
    return fds;
  }
};

// Ports in the scope and their neighbours just outside it.
const std::vector<PortSpan> kSpans = {{20000, 20009}, {20500, 20500}};
const std::vector<uint16_t> kInside = {20000, 20005, 20009, 20500};
const std::vector<uint16_t> kOutside = {19999, 20010, 20499, 20501, 41000};

TEST_F(SocketProbeNetnsTest, NarrowedSnapshotHoldsExactlyItsProtocolsAndPorts) {
  ASSERT_OK(test::inPrivateNetns([] {
    std::vector<uint16_t> all = kInside;
    all.insert(all.end(), kOutside.begin(), kOutside.end());
    const auto fds = bindAll(all);
    for (const auto& fd : fds) ASSERT_TRUE(fd.valid());

    for (const Protocol protocol : {Protocol::kTcp, Protocol::kUdp}) {
      const Protocol other = protocol == Protocol::kTcp ? Protocol::kUdp : Protocol::kTcp;
      SCOPED_TRACE(std::string(protocolName(protocol)));
      auto socket = netlink::NetlinkSocket::open(NETLINK_SOCK_DIAG);
      ASSERT_OK(socket);
      SnapshotOptions options;
      options.protocols = {protocol};
      options.ports = kSpans;
      auto table = SocketTable::snapshot(*socket, options);
      ASSERT_OK(table);
      // Both families of every inside port, and nothing else: the kernel filtered the rest.
      EXPECT_EQ(table->size(), kInside.size() * 2);
      for (const auto& socketSeen : table->sockets()) {
        EXPECT_EQ(socketSeen.protocol, protocol) << socketSeen.describe();
      }
      for (const uint16_t port : kInside) {
        EXPECT_TRUE(table->covers(protocol, port)) << port;
        EXPECT_TRUE(table->isBound(protocol, port)) << port;
        EXPECT_FALSE(table->covers(other, port)) << port;
      }
      for (const uint16_t port : kOutside) {
        EXPECT_FALSE(table->covers(protocol, port)) << port;
        EXPECT_FALSE(table->isBound(protocol, port)) << port;
      }
      // The same socket again, for the next request: no leftover of the last reply.
      auto again = SocketTable::snapshot(*socket, options);
      ASSERT_OK(again);
      EXPECT_EQ(again->size(), table->size());
    }

    // Every protocol, every port: the options' defaults.
    auto full = SocketTable::snapshot();
    ASSERT_OK(full);
    EXPECT_EQ(full->size(), all.size() * 4);
    for (const uint16_t port : all) {
      EXPECT_TRUE(full->covers(Protocol::kTcp, port) && full->covers(Protocol::kUdp, port));
      EXPECT_TRUE(full->isBound(Protocol::kTcp, port) && full->isBound(Protocol::kUdp, port))
          << port;
    }
  }));
}

TEST_F(SocketProbeNetnsTest, ProbeAnswersInScopeFromItsSnapshotAndOutOfScopeByLookingAgain) {
  ASSERT_OK(test::inPrivateNetns([] {
    const auto fds = bindAll({20005, 41000});
    for (const auto& fd : fds) ASSERT_TRUE(fd.valid());
    auto pool = NetlinkSocketPool::create(NETLINK_SOCK_DIAG);
    ASSERT_OK(pool);

    AllocationRequest request;
    request.dynamics.push_back({"web", 8080, 1, PortProtocol::kTcp});
    const auto scope = agent::service::scopeOf(request, kSpans);
    EXPECT_EQ(scope.protocols, std::vector<Protocol>{Protocol::kTcp});
    auto probe = agent::service::SocketTableProbe::snapshot(*pool, scope);
    ASSERT_OK(probe);

    EXPECT_TRUE((*probe)->isBound(Protocol::kTcp, 20005));
    EXPECT_FALSE((*probe)->isBound(Protocol::kTcp, 20006));
    // Outside the scope (another port, another protocol): a fresh dump answers, never "free".
    EXPECT_TRUE((*probe)->isBound(Protocol::kTcp, 41000));
    EXPECT_TRUE((*probe)->isBound(Protocol::kUdp, 20005));
    EXPECT_TRUE((*probe)->isBound(Protocol::kUdp, 41000));
    EXPECT_FALSE((*probe)->isBound(Protocol::kUdp, 41001));
    const auto holder = (*probe)->holderOf(Protocol::kTcp, 41000);
    EXPECT_EQ(holder.pid, static_cast<uint32_t>(::getpid()));
    // Every socket it used went back to the pool.
    EXPECT_GE(pool->idleCount(), 1u);
  }));
}

TEST_F(SocketProbeNetnsTest, StaticClaimsOutsideThePoolsAreInScope) {
  ASSERT_OK(test::inPrivateNetns([] {
    const auto fds = bindAll({8443});
    for (const auto& fd : fds) ASSERT_TRUE(fd.valid());
    AllocationRequest request;
    request.statics.push_back({8443, 443, PortProtocol::kTcpUdp, std::nullopt});
    const auto scope = agent::service::scopeOf(request, kSpans);
    EXPECT_EQ(scope.protocols, (std::vector<Protocol>{Protocol::kTcp, Protocol::kUdp}));
    EXPECT_EQ(scope.ports, (std::vector<PortSpan>{{8443, 8443}, {20000, 20009}, {20500, 20500}}));
    auto socket = netlink::NetlinkSocket::open(NETLINK_SOCK_DIAG);
    ASSERT_OK(socket);
    auto table = SocketTable::snapshot(
        *socket,
        {.includeBoundOnlyTcp = false, .protocols = scope.protocols, .ports = scope.ports});
    ASSERT_OK(table);
    EXPECT_TRUE(table->covers(Protocol::kUdp, 8443));
    EXPECT_TRUE(table->isBound(Protocol::kTcp, 8443));
    EXPECT_TRUE(table->isBound(Protocol::kUdp, 8443));
  }));
}

TEST_F(SocketProbeNetnsTest, PoolKeepsAtMostItsIdleSocketsAndClosesDiscardedOnes) {
  ASSERT_OK(test::inPrivateNetns([] {
    auto pool = NetlinkSocketPool::create(NETLINK_SOCK_DIAG, /*maxIdle=*/2);
    ASSERT_OK(pool);
    {
      auto a = pool->acquire();
      auto b = pool->acquire();
      auto c = pool->acquire();
      ASSERT_TRUE(a && b && c);
      EXPECT_EQ(pool->idleCount(), 0u);
    }
    EXPECT_EQ(pool->idleCount(), 2u) << "the third socket is closed, not kept";
    {
      auto lease = pool->acquire();
      ASSERT_TRUE(lease);
      EXPECT_EQ(pool->idleCount(), 1u);
      lease->discard();
    }
    EXPECT_EQ(pool->idleCount(), 1u) << "a discarded socket does not come back";
    auto reused = pool->acquire();
    ASSERT_TRUE(reused);
    auto table = SocketTable::snapshot(**reused, SnapshotOptions{});
    EXPECT_OK(table);
  }));
}

TEST_F(SocketProbeNetnsTest, PoolRefusesToOpenSocketsForAnotherNetns) {
  std::optional<NetlinkSocketPool> pool;
  ASSERT_OK(test::inPrivateNetns([&] {
    auto created = NetlinkSocketPool::create(NETLINK_SOCK_DIAG);
    ASSERT_OK(created);
    pool.emplace(std::move(*created));
  }));
  ASSERT_TRUE(pool);
  // This thread is in the test process's netns, not the pool's: a socket opened here would
  // dump the wrong sockets.
  auto lease = pool->acquire();
  ASSERT_FALSE(lease);
  EXPECT_EQ(lease.error().code, ErrorCode::kInternal);
}

}  // namespace
}  // namespace hostport
