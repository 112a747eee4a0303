// The sock_diag port filter: normalizedSpans(), buildPortFilter() and the requests that carry it.
//
// The program is checked by an interpreter written here from the kernel's documented semantics
// of INET_DIAG_REQ_BYTECODE (net/ipv4/inet_diag.c: the audit run on every request, and the run
// for every socket), over every port, so a program the kernel would refuse or misread fails here
// before it reaches a netns test.

#include <gtest/gtest.h>
#include <linux/inet_diag.h>
#include <linux/netlink.h>
#include <linux/sock_diag.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <cstring>
#include <random>
#include <set>
#include <vector>

#include "hostnet/sock_diag_message.h"

namespace hostport::hostnet {
namespace {

std::vector<inet_diag_bc_op> opsOf(const std::vector<std::byte>& program) {
  std::vector<inet_diag_bc_op> ops(program.size() / sizeof(inet_diag_bc_op));
  std::memcpy(ops.data(), program.data(), ops.size() * sizeof(inet_diag_bc_op));
  return ops;
}

/// Whether the op at `offset` of a program of `length` bytes is an op boundary that the chain of
/// `yes` branches from the start reaches (the kernel's valid_cc).
bool onYesChain(const std::vector<inet_diag_bc_op>& ops, int length, int offset) {
  int at = 0;
  while (at < length) {
    if (at == offset) return true;
    const int yes = ops[static_cast<std::size_t>(at / 4)].yes;
    if (yes < 4 || yes % 4 != 0) return false;
    at += yes;
  }
  return at == offset;
}

/// The kernel's audit of a program made only of port comparisons and jumps: the empty string
/// when it passes, else why it would be refused with EINVAL.
std::string auditFailure(const std::vector<std::byte>& program) {
  if (program.size() % 4 != 0) return "length not a multiple of 4";
  const auto ops = opsOf(program);
  const int length = static_cast<int>(program.size());
  int remaining = length;
  while (remaining > 0) {
    const int at = length - remaining;
    const inet_diag_bc_op& op = ops[static_cast<std::size_t>(at / 4)];
    int minLength = 4;
    switch (op.code) {
      case INET_DIAG_BC_S_GE:
      case INET_DIAG_BC_S_LE:
      case INET_DIAG_BC_S_EQ:
        if (remaining < 8) return "comparison without its operand at " + std::to_string(at);
        minLength = 8;
        break;
      case INET_DIAG_BC_JMP:
        break;
      default:
        return "unexpected op code " + std::to_string(op.code);
    }
    if (op.no < minLength || op.no > remaining + 4 || op.no % 4 != 0) {
      return "bad no " + std::to_string(op.no) + " at " + std::to_string(at);
    }
    if (op.no < remaining && !onYesChain(ops, length, at + op.no)) {
      return "no-branch target off the yes chain at " + std::to_string(at);
    }
    if (op.yes < minLength || op.yes > remaining + 4 || op.yes % 4 != 0) {
      return "bad yes " + std::to_string(op.yes) + " at " + std::to_string(at);
    }
    remaining -= op.yes;
  }
  return remaining == 0 ? "" : "the yes chain overruns the end";
}

/// The kernel's run of a program for a socket whose local port is `port`.
bool accepts(const std::vector<std::byte>& program, uint16_t port) {
  const auto ops = opsOf(program);
  int remaining = static_cast<int>(program.size());
  int at = 0;
  while (remaining > 0) {
    const inet_diag_bc_op& op = ops[static_cast<std::size_t>(at / 4)];
    bool yes = true;
    switch (op.code) {
      case INET_DIAG_BC_JMP:
        yes = false;
        break;
      case INET_DIAG_BC_S_GE:
        yes = port >= ops[static_cast<std::size_t>(at / 4) + 1].no;
        break;
      case INET_DIAG_BC_S_LE:
        yes = port <= ops[static_cast<std::size_t>(at / 4) + 1].no;
        break;
      case INET_DIAG_BC_S_EQ:
        yes = port == ops[static_cast<std::size_t>(at / 4) + 1].no;
        break;
      default:
        ADD_FAILURE() << "op " << int{op.code};
        return false;
    }
    const int step = yes ? op.yes : op.no;
    remaining -= step;
    at += step;
  }
  return remaining == 0;
}

bool inSpans(const std::vector<PortSpan>& spans, uint16_t port) {
  for (const auto& span : spans) {
    if (port >= std::min(span.first, span.last) && port <= std::max(span.first, span.last)) {
      return true;
    }
  }
  return false;
}

/// Checks the program for `spans` against the audit and against every port.
void expectFilterOf(const std::vector<PortSpan>& spans) {
  const auto program = buildPortFilter(spans);
  ASSERT_FALSE(program.empty());
  ASSERT_EQ(auditFailure(program), "");
  int wrong = 0;
  for (uint32_t port = 0; port <= 65535; ++port) {
    const auto p = static_cast<uint16_t>(port);
    if (accepts(program, p) != inSpans(spans, p) && ++wrong <= 5) {
      ADD_FAILURE() << "port " << port << (inSpans(spans, p) ? " refused" : " accepted");
    }
  }
  EXPECT_EQ(wrong, 0);
}

TEST(PortFilterTest, NormalizedSpansAreSortedSwappedAndMerged) {
  EXPECT_EQ(normalizedSpans({}), std::vector<PortSpan>{});
  EXPECT_EQ(normalizedSpans({{500, 400}, {10, 20}, {21, 30}, {25, 26}, {40, 50}, {45, 60}}),
            (std::vector<PortSpan>{{10, 30}, {40, 60}, {400, 500}}));
  EXPECT_EQ(normalizedSpans({{65535, 65535}, {0, 0}, {65534, 65534}}),
            (std::vector<PortSpan>{{0, 0}, {65534, 65535}}));
  EXPECT_EQ(normalizedSpans({{0, 65535}, {80, 80}}), (std::vector<PortSpan>{{0, 65535}}));
}

TEST(PortFilterTest, NoProgramWhenNothingWouldBeFilteredOrTooManySpans) {
  EXPECT_TRUE(buildPortFilter({}).empty());
  EXPECT_TRUE(buildPortFilter(std::vector<PortSpan>{{0, 65535}}).empty());
  EXPECT_TRUE(buildPortFilter(std::vector<PortSpan>{{0, 30000}, {30001, 65535}}).empty());
  std::vector<PortSpan> many;
  for (uint16_t i = 0; i < kMaxFilterSpans + 1; ++i)
    many.push_back({uint16_t(i * 3), uint16_t(i * 3)});
  EXPECT_TRUE(buildPortFilter(many).empty());
  many.pop_back();
  expectFilterOf(many);
}

TEST(PortFilterTest, AcceptsExactlyTheSpansAtTheEdgesOfThePortSpace) {
  expectFilterOf({{0, 0}});
  expectFilterOf({{65535, 65535}});
  expectFilterOf({{0, 100}, {65000, 65535}});
  expectFilterOf({{30000, 32767}});
  expectFilterOf({{1, 65535}});
  expectFilterOf({{80, 80}, {443, 443}, {8080, 8080}});
}

TEST(PortFilterTest, AcceptsExactlyTheSpansOfRandomPools) {
  std::mt19937 rng(7);
  for (int round = 0; round < 25; ++round) {
    std::vector<PortSpan> spans;
    const int count = 1 + static_cast<int>(rng() % 12);
    for (int i = 0; i < count; ++i) {
      const auto first = static_cast<uint16_t>(rng());
      const auto width = static_cast<uint16_t>(rng() % (i % 3 == 0 ? 2000 : 3));
      spans.push_back({first, static_cast<uint16_t>(std::min<uint32_t>(65535, first + width))});
    }
    SCOPED_TRACE("round " + std::to_string(round));
    expectFilterOf(spans);
  }
}

/// The request's netlink header and the bytecode attribute after `requestSize` bytes of body.
void expectCarriesFilter(const std::vector<std::byte>& request, std::size_t requestSize,
                         const std::vector<std::byte>& program) {
  nlmsghdr header{};
  std::memcpy(&header, request.data(), sizeof(header));
  ASSERT_EQ(header.nlmsg_len, request.size());
  const std::size_t at = NLMSG_LENGTH(requestSize);
  ASSERT_EQ(request.size(), at + NLA_HDRLEN + NLA_ALIGN(program.size()));
  nlattr attribute{};
  std::memcpy(&attribute, request.data() + at, sizeof(attribute));
  EXPECT_EQ(attribute.nla_type, INET_DIAG_REQ_BYTECODE);
  EXPECT_EQ(attribute.nla_len, NLA_HDRLEN + program.size());
  EXPECT_EQ(std::memcmp(request.data() + at + NLA_HDRLEN, program.data(), program.size()), 0);
}

TEST(PortFilterTest, DumpRequestCarriesTheProgramAsBytecodeAttribute) {
  const auto program = buildPortFilter(std::vector<PortSpan>{{40000, 40999}, {43000, 43000}});
  const auto request = buildSockDiagDump(Family::kIPv6, Protocol::kUdp, 0xffffffff, program);
  expectCarriesFilter(request, sizeof(inet_diag_req_v2), program);
  inet_diag_req_v2 body{};
  std::memcpy(&body, request.data() + NLMSG_HDRLEN, sizeof(body));
  EXPECT_EQ(body.sdiag_family, AF_INET6);
  EXPECT_EQ(body.sdiag_protocol, IPPROTO_UDP);
  EXPECT_EQ(buildSockDiagDump(Family::kIPv6, Protocol::kUdp, 0xffffffff, {}).size(),
            NLMSG_LENGTH(sizeof(inet_diag_req_v2)));
}

TEST(PortFilterTest, TcpDumpOfBothFamiliesUsesTheCompatRequest) {
  const uint32_t states = boundStateMask(Protocol::kTcp);
  const auto plain = buildTcpDumpBothFamilies(states);
  nlmsghdr header{};
  std::memcpy(&header, plain.data(), sizeof(header));
  EXPECT_EQ(header.nlmsg_type, TCPDIAG_GETSOCK);
  EXPECT_EQ(header.nlmsg_flags, NLM_F_REQUEST | NLM_F_DUMP);
  ASSERT_EQ(plain.size(), NLMSG_LENGTH(sizeof(inet_diag_req)));
  inet_diag_req body{};
  std::memcpy(&body, plain.data() + NLMSG_HDRLEN, sizeof(body));
  EXPECT_EQ(body.idiag_states, states);
  EXPECT_EQ(body.idiag_ext, 0);

  const auto program = buildPortFilter(std::vector<PortSpan>{{30000, 30009}});
  expectCarriesFilter(buildTcpDumpBothFamilies(states, program), sizeof(inet_diag_req), program);
}

}  // namespace
}  // namespace hostport::hostnet
