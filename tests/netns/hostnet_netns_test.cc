// NetlinkHostNetwork against the real kernel, each test inside a named network namespace of its
// own (tests/support/netns.h): flows and links are set up with `ip` and `nft` in it, and the code
// under test runs on a thread that has joined it, so the test process's other threads stay in the
// root netns. The namespace is deleted whatever the test's outcome.

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <linux/netlink.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <system_error>
#include <vector>

#include "common/unique_fd.h"
#include "hostnet/conntrack_message.h"
#include "hostnet/netlink_host_network.h"
#include "netlink/socket.h"
#include "tests/support/netns.h"
#include "tests/support/result_assertions.h"
#include "tests/support/sockets.h"

namespace hostport::hostnet {
namespace {

using netlink::NetlinkSocket;
using test::Netns;

std::string readFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  std::string value = text.str();
  while (!value.empty() && (value.back() == '\n' || value.back() == ' ')) value.pop_back();
  return in ? value : "<unreadable " + path + ">";
}

std::string routeLocalnet(const std::string& device) {
  return readFile("/proc/sys/net/ipv4/conf/" + device + "/route_localnet");
}

// --- Sockets that create conntrack entries (inside the netns thread)

sockaddr_storage loopback(int family, uint16_t port, socklen_t& length) {
  sockaddr_storage storage{};
  if (family == AF_INET) {
    auto* sin = reinterpret_cast<sockaddr_in*>(&storage);
    sin->sin_family = AF_INET;
    sin->sin_port = htons(port);
    sin->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    length = sizeof(sockaddr_in);
  } else {
    auto* sin6 = reinterpret_cast<sockaddr_in6*>(&storage);
    sin6->sin6_family = AF_INET6;
    sin6->sin6_port = htons(port);
    sin6->sin6_addr = in6addr_loopback;
    length = sizeof(sockaddr_in6);
  }
  return storage;
}

/// A socket bound to loopback:`port` (0: any free port); the bound port lands in `boundPort`.
UniqueFd bindLoopback(int family, int type, uint16_t port, uint16_t& boundPort) {
  auto fd = test::bindSocket(type == SOCK_DGRAM ? Protocol::kUdp : Protocol::kTcp,
                             family == AF_INET ? "127.0.0.1" : "::1", port, {.listen = false});
  if (!fd) return UniqueFd();
  boundPort = test::boundPort(fd->get());
  return std::move(*fd);
}

/// Sends one datagram from a fresh socket (fresh source port: a new conntrack entry).
bool sendDatagram(int family, uint16_t port) {
  UniqueFd fd(socket(family, SOCK_DGRAM | SOCK_CLOEXEC, 0));
  socklen_t length = 0;
  auto address = loopback(family, port, length);
  return fd.valid() &&
         sendto(fd.get(), "x", 1, 0, reinterpret_cast<sockaddr*>(&address), length) == 1;
}

std::vector<ConntrackEntry> dumpAll(NetlinkSocket& socket, Family family) {
  std::vector<ConntrackEntry> entries;
  auto request = buildConntrackDump(family);
  const auto collect = [&](std::span<const std::byte> message) -> Result<void> {
    HOSTPORT_TRY(ConntrackEntry entry, parseConntrackMessage(message));
    entries.push_back(std::move(entry));
    return {};
  };
  auto result = socket.request(request, "test dump", collect);
  EXPECT_OK(result);
  return entries;
}

int countMatching(const std::vector<ConntrackEntry>& entries, uint8_t proto, uint16_t port) {
  int n = 0;
  for (const auto& e : entries) n += e.l4proto == proto && e.origDstPort == port ? 1 : 0;
  return n;
}

bool kernelAtLeast(int major, int minor) {
  utsname info{};
  if (uname(&info) != 0) return false;
  int haveMajor = 0;
  int haveMinor = 0;
  if (std::sscanf(info.release, "%d.%d", &haveMajor, &haveMinor) != 2) return false;
  return haveMajor > major || (haveMajor == major && haveMinor >= minor);
}

class NetlinkHostNetworkTest : public ::testing::Test {
 protected:
  void SetUp() override { HOSTPORT_SKIP_UNLESS_ROOT(); }

  /// A netns with lo up and conntrack hooks registered (a `ct state` rule makes the kernel track
  /// connections in this netns), plus UDP/TCP flows on loopback:
  ///   3 IPv4 and (when IPv6 works) 2 IPv6 UDP flows to port `udpPort_`,
  ///   1 IPv4 UDP flow to `otherUdpPort_`, 1 IPv4 TCP connection to `udpPort_`'s number.
  void makeFlows(const Netns& ns) {
    ASSERT_OK(ns.exec({"nft",
                       "table inet hpt_conntrack {\n"
                       "  chain output {\n"
                       "    type filter hook output priority 0;\n"
                       "    ct state new counter\n"
                       "  }\n"
                       "}\n"}));
    ASSERT_OK(ns.run([&] {
      ipv6_ = access("/proc/sys/net/ipv6/conf/lo", F_OK) == 0;
      receivers_.push_back(bindLoopback(AF_INET, SOCK_DGRAM, 0, udpPort_));
      receivers_.push_back(bindLoopback(AF_INET, SOCK_DGRAM, 0, otherUdpPort_));
      uint16_t tcpPort = 0;
      UniqueFd listener = bindLoopback(AF_INET, SOCK_STREAM, udpPort_, tcpPort);
      ASSERT_TRUE(listener.valid()) << "tcp port " << udpPort_ << " is taken";
      ASSERT_EQ(listen(listener.get(), 1), 0);
      if (ipv6_) {
        uint16_t port6 = 0;
        receivers_.push_back(bindLoopback(AF_INET6, SOCK_DGRAM, udpPort_, port6));
      }
      for (int i = 0; i < 3; ++i) ASSERT_TRUE(sendDatagram(AF_INET, udpPort_));
      ASSERT_TRUE(sendDatagram(AF_INET, otherUdpPort_));
      for (int i = 0; ipv6_ && i < 2; ++i) ASSERT_TRUE(sendDatagram(AF_INET6, udpPort_));

      UniqueFd client(socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
      socklen_t length = 0;
      auto address = loopback(AF_INET, udpPort_, length);
      ASSERT_EQ(connect(client.get(), reinterpret_cast<sockaddr*>(&address), length), 0);
      UniqueFd accepted(accept(listener.get(), nullptr, nullptr));
      ASSERT_TRUE(accepted.valid());
      receivers_.push_back(std::move(client));
      receivers_.push_back(std::move(accepted));
      receivers_.push_back(std::move(listener));
    }));
    ASSERT_NE(udpPort_, otherUdpPort_);
  }

  void TearDown() override { receivers_.clear(); }

  bool ipv6_ = false;
  uint16_t udpPort_ = 0;
  uint16_t otherUdpPort_ = 0;
  std::vector<UniqueFd> receivers_;
};

TEST_F(NetlinkHostNetworkTest, FlushDeletesOnlyUdpEntriesToThePort) {
  ASSERT_OK_AND_ASSIGN(const Netns ns, Netns::create());
  ASSERT_NO_FATAL_FAILURE(makeFlows(ns));
  const int expectedUdp = 3 + (ipv6_ ? 2 : 0);

  ASSERT_OK(ns.run([&] {
    auto socket = NetlinkSocket::open(NETLINK_NETFILTER);
    ASSERT_OK(socket);
    // Precondition, seen through our own dump: the flows are tracked.
    auto v4 = dumpAll(*socket, Family::kIPv4);
    auto v6 = dumpAll(*socket, Family::kIPv6);
    ASSERT_EQ(countMatching(v4, IPPROTO_UDP, udpPort_), 3);
    ASSERT_EQ(countMatching(v6, IPPROTO_UDP, udpPort_), ipv6_ ? 2 : 0);
    ASSERT_EQ(countMatching(v4, IPPROTO_UDP, otherUdpPort_), 1);
    ASSERT_GE(countMatching(v4, IPPROTO_TCP, udpPort_), 1);

    auto network = NetlinkHostNetwork::create();
    ASSERT_OK(network);
    auto deleted = (*network)->flushUdpConntrack({udpPort_});
    ASSERT_OK(deleted);
    EXPECT_EQ(*deleted, expectedUdp);

    v4 = dumpAll(*socket, Family::kIPv4);
    v6 = dumpAll(*socket, Family::kIPv6);
    EXPECT_EQ(countMatching(v4, IPPROTO_UDP, udpPort_), 0);
    EXPECT_EQ(countMatching(v6, IPPROTO_UDP, udpPort_), 0);
    EXPECT_EQ(countMatching(v4, IPPROTO_UDP, otherUdpPort_), 1) << "other UDP port untouched";
    EXPECT_GE(countMatching(v4, IPPROTO_TCP, udpPort_), 1) << "TCP on the same port untouched";

    auto again = (*network)->flushUdpConntrack({udpPort_});
    ASSERT_OK(again);
    EXPECT_EQ(*again, 0);
  }));
}

TEST_F(NetlinkHostNetworkTest, KernelSideFilterReturnsOnlyTheAskedPort) {
  ASSERT_OK_AND_ASSIGN(const Netns ns, Netns::create());
  ASSERT_NO_FATAL_FAILURE(makeFlows(ns));

  ASSERT_OK(ns.run([&] {
    auto socket = NetlinkSocket::open(NETLINK_NETFILTER);
    ASSERT_OK(socket);
    std::vector<ConntrackEntry> entries;
    auto request = buildConntrackDump(Family::kIPv4, udpPort_);
    const auto collect = [&](std::span<const std::byte> m) -> Result<void> {
      HOSTPORT_TRY(ConntrackEntry entry, parseConntrackMessage(m));
      entries.push_back(std::move(entry));
      return {};
    };
    auto result = socket->request(request, "filtered dump", collect);
    // CTA_FILTER exists since 5.9; on such kernels our encoding must be accepted as is, or the
    // flush would silently fall back to full dumps.
    ASSERT_OK(result);
    EXPECT_EQ(countMatching(entries, IPPROTO_UDP, udpPort_), 3);
    if (kernelAtLeast(5, 10)) {
      EXPECT_EQ(entries.size(), 3u) << "the kernel returned entries the filter excludes";
    }
  }));
}

TEST_F(NetlinkHostNetworkTest, DeletingAnEntryTwiceReportsEnoentAsKernelError) {
  ASSERT_OK_AND_ASSIGN(const Netns ns, Netns::create());
  ASSERT_NO_FATAL_FAILURE(makeFlows(ns));

  ASSERT_OK(ns.run([&] {
    auto socket = NetlinkSocket::open(NETLINK_NETFILTER);
    ASSERT_OK(socket);
    const auto entries = dumpAll(*socket, Family::kIPv4);
    const ConntrackEntry* target = nullptr;
    for (const auto& e : entries) {
      if (isUdpToPort(e, otherUdpPort_)) target = &e;
    }
    ASSERT_NE(target, nullptr);
    auto request = buildConntrackDelete(*target);
    ASSERT_OK(request);

    auto first = socket->request(*request, "delete " + target->describe());
    ASSERT_OK(first);

    auto second = socket->request(*request, "delete " + target->describe());
    ASSERT_FALSE(second);
    EXPECT_EQ(second.error().code, ErrorCode::kKernel);
    EXPECT_NE(second.error().message.find("delete " + target->describe()), std::string::npos)
        << second.error().message;
    EXPECT_NE(second.error().message.find(std::strerror(ENOENT)), std::string::npos)
        << second.error().message;
    EXPECT_EQ(second.error().cause, std::errc::no_such_file_or_directory) << "from NLMSG_ERROR";

    auto accepted = socket->requestAccepting(*request, "delete again", {ENOENT});
    ASSERT_OK(accepted);
    EXPECT_EQ(*accepted, ENOENT);
    // The socket is still in step after errors: a dump works.
    EXPECT_EQ(countMatching(dumpAll(*socket, Family::kIPv4), IPPROTO_UDP, udpPort_), 3);
  }));
}

// Several ports go in one walk of the table per family (a dump filtered to UDP), and the entries
// of every one of them go.
TEST_F(NetlinkHostNetworkTest, FlushOfSeveralPortsDeletesTheUdpEntriesOfEach) {
  ASSERT_OK_AND_ASSIGN(const Netns ns, Netns::create());
  ASSERT_NO_FATAL_FAILURE(makeFlows(ns));
  ASSERT_OK(ns.run([&] {
    auto network = NetlinkHostNetwork::create();
    ASSERT_OK(network);
    ASSERT_OK_AND_ASSIGN(const int deleted,
                         (*network)->flushUdpConntrack({udpPort_, otherUdpPort_}));
    EXPECT_EQ(deleted, 3 + (ipv6_ ? 2 : 0) + 1);

    auto socket = NetlinkSocket::open(NETLINK_NETFILTER);
    ASSERT_OK(socket);
    const auto v4 = dumpAll(*socket, Family::kIPv4);
    EXPECT_EQ(countMatching(v4, IPPROTO_UDP, udpPort_), 0);
    EXPECT_EQ(countMatching(v4, IPPROTO_UDP, otherUdpPort_), 0);
    EXPECT_GE(countMatching(v4, IPPROTO_TCP, udpPort_), 1) << "TCP on the same port untouched";
  }));
}

TEST_F(NetlinkHostNetworkTest, FlushRefusesPortZero) {
  auto network = NetlinkHostNetwork::create();
  ASSERT_TRUE(network);
  auto result = (*network)->flushUdpConntrack({53, 0});
  ASSERT_FALSE(result);
  EXPECT_EQ(result.error().code, ErrorCode::kInvalidArgument);
}

TEST_F(NetlinkHostNetworkTest, EnablesRouteLocalnetOnlyOnTheRoutedInterface) {
  ASSERT_OK_AND_ASSIGN(const Netns ns, Netns::create());
  for (const auto& [dev, peer, cidr] :
       {std::tuple{"hpt0", "hpt1", "10.213.7.1/24"}, std::tuple{"hpt2", "hpt3", "10.213.8.1/24"}}) {
    ASSERT_OK(ns.ip({"link", "add", dev, "type", "veth", "peer", "name", peer}));
    ASSERT_OK(ns.ip({"addr", "add", cidr, "dev", dev}));
    ASSERT_OK(ns.ip({"link", "set", dev, "up"}));
    ASSERT_OK(ns.ip({"link", "set", peer, "up"}));
  }

  ASSERT_OK(ns.run([&] {
    for (const char* dev : {"hpt0", "hpt1", "hpt2", "hpt3", "lo", "all"}) {
      ASSERT_EQ(routeLocalnet(dev), "0") << dev << " before";
    }
    auto network = NetlinkHostNetwork::create();
    ASSERT_TRUE(network);

    auto result = (*network)->enableRouteLocalnet(*IpAddress::parse("10.213.7.42"));
    ASSERT_OK(result);
    EXPECT_EQ(routeLocalnet("hpt0"), "1");
    for (const char* dev : {"hpt1", "hpt2", "hpt3", "lo", "all", "default"}) {
      EXPECT_EQ(routeLocalnet(dev), "0") << dev << " must stay untouched";
    }

    result = (*network)->enableRouteLocalnet(*IpAddress::parse("10.213.8.9"));
    ASSERT_OK(result);
    EXPECT_EQ(routeLocalnet("hpt2"), "1");
    EXPECT_EQ(routeLocalnet("hpt3"), "0");

    // Idempotent: a second call for the same pod is fine.
    EXPECT_TRUE((*network)->enableRouteLocalnet(*IpAddress::parse("10.213.7.42")));
  }));
}

// A repair restores thousands of pods at once: one call, every pod's route looked up, each
// interface they are routed through written, and nothing else.
TEST_F(NetlinkHostNetworkTest, EnablesRouteLocalnetForManyPodsOnEachOfTheirInterfaces) {
  ASSERT_OK_AND_ASSIGN(const Netns ns, Netns::create());
  for (const auto& [dev, peer, cidr] :
       {std::tuple{"hpt0", "hpt1", "10.213.7.1/24"}, std::tuple{"hpt2", "hpt3", "10.213.8.1/24"},
        std::tuple{"hpt4", "hpt5", "10.213.9.1/24"}}) {
    ASSERT_OK(ns.ip({"link", "add", dev, "type", "veth", "peer", "name", peer}));
    ASSERT_OK(ns.ip({"addr", "add", cidr, "dev", dev}));
    ASSERT_OK(ns.ip({"link", "set", dev, "up"}));
    ASSERT_OK(ns.ip({"link", "set", peer, "up"}));
  }
  ASSERT_OK(ns.run([&] {
    auto network = NetlinkHostNetwork::create();
    ASSERT_TRUE(network);
    std::vector<IpAddress> pods;
    for (int i = 2; i < 200; ++i) {
      pods.push_back(
          *IpAddress::parse("10.213." + std::to_string(7 + i % 2) + "." + std::to_string(i)));
    }
    ASSERT_OK((*network)->enableRouteLocalnet(pods));
    EXPECT_EQ(routeLocalnet("hpt0"), "1");
    EXPECT_EQ(routeLocalnet("hpt2"), "1");
    for (const char* dev : {"hpt1", "hpt3", "hpt4", "hpt5", "lo", "all", "default"}) {
      EXPECT_EQ(routeLocalnet(dev), "0") << dev << " must stay untouched";
    }

    // One pod without a route fails the call, naming it; the caller then asks pod by pod.
    pods.push_back(*IpAddress::parse("192.0.2.10"));
    const auto refused = (*network)->enableRouteLocalnet(pods);
    ASSERT_FALSE(refused);
    EXPECT_NE(refused.error().message.find("route lookup for 192.0.2.10"), std::string::npos)
        << refused.error().message;
  }));
}

TEST_F(NetlinkHostNetworkTest, UnroutableAddressIsAKernelErrorNamingTheLookup) {
  ASSERT_OK_AND_ASSIGN(const Netns ns, Netns::create());
  ASSERT_OK(ns.run([&] {
    auto network = NetlinkHostNetwork::create();
    ASSERT_TRUE(network);
    auto result = (*network)->enableRouteLocalnet(*IpAddress::parse("192.0.2.10"));
    ASSERT_FALSE(result);
    EXPECT_EQ(result.error().code, ErrorCode::kKernel);
    EXPECT_NE(result.error().message.find("route lookup for 192.0.2.10"), std::string::npos)
        << result.error().message;
    EXPECT_NE(result.error().message.find(std::strerror(ENETUNREACH)), std::string::npos)
        << result.error().message;
    EXPECT_EQ(result.error().cause, std::errc::network_unreachable);
  }));
}

TEST_F(NetlinkHostNetworkTest, RouteLocalnetRefusesIpv6) {
  auto network = NetlinkHostNetwork::create();
  ASSERT_TRUE(network);
  auto result = (*network)->enableRouteLocalnet(*IpAddress::parse("2001:db8::5"));
  ASSERT_FALSE(result);
  EXPECT_EQ(result.error().code, ErrorCode::kInvalidArgument);
}

}  // namespace
}  // namespace hostport::hostnet
