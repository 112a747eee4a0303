// NetlinkHostNetwork against the real kernel, each test inside its own network namespace.
//
// The netns helper is private to this file on purpose (tests/support is developed in parallel):
// `ip netns add` through fork/exec, work done on a dedicated thread that setns()es into the
// namespace (so the test process's other threads stay in the root netns), and `ip netns delete`
// in the destructor, whatever the test's outcome.

#include <arpa/inet.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <linux/netlink.h>
#include <netinet/in.h>
#include <sched.h>
#include <sys/socket.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <functional>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "common/unique_fd.h"
#include "hostnet/conntrack_message.h"
#include "hostnet/netlink_host_network.h"
#include "hostnet/netlink_socket.h"

namespace hostport::hostnet {
namespace {

std::string firstExisting(std::initializer_list<const char*> paths) {
  for (const char* path : paths) {
    if (access(path, X_OK) == 0) return path;
  }
  return {};
}

const std::string& ipBinary() {
  static const std::string path = firstExisting({"/usr/sbin/ip", "/sbin/ip", "/usr/bin/ip"});
  return path;
}

const std::string& nftBinary() {
  static const std::string path = firstExisting({"/usr/sbin/nft", "/sbin/nft", "/usr/bin/nft"});
  return path;
}

/// Runs `argv` (absolute path first) without a shell, feeding `input` on stdin. Returns the exit
/// status, or -1 when it could not run or was killed. Output goes to the test's own stderr.
int runCommand(const std::vector<std::string>& argv, const std::string& input = {}) {
  if (argv.empty() || argv[0].empty()) return -1;
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  int pipeFds[2];
  if (pipe2(pipeFds, O_CLOEXEC) != 0) return -1;
  UniqueFd readEnd(pipeFds[0]);
  UniqueFd writeEnd(pipeFds[1]);
  const pid_t pid = fork();
  if (pid < 0) return -1;
  if (pid == 0) {
    // Only async-signal-safe calls between fork and exec.
    dup2(readEnd.get(), STDIN_FILENO);
    dup2(STDERR_FILENO, STDOUT_FILENO);
    execv(args[0], args.data());
    _exit(127);
  }
  readEnd.reset();
  size_t offset = 0;
  while (offset < input.size()) {
    const ssize_t n = write(writeEnd.get(), input.data() + offset, input.size() - offset);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    offset += static_cast<size_t>(n);
  }
  writeEnd.reset();
  int status = 0;
  while (waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) return -1;
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

/// A named network namespace that exists for the lifetime of this object.
class TestNetns {
 public:
  static std::unique_ptr<TestNetns> create(const std::string& tag) {
    static std::atomic<int> counter{0};
    const std::string name =
        "hpt-hostnet-" + std::to_string(getpid()) + "-" + std::to_string(counter++) + "-" + tag;
    if (runCommand({ipBinary(), "netns", "add", name}) != 0) return nullptr;
    return std::unique_ptr<TestNetns>(new TestNetns(name));
  }

  ~TestNetns() { runCommand({ipBinary(), "netns", "delete", name_}); }
  TestNetns(const TestNetns&) = delete;
  TestNetns& operator=(const TestNetns&) = delete;

  const std::string& name() const { return name_; }

  /// `ip -n <name> <args...>`; returns the exit status.
  int ip(std::vector<std::string> args) const {
    args.insert(args.begin(), {ipBinary(), "-n", name_});
    return runCommand(args);
  }

  /// `ip netns exec <name> <argv...>`; returns the exit status.
  int exec(std::vector<std::string> argv, const std::string& input = {}) const {
    argv.insert(argv.begin(), {ipBinary(), "netns", "exec", name_});
    return runCommand(argv, input);
  }

  /// Runs `fn` on a fresh thread that has entered this netns. False when it could not enter.
  bool run(const std::function<void()>& fn) const {
    UniqueFd nsFd(open(("/run/netns/" + name_).c_str(), O_RDONLY | O_CLOEXEC));
    if (!nsFd.valid()) return false;
    bool entered = false;
    std::thread worker([&] {
      entered = setns(nsFd.get(), CLONE_NEWNET) == 0;
      if (entered) fn();
    });
    worker.join();
    return entered;
  }

 private:
  explicit TestNetns(std::string name) : name_(std::move(name)) {}
  std::string name_;
};

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
  UniqueFd fd(socket(family, type | SOCK_CLOEXEC, 0));
  if (!fd.valid()) return fd;
  if (family == AF_INET6) {
    int on = 1;
    setsockopt(fd.get(), IPPROTO_IPV6, IPV6_V6ONLY, &on, sizeof(on));
  }
  socklen_t length = 0;
  auto address = loopback(family, port, length);
  if (bind(fd.get(), reinterpret_cast<sockaddr*>(&address), length) != 0) return UniqueFd();
  sockaddr_storage bound{};
  socklen_t boundLength = sizeof(bound);
  getsockname(fd.get(), reinterpret_cast<sockaddr*>(&bound), &boundLength);
  boundPort = ntohs(family == AF_INET ? reinterpret_cast<sockaddr_in*>(&bound)->sin_port
                                      : reinterpret_cast<sockaddr_in6*>(&bound)->sin6_port);
  return fd;
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
  auto result = socket.request(request, "test dump", [&](std::span<const std::byte> message) {
    auto entry = parseConntrackMessage(message);
    if (!entry) return Result<void>(std::unexpected(entry.error()));
    entries.push_back(std::move(*entry));
    return Result<void>();
  });
  EXPECT_TRUE(result) << result.error().message;
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
  void SetUp() override {
    if (geteuid() != 0) GTEST_SKIP() << "needs root to create network namespaces";
    ASSERT_FALSE(ipBinary().empty()) << "iproute2's ip is not installed";
  }

  /// A netns with lo up and conntrack hooks registered (a `ct state` rule makes the kernel track
  /// connections in this netns), plus UDP/TCP flows on loopback:
  ///   3 IPv4 and (when IPv6 works) 2 IPv6 UDP flows to port `udpPort_`,
  ///   1 IPv4 UDP flow to `otherUdpPort_`, 1 IPv4 TCP connection to `udpPort_`'s number.
  void makeFlows(const TestNetns& ns) {
    ASSERT_FALSE(nftBinary().empty()) << "nftables' nft is not installed";
    ASSERT_EQ(ns.ip({"link", "set", "lo", "up"}), 0);
    ASSERT_EQ(ns.exec({nftBinary(), "-f", "-"},
                      "table inet hpt_conntrack {\n"
                      "  chain output {\n"
                      "    type filter hook output priority 0;\n"
                      "    ct state new counter\n"
                      "  }\n"
                      "}\n"),
              0);
    ASSERT_TRUE(ns.run([&] {
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
  auto ns = TestNetns::create("flush");
  ASSERT_TRUE(ns) << "ip netns add failed";
  ASSERT_NO_FATAL_FAILURE(makeFlows(*ns));
  const int expectedUdp = 3 + (ipv6_ ? 2 : 0);

  ASSERT_TRUE(ns->run([&] {
    auto socket = NetlinkSocket::open(NETLINK_NETFILTER);
    ASSERT_TRUE(socket) << socket.error().message;
    // Precondition, seen through our own dump: the flows are tracked.
    auto v4 = dumpAll(*socket, Family::kIPv4);
    auto v6 = dumpAll(*socket, Family::kIPv6);
    ASSERT_EQ(countMatching(v4, IPPROTO_UDP, udpPort_), 3);
    ASSERT_EQ(countMatching(v6, IPPROTO_UDP, udpPort_), ipv6_ ? 2 : 0);
    ASSERT_EQ(countMatching(v4, IPPROTO_UDP, otherUdpPort_), 1);
    ASSERT_GE(countMatching(v4, IPPROTO_TCP, udpPort_), 1);

    auto network = NetlinkHostNetwork::create();
    ASSERT_TRUE(network) << network.error().message;
    auto deleted = (*network)->flushUdpConntrack(udpPort_);
    ASSERT_TRUE(deleted) << deleted.error().message;
    EXPECT_EQ(*deleted, expectedUdp);

    v4 = dumpAll(*socket, Family::kIPv4);
    v6 = dumpAll(*socket, Family::kIPv6);
    EXPECT_EQ(countMatching(v4, IPPROTO_UDP, udpPort_), 0);
    EXPECT_EQ(countMatching(v6, IPPROTO_UDP, udpPort_), 0);
    EXPECT_EQ(countMatching(v4, IPPROTO_UDP, otherUdpPort_), 1) << "other UDP port untouched";
    EXPECT_GE(countMatching(v4, IPPROTO_TCP, udpPort_), 1) << "TCP on the same port untouched";

    auto again = (*network)->flushUdpConntrack(udpPort_);
    ASSERT_TRUE(again) << again.error().message;
    EXPECT_EQ(*again, 0);
  }));
}

TEST_F(NetlinkHostNetworkTest, KernelSideFilterReturnsOnlyTheAskedPort) {
  auto ns = TestNetns::create("filter");
  ASSERT_TRUE(ns) << "ip netns add failed";
  ASSERT_NO_FATAL_FAILURE(makeFlows(*ns));

  ASSERT_TRUE(ns->run([&] {
    auto socket = NetlinkSocket::open(NETLINK_NETFILTER);
    ASSERT_TRUE(socket) << socket.error().message;
    std::vector<ConntrackEntry> entries;
    auto request = buildConntrackDump(Family::kIPv4, udpPort_);
    auto result = socket->request(request, "filtered dump", [&](std::span<const std::byte> m) {
      auto entry = parseConntrackMessage(m);
      if (!entry) return Result<void>(std::unexpected(entry.error()));
      entries.push_back(std::move(*entry));
      return Result<void>();
    });
    // CTA_FILTER exists since 5.9; on such kernels our encoding must be accepted as is, or the
    // flush would silently fall back to full dumps.
    ASSERT_TRUE(result) << result.error().message;
    EXPECT_EQ(countMatching(entries, IPPROTO_UDP, udpPort_), 3);
    if (kernelAtLeast(5, 10)) {
      EXPECT_EQ(entries.size(), 3u) << "the kernel returned entries the filter excludes";
    }
  }));
}

TEST_F(NetlinkHostNetworkTest, DeletingAnEntryTwiceReportsEnoentAsKernelError) {
  auto ns = TestNetns::create("enoent");
  ASSERT_TRUE(ns) << "ip netns add failed";
  ASSERT_NO_FATAL_FAILURE(makeFlows(*ns));

  ASSERT_TRUE(ns->run([&] {
    auto socket = NetlinkSocket::open(NETLINK_NETFILTER);
    ASSERT_TRUE(socket) << socket.error().message;
    const auto entries = dumpAll(*socket, Family::kIPv4);
    const ConntrackEntry* target = nullptr;
    for (const auto& e : entries) {
      if (isUdpToPort(e, otherUdpPort_)) target = &e;
    }
    ASSERT_NE(target, nullptr);
    auto request = buildConntrackDelete(*target);
    ASSERT_TRUE(request) << request.error().message;

    auto first = socket->request(*request, "delete " + target->describe());
    ASSERT_TRUE(first) << first.error().message;

    auto second = socket->request(*request, "delete " + target->describe());
    ASSERT_FALSE(second);
    EXPECT_EQ(second.error().code, ErrorCode::kKernel);
    EXPECT_NE(second.error().message.find("delete " + target->describe()), std::string::npos)
        << second.error().message;
    EXPECT_NE(second.error().message.find(std::strerror(ENOENT)), std::string::npos)
        << second.error().message;

    auto accepted = socket->requestAccepting(*request, "delete again", {ENOENT});
    ASSERT_TRUE(accepted) << accepted.error().message;
    EXPECT_EQ(*accepted, ENOENT);
    // The socket is still in step after errors: a dump works.
    EXPECT_EQ(countMatching(dumpAll(*socket, Family::kIPv4), IPPROTO_UDP, udpPort_), 3);
  }));
}

TEST_F(NetlinkHostNetworkTest, FlushRefusesPortZero) {
  auto network = NetlinkHostNetwork::create();
  ASSERT_TRUE(network);
  auto result = (*network)->flushUdpConntrack(0);
  ASSERT_FALSE(result);
  EXPECT_EQ(result.error().code, ErrorCode::kInvalidArgument);
}

TEST_F(NetlinkHostNetworkTest, EnablesRouteLocalnetOnlyOnTheRoutedInterface) {
  auto ns = TestNetns::create("localnet");
  ASSERT_TRUE(ns) << "ip netns add failed";
  ASSERT_EQ(ns->ip({"link", "set", "lo", "up"}), 0);
  for (const auto& [dev, peer, cidr] :
       {std::tuple{"hpt0", "hpt1", "10.213.7.1/24"}, std::tuple{"hpt2", "hpt3", "10.213.8.1/24"}}) {
    ASSERT_EQ(ns->ip({"link", "add", dev, "type", "veth", "peer", "name", peer}), 0);
    ASSERT_EQ(ns->ip({"addr", "add", cidr, "dev", dev}), 0);
    ASSERT_EQ(ns->ip({"link", "set", dev, "up"}), 0);
    ASSERT_EQ(ns->ip({"link", "set", peer, "up"}), 0);
  }

  ASSERT_TRUE(ns->run([&] {
    for (const char* dev : {"hpt0", "hpt1", "hpt2", "hpt3", "lo", "all"}) {
      ASSERT_EQ(routeLocalnet(dev), "0") << dev << " before";
    }
    auto network = NetlinkHostNetwork::create();
    ASSERT_TRUE(network);

    auto result = (*network)->enableRouteLocalnet(*IpAddress::parse("10.213.7.42"));
    ASSERT_TRUE(result) << result.error().message;
    EXPECT_EQ(routeLocalnet("hpt0"), "1");
    for (const char* dev : {"hpt1", "hpt2", "hpt3", "lo", "all", "default"}) {
      EXPECT_EQ(routeLocalnet(dev), "0") << dev << " must stay untouched";
    }

    result = (*network)->enableRouteLocalnet(*IpAddress::parse("10.213.8.9"));
    ASSERT_TRUE(result) << result.error().message;
    EXPECT_EQ(routeLocalnet("hpt2"), "1");
    EXPECT_EQ(routeLocalnet("hpt3"), "0");

    // Idempotent: a second call for the same pod is fine.
    EXPECT_TRUE((*network)->enableRouteLocalnet(*IpAddress::parse("10.213.7.42")));
  }));
}

TEST_F(NetlinkHostNetworkTest, UnroutableAddressIsAKernelErrorNamingTheLookup) {
  auto ns = TestNetns::create("noroute");
  ASSERT_TRUE(ns) << "ip netns add failed";
  ASSERT_EQ(ns->ip({"link", "set", "lo", "up"}), 0);
  ASSERT_TRUE(ns->run([&] {
    auto network = NetlinkHostNetwork::create();
    ASSERT_TRUE(network);
    auto result = (*network)->enableRouteLocalnet(*IpAddress::parse("192.0.2.10"));
    ASSERT_FALSE(result);
    EXPECT_EQ(result.error().code, ErrorCode::kKernel);
    EXPECT_NE(result.error().message.find("route lookup for 192.0.2.10"), std::string::npos)
        << result.error().message;
    EXPECT_NE(result.error().message.find(std::strerror(ENETUNREACH)), std::string::npos)
        << result.error().message;
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
