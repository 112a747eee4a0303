// SocketTable, findSocketOwner and reserveLocalPorts against the real kernel, each test inside a
// private network namespace (test::inPrivateNetns): a dedicated thread unshares CLONE_NEWNET and
// brings lo up. Only that thread moves; the netns dies when the thread has exited and its last
// socket is closed. Sockets and the sock_diag netlink socket opened on that thread live in that
// netns, so the snapshot sees exactly the sockets the test made.
//
// The sysctl test writes /proc/sys/net from that thread too. /proc/sys/net resolves to the
// calling thread's netns (ProcSysNetFollowsTheCallingThreadsNetns checks it, read-only), and the
// test refuses to write unless it sees the fresh netns there, so a mistake cannot reserve ports
// in the root netns.

#include <arpa/inet.h>
#include <dirent.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <net/if.h>
#include <netinet/in.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <fstream>
#include <iostream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "common/unique_fd.h"
#include "hostnet/reserved_ports.h"
#include "hostnet/sock_diag_message.h"
#include "hostnet/socket_owner.h"
#include "hostnet/socket_table.h"
#include "tests/support/netns.h"
#include "tests/support/result_assertions.h"
#include "tests/support/sockets.h"

namespace hostport::hostnet {
namespace {

constexpr char kReservedPorts[] = "/proc/sys/net/ipv4/ip_local_reserved_ports";

/// A socket of the test, bound to an ephemeral port the kernel chose.
struct TestSocket {
  UniqueFd fd;
  Protocol protocol = Protocol::kTcp;
  Family family = Family::kIPv4;
  uint16_t port = 0;
  uint32_t inode = 0;
  std::string address;
};

uint32_t inodeOfFd(int fd) {
  struct stat info {};
  return fstat(fd, &info) == 0 ? static_cast<uint32_t>(info.st_ino) : 0;
}

/// bind(address, port) [+ listen()] through test::bindSocket, with the test's record of it; port
/// 0 lets the kernel choose. An empty `fd` on failure (ADD_FAILURE too).
TestSocket makeSocket(Protocol protocol, const std::string& address, bool listening,
                      uint16_t port = 0) {
  TestSocket result;
  result.protocol = protocol;
  result.address = address;
  result.family = address.find(':') != std::string::npos ? Family::kIPv6 : Family::kIPv4;
  auto fd = test::bindSocket(protocol, address, port, {.listen = listening});
  if (!fd) {
    ADD_FAILURE() << fd.error().message;
    return result;
  }
  result.port = test::boundPort(fd->get());
  result.inode = inodeOfFd(fd->get());
  result.fd = std::move(*fd);
  return result;
}

/// A connect()ed client of `server` (127.0.0.1), with an ephemeral port.
TestSocket connectTo(const TestSocket& server, int type) {
  TestSocket client;
  client.protocol = server.protocol;
  client.family = Family::kIPv4;
  client.address = "127.0.0.1";  // the source the kernel picks for a loopback peer
  UniqueFd fd(socket(AF_INET, type | SOCK_CLOEXEC, 0));
  sockaddr_in peer{};
  peer.sin_family = AF_INET;
  peer.sin_port = htons(server.port);
  inet_pton(AF_INET, "127.0.0.1", &peer.sin_addr);
  if (!fd.valid() || connect(fd.get(), reinterpret_cast<sockaddr*>(&peer), sizeof(peer)) != 0) {
    const int error = errno;
    ADD_FAILURE() << systemError(ErrorCode::kIo,
                                 "connect to 127.0.0.1:" + std::to_string(server.port), error)
                         .message;
    return client;
  }
  client.port = test::boundPort(fd.get());
  client.inode = inodeOfFd(fd.get());
  client.fd = std::move(fd);
  return client;
}

Result<SocketTable> snapshotOrFail() {
  auto table = SocketTable::snapshot();
  if (!table) ADD_FAILURE() << "snapshot: " << table.error().message;
  return table;
}

/// Whether this kernel dumps bound-but-not-listening TCP sockets (TCP_BOUND_INACTIVE, 6.10).
bool kernelDumpsBoundInactive() {
  std::ifstream in("/proc/sys/kernel/osrelease");
  int major = 0;
  int minor = 0;
  char dot = 0;
  in >> major >> dot >> minor;
  return major > 6 || (major == 6 && minor >= 10);
}

/// The inodes of `sockets` by (protocol, port). Ports chosen by bind(port 0) may repeat across
/// addresses (127.0.0.1:P and ::1:P do not conflict), so a key may hold several.
std::map<std::pair<Protocol, uint16_t>, std::set<uint32_t>> inodesByPort(
    const std::vector<TestSocket>& sockets) {
  std::map<std::pair<Protocol, uint16_t>, std::set<uint32_t>> byPort;
  for (const auto& s : sockets) byPort[{s.protocol, s.port}].insert(s.inode);
  return byPort;
}

/// Checks that `table` holds exactly `sockets`: each one with its own fields, each (protocol,
/// port) bound and speaking for one of its own sockets, nothing else bound.
void expectExactly(const SocketTable& table, const std::vector<TestSocket>& sockets) {
  EXPECT_EQ(table.size(), sockets.size()) << "a fresh netns holds only this test's sockets";
  const auto byPort = inodesByPort(sockets);
  for (const auto& s : sockets) {
    SCOPED_TRACE(std::string(protocolName(s.protocol)) + " " + s.address + ":" +
                 std::to_string(s.port));
    EXPECT_TRUE(table.isBound(s.protocol, s.port));
    const auto inode = table.inodeOf(s.protocol, s.port);
    ASSERT_TRUE(inode.has_value());
    EXPECT_TRUE(byPort.at({s.protocol, s.port}).contains(*inode)) << "inode " << *inode;
    const auto it = std::ranges::find(table.sockets(), s.inode, &BoundSocket::inode);
    ASSERT_NE(it, table.sockets().end()) << "inode " << s.inode << " missing from the dump";
    EXPECT_EQ(it->protocol, s.protocol);
    EXPECT_EQ(it->port, s.port);
    EXPECT_EQ(it->family(), s.family);
    EXPECT_EQ(it->address.str(), s.address);
    EXPECT_EQ(it->uid, geteuid());
  }
  int extra = 0;
  for (const Protocol protocol : kAllProtocols) {
    for (uint32_t port = 0; port <= 65535; ++port) {
      const auto p = static_cast<uint16_t>(port);
      if (table.isBound(protocol, p) && !byPort.contains({protocol, p})) ++extra;
    }
  }
  EXPECT_EQ(extra, 0) << "ports bound that this test did not bind";
}

TEST(HostnetSocketsNetnsTest, SnapshotSeesListenersAndBoundUdpWithTheirInodes) {
  HOSTPORT_SKIP_UNLESS_ROOT();
  ASSERT_OK(test::inPrivateNetns([] {
    std::vector<TestSocket> sockets;
    for (const char* address : {"0.0.0.0", "127.0.0.1", "::", "::1"}) {
      sockets.push_back(makeSocket(Protocol::kTcp, address, /*listening=*/true));
      sockets.push_back(makeSocket(Protocol::kUdp, address, /*listening=*/false));
    }
    for (const auto& s : sockets) ASSERT_TRUE(s.fd.valid());

    auto table = snapshotOrFail();
    ASSERT_TRUE(table);
    expectExactly(*table, sockets);
    for (const BoundSocket& b : table->sockets()) {
      EXPECT_EQ(b.state, b.protocol == Protocol::kTcp ? kTcpListen : kTcpClose) << b.describe();
    }
  }));
}

TEST(HostnetSocketsNetnsTest, ClientConnectionsNeverCountAndBoundOnlyTcpIsOptIn) {
  HOSTPORT_SKIP_UNLESS_ROOT();
  ASSERT_OK(test::inPrivateNetns([] {
    TestSocket listener = makeSocket(Protocol::kTcp, "127.0.0.1", /*listening=*/true);
    ASSERT_TRUE(listener.fd.valid());
    TestSocket client = connectTo(listener, SOCK_STREAM);
    ASSERT_TRUE(client.fd.valid());
    UniqueFd accepted(accept4(listener.fd.get(), nullptr, nullptr, SOCK_CLOEXEC));
    ASSERT_TRUE(accepted.valid()) << systemError(ErrorCode::kIo, "accept4", errno).message;
    // bind() without listen(): what a server is between its two calls.
    TestSocket boundOnly = makeSocket(Protocol::kTcp, "::1", /*listening=*/false);
    ASSERT_TRUE(boundOnly.fd.valid());
    // A connected UDP socket still receives on its port: it counts (every UDP state does).
    TestSocket udpServer = makeSocket(Protocol::kUdp, "127.0.0.1", /*listening=*/false);
    TestSocket udpClient = connectTo(udpServer, SOCK_DGRAM);
    ASSERT_TRUE(udpClient.fd.valid());

    auto table = snapshotOrFail();
    ASSERT_TRUE(table);
    EXPECT_TRUE(table->isBound(Protocol::kTcp, listener.port));
    EXPECT_EQ(table->inodeOf(Protocol::kTcp, listener.port), listener.inode)
        << "the listener, not the accepted connection on the same port";
    EXPECT_FALSE(table->isBound(Protocol::kTcp, client.port)) << "an ephemeral client port";
    EXPECT_TRUE(table->isBound(Protocol::kUdp, udpClient.port));
    EXPECT_EQ(table->inodeOf(Protocol::kUdp, udpClient.port), udpClient.inode);
    ASSERT_NE(table->find(Protocol::kUdp, udpClient.port), nullptr);
    EXPECT_EQ(table->find(Protocol::kUdp, udpClient.port)->state, kTcpEstablished);
    if (boundOnly.port != listener.port) {  // ::1:P and 127.0.0.1:P may share P
      EXPECT_FALSE(table->isBound(Protocol::kTcp, boundOnly.port)) << "opt-in only";
    }
    EXPECT_EQ(table->size(), 3u) << "listener, two udp";

    auto withBound =
        SocketTable::snapshot({.includeBoundOnlyTcp = true, .protocols = {}, .ports = {}});
    ASSERT_OK(withBound);
    if (!kernelDumpsBoundInactive()) {
      std::cout << "[          ] this kernel does not dump bound-only TCP sockets (< 6.10)\n";
      EXPECT_EQ(withBound->size(), 3u);
      return;
    }
    std::vector<TestSocket> all;
    for (TestSocket* s : {&listener, &boundOnly, &udpServer, &udpClient}) {
      all.push_back(std::move(*s));
    }
    expectExactly(*withBound, all);
    const auto it = std::ranges::find_if(withBound->sockets(), [](const BoundSocket& b) {
      return b.protocol == Protocol::kTcp && b.state != kTcpListen;
    });
    ASSERT_NE(it, withBound->sockets().end());
    EXPECT_EQ(it->state, kTcpClose) << "the kernel reports bound-only sockets as CLOSE";
  }));
}

TEST(HostnetSocketsNetnsTest, FindsThisProcessAsTheOwnerOfItsSocket) {
  HOSTPORT_SKIP_UNLESS_ROOT();
  ASSERT_OK(test::inPrivateNetns([] {
    TestSocket listener = makeSocket(Protocol::kTcp, "::", /*listening=*/true);
    ASSERT_TRUE(listener.fd.valid());
    auto table = snapshotOrFail();
    ASSERT_TRUE(table);
    const auto inode = table->inodeOf(Protocol::kTcp, listener.port);
    ASSERT_TRUE(inode.has_value());
    ASSERT_NE(*inode, 0u);

    auto owner = findSocketOwner(*inode);
    ASSERT_OK(owner);
    ASSERT_TRUE(owner->has_value()) << "no process holds socket " << *inode;
    EXPECT_EQ((*owner)->pid, static_cast<uint32_t>(getpid()));
    EXPECT_EQ((*owner)->command, test::ownComm());

    const uint32_t closedInode = listener.inode;
    listener.fd.reset();
    auto gone = findSocketOwner(closedInode);
    ASSERT_OK(gone);
    EXPECT_FALSE(gone->has_value()) << "a closed socket has no owner";
  }));
}

TEST(HostnetSocketsNetnsTest, SnapshotOfAThousandSocketsIsFast) {
  HOSTPORT_SKIP_UNLESS_ROOT();
  // 1000 sockets plus the test's own descriptors: lift the soft limit toward the hard one.
  rlimit limit{};
  ASSERT_EQ(getrlimit(RLIMIT_NOFILE, &limit), 0);
  const rlim_t saved = limit.rlim_cur;
  if (limit.rlim_cur < 2048) {
    limit.rlim_cur = std::min<rlim_t>(2048, limit.rlim_max);
    ASSERT_EQ(setrlimit(RLIMIT_NOFILE, &limit), 0)
        << systemError(ErrorCode::kIo, "setrlimit(RLIMIT_NOFILE)", errno).message;
  }
  ASSERT_OK(test::inPrivateNetns([] {
    std::vector<TestSocket> sockets;
    const char* addresses[] = {"0.0.0.0", "::", "127.0.0.1", "::1"};
    for (int i = 0; i < 1000; ++i) {
      const Protocol protocol = i % 2 == 0 ? Protocol::kTcp : Protocol::kUdp;
      sockets.push_back(makeSocket(protocol, addresses[(i / 2) % 4], protocol == Protocol::kTcp));
      ASSERT_TRUE(sockets.back().fd.valid()) << "socket " << i;
    }
    // Not a timed test (nothing fails on speed): the figures go to the log and the XML report.
    const auto measure = [&](const SnapshotOptions& options, const std::string& name) {
      std::vector<double> micros;
      for (int round = 0; round < 50; ++round) {
        const auto start = std::chrono::steady_clock::now();
        auto table = SocketTable::snapshot(options);
        const auto elapsed = std::chrono::steady_clock::now() - start;
        ASSERT_OK(table);
        ASSERT_EQ(table->size(), sockets.size());
        micros.push_back(std::chrono::duration<double, std::micro>(elapsed).count());
      }
      std::ranges::sort(micros);
      const double median = micros[micros.size() / 2];
      std::cout << "[          ] " << name << " snapshot of " << sockets.size() << " sockets: min "
                << micros.front() << " us, median " << median << " us, p90 "
                << micros[micros.size() * 9 / 10] << " us, max " << micros.back() << " us\n";
      ::testing::Test::RecordProperty(name + "_snapshot_1000_median_us", std::to_string(median));
    };
    measure({}, "default");
    measure({.includeBoundOnlyTcp = true, .protocols = {}, .ports = {}}, "bound_only_tcp");
    auto table = SocketTable::snapshot();
    ASSERT_OK(table);
    expectExactly(*table, sockets);
  }));
  limit.rlim_cur = saved;
  setrlimit(RLIMIT_NOFILE, &limit);
}

/// What /proc/sys/net/ipv4/conf lists in a fresh netns: only lo.
const std::set<std::string> kFreshNetnsConf = {"all", "default", "lo"};

std::set<std::string> directoryEntries(const std::string& path) {
  std::set<std::string> names;
  DIR* dir = opendir(path.c_str());
  if (dir == nullptr) return names;
  while (const dirent* entry = readdir(dir)) {
    if (entry->d_name[0] != '.') names.insert(entry->d_name);
  }
  closedir(dir);
  return names;
}

TEST(HostnetSocketsNetnsTest, ProcSysNetFollowsTheCallingThreadsNetns) {
  HOSTPORT_SKIP_UNLESS_ROOT();
  // Read-only: /proc/sys/net/ipv4/conf/ lists the interfaces of the netns it resolves to.
  const auto root = directoryEntries("/proc/sys/net/ipv4/conf");
  const std::set<std::string>& fresh = kFreshNetnsConf;
  if (root == fresh) GTEST_SKIP() << "the root netns has only lo: nothing to tell apart";
  std::set<std::string> seen;
  ASSERT_OK(test::inPrivateNetns([&] { seen = directoryEntries("/proc/sys/net/ipv4/conf"); }));
  EXPECT_EQ(seen, fresh) << "a thread that unshared must see its own netns under /proc/sys/net";
  EXPECT_EQ(directoryEntries("/proc/sys/net/ipv4/conf"), root) << "other threads did not move";
}

std::string readFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return in ? text.str() : "<unreadable " + path + ">";
}

/// The body of the sysctl test, run on a thread in a fresh netns. Returns "" on success, else
/// what went wrong.
std::string reserveInPrivateNetns() {
  // Nothing is written unless /proc/sys/net shows this thread's fresh netns.
  if (const auto seen = directoryEntries("/proc/sys/net/ipv4/conf"); seen != kFreshNetnsConf) {
    return "/proc/sys/net/ipv4/conf lists " + std::to_string(seen.size()) +
           " entries, not a fresh netns's all, default and lo: refusing to write";
  }
  const auto write = [](const std::string& text) {
    std::ofstream out(kReservedPorts);
    out << text;
    out.flush();
    return static_cast<bool>(out);
  };
  if (readFile(kReservedPorts) != "\n" && readFile(kReservedPorts) != "") {
    return "a fresh netns should start with no reserved ports, has " + readFile(kReservedPorts);
  }
  if (!write("8080,30000-30010\n")) return "cannot pre-set " + std::string(kReservedPorts);
  if (auto r = reserveLocalPorts({{30005, 30020}, {40000, 40000}}); !r) return r.error().message;
  const std::string merged = readFile(kReservedPorts);
  if (merged != "8080,30000-30020,40000\n") return "after the first call: " + merged;
  if (auto r = reserveLocalPorts({{30005, 30020}, {40000, 40000}}); !r) return r.error().message;
  if (auto r = reserveLocalPorts({{30001, 30002}}); !r) return r.error().message;
  const std::string again = readFile(kReservedPorts);
  if (again != merged) return "not idempotent: " + again;
  // The kernel really reserves them: an ephemeral bind never lands in a fully reserved range.
  if (!write("1-65535\n")) return "cannot reserve everything";
  UniqueFd fd(socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0));
  sockaddr_in any{};
  any.sin_family = AF_INET;
  if (bind(fd.get(), reinterpret_cast<sockaddr*>(&any), sizeof(any)) == 0) {
    return "bind to port 0 succeeded with every port reserved (port " +
           std::to_string(test::boundPort(fd.get())) + ")";
  }
  return {};
}

TEST(HostnetSocketsNetnsTest, ReserveLocalPortsMergesInAPrivateNetnsAndIsIdempotent) {
  HOSTPORT_SKIP_UNLESS_ROOT();
  const std::string rootBefore = readFile(kReservedPorts);
  std::string report = "not run";
  ASSERT_OK(test::inPrivateNetns([&] {
    const std::string problem = reserveInPrivateNetns();
    report = problem.empty() ? "ok" : problem;
  }));
  EXPECT_EQ(report, "ok");
  EXPECT_EQ(readFile(kReservedPorts), rootBefore) << "the root netns must be untouched";
}

}  // namespace
}  // namespace hostport::hostnet
