// Writes the binary seeds of tests/fuzz/corpus (journal, snapshot and the netlink replies), which
// cannot be typed by hand: `fuzz-seed-writer tests/fuzz/corpus`. The store's seeds come from its
// own encoders; the kernel's replies are built byte by byte from the ABI with the unit tests'
// helpers (tests/unit/netlink/netlink_test_bytes.h), as the parsers' unit tests build them.
// Run it again only to change the seeds; they are committed.

#include <arpa/inet.h>
#include <linux/inet_diag.h>
#include <linux/netfilter.h>
#include <linux/netfilter/nf_tables.h>
#include <linux/netfilter/nfnetlink.h>
#include <linux/netfilter/nfnetlink_conntrack.h>
#include <linux/sock_diag.h>
#include <netinet/in.h>

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>

#include "agent/store/journal_file.h"
#include "agent/store/lease_codec.h"
#include "agent/store/snapshot.h"
#include "hostnet/sock_diag_message.h"
#include "nft/element_messages.h"
#include "nft/set_element.h"
#include "tests/unit/netlink/netlink_test_bytes.h"

namespace {

namespace fs = std::filesystem;
namespace store = hostport::agent::store;
namespace nft = hostport::nft;
using namespace hostport::test;  // the byte builders
using hostport::IpAddress;
using hostport::IpPrefix;

fs::path corpus;

void write(const std::string& target, const std::string& name, std::string_view bytes) {
  fs::create_directories(corpus / target);
  std::ofstream(corpus / target / name, std::ios::binary).write(bytes.data(), bytes.size());
}

void write(const std::string& target, const std::string& name, const ByteVector& bytes) {
  write(target, name, std::string_view(reinterpret_cast<const char*>(bytes.data()), bytes.size()));
}

hostport::Lease sampleLease(std::string containerId, bool withForwarding) {
  hostport::Lease lease{.key = {std::move(containerId), "eth0"},
                        .pod = {"games", "server-0", "0b5e6c1a"},
                        .netns = "/var/run/netns/cni-1",
                        .pool = "default"};
  lease.ports.push_back({.name = "rtp",
                         .protocol = hostport::PortProtocol::kUdp,
                         .hostPort = 40000,
                         .containerPort = 20000,
                         .count = 4});
  lease.ports.push_back({.protocol = hostport::PortProtocol::kTcpUdp,
                         .hostPort = 8080,
                         .containerPort = 80,
                         .hostIp = IpAddress::parse("fd00::1").value(),
                         .isStatic = true});
  if (withForwarding) {
    lease.forwarding = hostport::Forwarding{.network = "kube",
                                            .podV4 = IpPrefix::parse("10.88.0.5/16").value(),
                                            .podV6 = IpPrefix::parse("fd00::5/64").value(),
                                            .snat = true,
                                            .conditionsV4 = "ip saddr 10.0.0.0/8"};
    lease.netnsId = {.device = 4, .inode = 4026532000};
    lease.sticky = false;
  }
  return lease;
}

std::string frameOf(const store::JournalRecord& record) {
  std::string payload;
  store::encodeRecord(record, payload).value();
  std::string frame;
  store::appendFrame(frame, payload);
  return frame;
}

void writeStoreSeeds() {
  const auto a = sampleLease("aaa", true);
  const auto b = sampleLease("bbb", false);
  const std::string grants = frameOf({store::JournalRecord::Kind::kGrant, a}) +
                             frameOf({store::JournalRecord::Kind::kGrant, b});
  const std::string release = frameOf({store::JournalRecord::Kind::kRelease, a});
  write("journal", "grant-grant-release", grants + release);
  write("journal", "torn-tail", grants + release.substr(0, release.size() / 2));
  write("snapshot", "two-leases",
        store::encodeSnapshot(7, {a, b},
                              {hostport::StickyEntry{"games", "server-0", "default", {a.ports[0]}}})
            .value());
  write("snapshot", "empty", store::encodeSnapshot(0, {}).value());
}

ByteVector nfgen(int family) { return bytesOf({family, NFNETLINK_V0, 0, 0}); }

void writeConntrackSeeds() {
  const uint16_t ctNew = (NFNL_SUBSYS_CTNETLINK << 8) | IPCTNL_MSG_CT_NEW;
  const auto tuple = [](const ByteVector& src, const ByteVector& dst, bool v6, uint16_t sport,
                        uint16_t dport) {
    return nest(CTA_TUPLE_ORIG,
                {nest(CTA_TUPLE_IP, {attr(v6 ? CTA_IP_V6_SRC : CTA_IP_V4_SRC, src),
                                     attr(v6 ? CTA_IP_V6_DST : CTA_IP_V4_DST, dst)}),
                 nest(CTA_TUPLE_PROTO, {attr(CTA_PROTO_NUM, bytesOf({IPPROTO_UDP})),
                                        attr(CTA_PROTO_SRC_PORT, be16(sport)),
                                        attr(CTA_PROTO_DST_PORT, be16(dport))})});
  };
  write("conntrack", "udp-v4-zone-id",
        message(ctNew, NLM_F_MULTI, nfgen(AF_INET),
                {tuple(bytesOf({10, 0, 0, 1}), bytesOf({10, 0, 0, 2}), false, 40000, 53),
                 attr(CTA_ZONE, be16(7)), attr(CTA_STATUS, be32(0x8)),
                 attr(CTA_ID, be32(0xdeadbeef))}));
  ByteVector v6(16);
  v6[0] = std::byte{0xfd};
  ByteVector v6b = v6;
  v6b[15] = std::byte{1};
  write("conntrack", "udp-v6",
        message(ctNew, NLM_F_MULTI, nfgen(AF_INET6),
                {tuple(v6, v6b, true, 5000, 7777), attr(CTA_ID, be32(17))}));
}

/// One inet_diag_msg reply; the first byte of the seed picks the protocol (sock_diag_fuzzer.cc).
void writeSockDiagSeed(const std::string& name, uint8_t protocolIndex, uint8_t family,
                       uint8_t state, uint16_t port) {
  inet_diag_msg diag{};
  diag.idiag_family = family;
  diag.idiag_state = state;
  diag.id.idiag_sport = htons(port);
  diag.id.idiag_src[0] = htonl(family == AF_INET ? 0x7f000001 : 0);
  diag.idiag_uid = 1000;
  diag.idiag_inode = 424242;
  ByteVector body(sizeof(diag));
  std::memcpy(body.data(), &diag, sizeof(diag));
  append(body, attr(INET_DIAG_SHUTDOWN, bytesOf({0})));
  append(body, attr(INET_DIAG_SKV6ONLY, bytesOf({1})));
  ByteVector seed = bytesOf({protocolIndex});
  append(seed, message(SOCK_DIAG_BY_FAMILY, NLM_F_MULTI, body));
  write("sock_diag", name, seed);
}

/// The NEWSETELEM messages of an element batch (the layout of a dump reply), each behind the
/// selector byte 0 of nft_reply_fuzzer.cc.
void writeElementSeeds() {
  const IpAddress pod = IpAddress::parse("10.88.0.5").value();
  const std::vector<nft::SetElement> elements = {
      nft::elementOf(nft::Forward{hostport::Protocol::kTcp, std::nullopt, 8080, pod, 80, ""},
                     "abc/eth0"),
      nft::elementOf(nft::Forward{hostport::Protocol::kUdp, IpAddress::parse("192.0.2.1").value(),
                                  5353, pod, 53, ""},
                     "abc/eth0"),
      nft::elementOf(nft::Masquerade{pod, nft::MasqueradeScope::kPodSubnet}, "abc/eth0"),
      nft::podSubnetElement(IpPrefix::parse("10.88.0.0/16").value()),
  };
  const nft::ByteString batch = nft::elementBatch(nft::ElementChange::kAdd, elements);
  int index = 0;
  for (std::size_t offset = 0; offset < batch.size();) {
    nlmsghdr header{};
    std::memcpy(&header, batch.data() + offset, sizeof(header));
    if (header.nlmsg_type >> 8 == NFNL_SUBSYS_NFTABLES) {
      ByteVector seed = bytesOf({0});
      seed.insert(seed.end(), batch.begin() + offset, batch.begin() + offset + header.nlmsg_len);
      write("nft_reply", "elements-" + std::to_string(index++), seed);
    }
    offset += NLMSG_ALIGN(header.nlmsg_len);
  }
  const uint16_t newGen = (NFNL_SUBSYS_NFTABLES << 8) | NFT_MSG_NEWGEN;
  ByteVector generation = bytesOf({2});
  append(generation, message(newGen, 0, nfgen(AF_UNSPEC),
                             {attr(NFTA_GEN_ID, be32(42)), attr(NFTA_GEN_PROC_PID, be32(7))}));
  write("nft_reply", "generation", generation);
  const uint16_t delTable = (NFNL_SUBSYS_NFTABLES << 8) | NFT_MSG_DELTABLE;
  ByteVector notification = bytesOf({3});
  append(notification,
         message(delTable, 0, nfgen(NFPROTO_IPV4),
                 {attr(NFTA_TABLE_NAME, bytesOf({'h', 'o', 's', 't', 'p', 'o', 'r', 't', 0}))}));
  write("nft_reply", "table-deleted", notification);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: fuzz-seed-writer CORPUS_DIR\n");
    return 2;
  }
  corpus = argv[1];
  writeStoreSeeds();
  writeConntrackSeeds();
  writeSockDiagSeed("tcp-v4-listener", 0, AF_INET, hostport::hostnet::kTcpListen, 8080);
  writeSockDiagSeed("udp-v6", 1, AF_INET6, hostport::hostnet::kTcpClose, 5353);
  writeElementSeeds();
  return 0;
}
