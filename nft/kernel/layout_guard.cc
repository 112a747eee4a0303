#include "nft/kernel/layout_guard.h"

#include <linux/netlink.h>

#include <cerrno>

#include "netlink/socket.h"
#include "nft/kernel/nft_context.h"
#include "nft/table_layout.h"

namespace hostport::nft::kernel {
namespace {

void appendText(ByteString& out, std::string_view text) {
  for (const char c : text) out.push_back(std::byte(c));
  out.push_back(std::byte{0});
}

void appendSized(ByteString& out, const ByteString& bytes) {
  const auto size = static_cast<uint32_t>(bytes.size());
  for (int shift = 24; shift >= 0; shift -= 8) out.push_back(std::byte(size >> shift));
  out.insert(out.end(), bytes.begin(), bytes.end());
}

/// One read of every fixed chain; interrupted (EINTR) when a commit lands during a rule dump.
Result<ByteString> readFingerprint() {
  HOSTPORT_TRY(netlink::NetlinkSocket socket, netlink::NetlinkSocket::open(NETLINK_NETFILTER));
  ByteString fingerprint;
  for (const Family family : {Family::kIPv4, Family::kIPv6}) {
    for (const std::string_view chain : kFixedChains) {
      appendText(fingerprint, std::string(nftFamily(family)) + " " + std::string(chain));
      ByteString request = ruleDumpRequest(family, chain);
      const auto appendRule = [&](std::span<const std::byte> message) -> Result<void> {
        HOSTPORT_TRY(const RuleSummary rule, parseRuleReply(message));
        appendSized(fingerprint, rule.expressions);
        return {};
      };
      HOSTPORT_TRY(const int dumped,
                   socket.requestAccepting(request, "listing chain " + std::string(chain), {ENOENT},
                                           appendRule));
      if (dumped == ENOENT) appendText(fingerprint, "missing");
    }
  }
  return fingerprint;
}

}  // namespace

Result<ByteString> layoutFingerprint() {
  // The kernel marks a rule dump during which any transaction committed: under pod churn, ADDs
  // and DELs commit hundreds of times a second, and a check that gave up on the first would warn
  // (table.check_failed) at every few passes about nothing but traffic.
  constexpr int kAttempts = 5;
  for (int attempt = 1;; ++attempt) {
    auto fingerprint = readFingerprint();
    if (fingerprint || attempt == kAttempts || !isDumpInterrupted(fingerprint.error())) {
      return fingerprint;
    }
  }
}

Result<LayoutCheck> LayoutGuard::check() {
  if (!expected_.empty()) {
    HOSTPORT_TRY(const ByteString now, layoutFingerprint());
    if (now == expected_) return LayoutCheck::kIntact;
  }
  HOSTPORT_TRY_VOID(ruleset_->ensureTables());
  HOSTPORT_TRY(ByteString laidOut, layoutFingerprint());
  const bool first = expected_.empty();
  expected_ = std::move(laidOut);
  return first ? LayoutCheck::kLaidOut : LayoutCheck::kRepaired;
}

}  // namespace hostport::nft::kernel
