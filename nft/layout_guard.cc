#include "nft/layout_guard.h"

#include <linux/netlink.h>

#include <cerrno>

#include "hostnet/netlink_socket.h"
#include "nft/table_layout.h"

namespace hostport::nft {
namespace {

constexpr std::string_view kFixedChains[] = {"hostports", "prerouting", "output", "postrouting"};

void appendText(ByteString& out, std::string_view text) {
  for (const char c : text) out.push_back(std::byte(c));
  out.push_back(std::byte{0});
}

void appendSized(ByteString& out, const ByteString& bytes) {
  const auto size = static_cast<uint32_t>(bytes.size());
  for (int shift = 24; shift >= 0; shift -= 8) out.push_back(std::byte(size >> shift));
  out.insert(out.end(), bytes.begin(), bytes.end());
}

}  // namespace

Result<ByteString> layoutFingerprint() {
  auto socket = hostnet::NetlinkSocket::open(NETLINK_NETFILTER);
  if (!socket) return std::unexpected(socket.error());
  ByteString fingerprint;
  for (const Family family : {Family::kIPv4, Family::kIPv6}) {
    for (const std::string_view chain : kFixedChains) {
      appendText(fingerprint, std::string(nftFamily(family)) + " " + std::string(chain));
      ByteString request = ruleDumpRequest(family, chain);
      auto dumped =
          socket->requestAccepting(request, "listing chain " + std::string(chain), {ENOENT},
                                   [&](std::span<const std::byte> message) -> Result<void> {
                                     auto rule = parseRuleReply(message);
                                     if (!rule) return std::unexpected(rule.error());
                                     appendSized(fingerprint, rule->expressions);
                                     return {};
                                   });
      if (!dumped) return std::unexpected(dumped.error());
      if (*dumped == ENOENT) appendText(fingerprint, "missing");
    }
  }
  return fingerprint;
}

Result<LayoutCheck> LayoutGuard::check() {
  if (!expected_.empty()) {
    auto now = layoutFingerprint();
    if (!now) return std::unexpected(now.error());
    if (*now == expected_) return LayoutCheck::kIntact;
  }
  if (auto laid = ruleset_->ensureTables(); !laid) return std::unexpected(laid.error());
  auto laidOut = layoutFingerprint();
  if (!laidOut) return std::unexpected(laidOut.error());
  const bool first = expected_.empty();
  expected_ = std::move(*laidOut);
  return first ? LayoutCheck::kLaidOut : LayoutCheck::kRepaired;
}

}  // namespace hostport::nft
